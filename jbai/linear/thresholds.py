"""Stopping thresholds beta(t, delta) for the linear GLLR, and which are proven.

Stop when the GLLR of `jbai.linear.gllr` exceeds beta(t, delta).

  * `self_normalized` (proven for the linear model with a ridge): Abbasi-Yadkori,
    Pal & Szepesvari (2011), Theorem 1, bounds the self-normalised noise
    ||S_t||_{V_t^-1} <= sqrt(2 log(1/delta) + log(det V_t / lambda^d)) for all t at
    once, with probability 1 - delta, for 1-sub-Gaussian noise after the 1/sigma
    weighting of `jbai.linear.statistics`. Then ||theta_hat - theta||_{V_t} <=
    that + sqrt(lambda) S for ||theta||_2 <= S, and a wrong answer needs theta in its
    alternative, whose GLLR is at most (1/2) ||theta_hat - theta||^2_{V_t}. So

      beta(t, delta) = (1/2) (sqrt(2 log(1/delta) + log(det V_t / lambda^d)) + sqrt(lambda) S)^2

    makes the GLLR stop delta-correct for every question of `jbai.linear.gllr`
    and any sampling rule. It needs lambda > 0 and a bound S on ||theta||_2.
    Jedra & Proutiere (2020) and Degenne et al. (2020) prove
    thresholds of the same log det form (with other constants and, in Jedra &
    Proutiere, no ridge after a spanning initialisation); their exact constants were
    not transcribed in this sitting.
  * `heuristic`: log((1 + log t) / delta), the threshold the experiments of
    Degenne et al. (2020), of FWS (Wang, Tzeng & Proutiere 2021, `linear/`) and of
    LinBAI.jl use. Not proven delta-correct for the linear model (nor for
    independent arms); it is the field's practice for comparisons.
"""

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


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
  radius = jnp.sqrt(2 * jnp.log(1 / jnp.asarray(delta)) + jnp.asarray(log_det_ratio))
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


__all__ = ["heuristic", "self_normalized"]
