"""Stopping thresholds of the linear model's GLLR, `linear-sn` (proven) and its heuristic.

With V_t = lambda I + sum_s x x^T / sigma^2 the weighted design of the linear model
(`jbai.linear.statistics`; the linear family of `jbai.linear.family` rebuilds it
from the counts, V_t = lambda I + X^T diag(N_t / sigma^2) X):

  * `self_normalized` (proven for the linear model with a ridge): Abbasi-Yadkori,
    Pal & Szepesvari (2011), Theorem 1, bounds the self-normalised noise
    ||S_t||_{V_t^-1} <= sqrt(2 log(1/delta) + log(det V_t / lambda^d)) for all t at
    once, with probability 1 - delta, for 1-sub-Gaussian noise after the 1/sigma
    weighting. Then ||theta_hat - theta||_{V_t} <= that + sqrt(lambda) S for
    ||theta||_2 <= S, and a wrong answer needs theta in its alternative, whose GLLR
    is at most (1/2) ||theta_hat - theta||^2_{V_t}. So

      beta(t, delta) = (1/2) (sqrt(2 log(1/delta) + log(det V_t / lambda^d)) + sqrt(lambda) S)^2

    makes the GLLR stop delta-correct for every question and any sampling rule, with
    no union bound over pieces (the bound holds for theta itself). It needs
    lambda > 0 and a bound S on ||theta||_2 (`theta_bound`). Jedra & Proutiere
    (2020) and Degenne et al. (2020) prove thresholds of the same log det form
    (other constants; their exact constants are not transcribed here).
  * `heuristic`: log((1 + log t) / delta), the threshold of the experiments of
    Degenne et al. (2020), of FWS (Wang, Tzeng & Proutiere 2021, `linear/`) and of
    LinBAI.jl. Not proven delta-correct for the linear model (nor for independent
    arms). It is `gk16`'s formula, so that the registered threshold `gk16` is the
    linear literature's heuristic on the linear family, and the default there.

`linear_sn(theta_bound)` is the registered threshold `linear-sn`, for the linear
family only (`jbai.thresholds.base.refusal`).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.builders import cached
from jbai.thresholds.base import Threshold, log_inv_delta

NAME = "linear-sn"


def self_normalized(log_det_ratio: ArrayLike, delta: ArrayLike, ridge: ArrayLike,
                    theta_bound: ArrayLike) -> jax.Array:
  """Abbasi-Yadkori et al. (2011)'s threshold (module docstring), proven.

  Args:
    log_det_ratio: log det V_t - d log lambda (`jbai.linear.statistics.log_det_ratio`).
    delta: the confidence, in (0, 1).
    ridge: lambda > 0.
    theta_bound: S >= ||theta||_2.

  Returns:
    beta(t, delta), [] float (or broadcast).

  Example:
    >>> round(float(self_normalized(0.0, 0.01, 1.0, 0.0)), 4)  # log(1/delta)
    4.6052
  """
  return _radius_threshold(log_det_ratio, jnp.log(1 / jnp.asarray(delta)), ridge, theta_bound)


def _radius_threshold(log_det_ratio, log_inv_delta_, ridge, theta_bound):
  radius = jnp.sqrt(2 * log_inv_delta_ + jnp.asarray(log_det_ratio))
  return 0.5 * (radius + jnp.sqrt(jnp.asarray(ridge)) * jnp.asarray(theta_bound)) ** 2


def heuristic(t: ArrayLike, delta: ArrayLike) -> jax.Array:
  """log((1 + log t) / delta): the linear literature's experimental threshold
  (not proven; module docstring).

  Args:
    t: rewards so far, >= 1.
    delta: the confidence, in (0, 1).

  Returns:
    beta(t, delta), [] float (or broadcast).

  Example:
    >>> round(float(heuristic(1, 0.1)), 4)
    2.3026
  """
  t = jnp.maximum(jnp.asarray(t, jnp.zeros(()).dtype), 1)
  return jnp.log((1 + jnp.log(t)) / jnp.asarray(delta))


def linear_model(family) -> bool:
  """True for a family that carries linear arms (`jbai.linear.linear_family`)."""
  return family.name == "linear" and "features" in dict(family.params)


def _init(delta, num_arms):
  del num_arms
  return {"log_inv_delta": log_inv_delta(delta)}


@cached
def linear_sn(theta_bound: float = 1.0) -> Threshold:
  """The self-normalised threshold of Abbasi-Yadkori et al. (2011) on the linear
  family's GLLR (module docstring), proven delta-correct for ||theta||_2 <= S.

  Args:
    theta_bound: S, a bound on ||theta||_2 that the user asserts.

  Returns:
    The threshold `linear-sn`.
  """
  if isinstance(theta_bound, bool) or not np.isfinite(theta_bound) or not theta_bound >= 0:
    raise ValueError(f"theta_bound must be a finite number >= 0, got {theta_bound!r}")
  bound = float(theta_bound)

  def value(params, family, arm_stats, top, ch):
    del top, ch
    p = dict(family.params)
    log_inv = params["log_inv_delta"]
    x = jnp.asarray(np.asarray(p["features"], np.float64), log_inv.dtype)
    ridge, var = p["ridge"], p["sigma"] ** 2
    n = arm_stats.counts.astype(x.dtype) / var
    v = ridge * jnp.eye(x.shape[1], dtype=x.dtype) + jnp.einsum("ka,k,kb->ab", x, n, x)
    ratio = jnp.linalg.slogdet(v)[1] - x.shape[1] * jnp.log(jnp.asarray(ridge, x.dtype))
    return _radius_threshold(ratio, log_inv, ridge, bound)

  return Threshold(NAME, _init, value, (("theta_bound", bound),))


__all__ = ["NAME", "heuristic", "linear_model", "linear_sn", "self_normalized"]
