"""What a trial keeps of Gaussian arms whose variances are unknown, and what it reads from it.

Per arm the trial keeps its count n and the summed statistics (sum x, sum x^2), the
[K, 2] rows of `jbai.state.ArmStats.stats` (`stat(x) = (x, x^2)`, so that
`stats[..., 0]` is the sum of the rewards, as for every family). From them:

  mean   mu_hat = sum x / n,
  var    sigma_hat^2 = sum x^2 / n - mu_hat^2,

the maximum-likelihood estimates of the Gaussian model with unknown mean and
variance (the "empirical variance" of Jourdan, Degenne & Kaufmann, ALT 2023,
arXiv 2210.00974: the biased one, divided by n, not by n - 1).

Degenerate arms (the zero-variance policy):

* n < 2: one reward says nothing of the spread. The variance is +inf, so that the
  arm's precision n / sigma_hat^2 is 0 and every GLR or transport cost that
  involves it is 0 (no evidence): a stop cannot fire before each arm of the pair
  has two rewards, which is also what the thresholds need
  (`jbai.thresholds.variance`).
* n >= 2 and every reward equal (sigma_hat^2 = 0, or below 0 by rounding): the
  variance is floored at `max(var_floor, tiny)`, with `var_floor` >= 0 the
  caller's floor (in the rewards' units squared) and tiny = sqrt of the dtype's
  smallest normal number (1e-19 in float32, 1.5e-154 in float64). Every
  statistic is then finite (no NaN, no inf). A floor only raises variances, which
  lowers both GLRs (each decreases in every sigma_hat^2): the stop fires later,
  never earlier, so a floor keeps the thresholds' delta-correctness. With the
  default floor 0 an arm whose rewards are all equal looks nearly exact and its
  pairs' GLRs are huge: right for a truly constant arm, and a possible early
  stop for rewards on a coarse grid (set a floor of the grid's scale then).

Numerics: sum x^2 / n - mu_hat^2 cancels when |mu| >> sigma (float32 keeps
about 7 digits of sum x^2 / n): centre the rewards near their scale's origin
before they are summed, or run in float64 (docs/design/variance.md).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.families.base import tiny

STAT_DIM = 2  # (sum x, sum x^2) per arm


class Moments(NamedTuple):
  """The estimates a trial reads from its statistics."""

  mean: jax.Array  # [..., K] float, mu_hat (0 where n = 0)
  var: jax.Array   # [..., K] float, sigma_hat^2 floored, +inf where n < 2


def stat(x: ArrayLike) -> jax.Array:
  """[..., 2] the statistics of one reward x: (x, x^2).

  Example:
    >>> [float(v) for v in stat(3.0)]
    [3.0, 9.0]
  """
  x = jnp.asarray(x) * 1.0
  return jnp.stack([x, x * x], axis=-1)


def check_floor(var_floor) -> float:
  """The variance floor as a float, or ValueError naming a bad one (a negative or
  non-finite floor). Traced floors pass unchecked."""
  if isinstance(var_floor, jax.core.Tracer):
    return var_floor
  value = float(var_floor)
  if not (value >= 0 and value < float("inf")):
    raise ValueError(f"var_floor must be a finite number >= 0, got {var_floor!r}")
  return value


def moments(counts: ArrayLike, stats: ArrayLike, var_floor: ArrayLike = 0.0) -> Moments:
  """The empirical means and variances of the module docstring, with its
  zero-variance policy.

  Args:
    counts: [..., K] counts n (integers or floats).
    stats: [..., K, 2] summed statistics (sum x, sum x^2).
    var_floor: floor >= 0 on the variance of an arm with n >= 2 (broadcasts
      against [..., K]).

  Returns:
    Moments(mean, var), each [..., K] in the float dtype of `stats`.

  Example:
    >>> m = moments(jnp.array([2, 1]), jnp.array([[3.0, 5.0], [1.0, 1.0]]))
    >>> float(m.mean[0]), float(m.var[0]), float(m.var[1])
    (1.5, 0.25, inf)
  """
  stats = jnp.asarray(stats) * 1.0
  n = jnp.asarray(counts).astype(stats.dtype)
  safe_n = jnp.maximum(n, 1)
  mean = jnp.where(n > 0, stats[..., 0] / safe_n, 0.0)
  raw = stats[..., 1] / safe_n - mean * mean
  floor = jnp.maximum(jnp.asarray(var_floor, stats.dtype), tiny(stats))
  var = jnp.where(n >= 2, jnp.maximum(raw, floor), jnp.inf)
  return Moments(mean=mean, var=var)


def precision(w: ArrayLike, var: ArrayLike) -> jax.Array:
  """w / var, elementwise: 0 where w = 0 or var = +inf (no evidence), never NaN.

  Args:
    w: [...] weights or counts >= 0.
    var: [...] variances in (0, +inf].

  Returns:
    [...] the precisions.
  """
  w = jnp.asarray(w) * 1.0
  var = jnp.asarray(var) * 1.0
  finite = jnp.isfinite(var) & (w > 0)
  return jnp.where(finite, w / jnp.where(finite, var, 1.0), 0.0)


__all__ = ["Moments", "STAT_DIM", "check_floor", "moments", "precision", "stat"]
