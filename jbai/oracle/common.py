"""What the oracle modules share: input dtype, batching, tie-safe means, and the KL's slope.

`jbai.oracle.exact`, `jbai.oracle.warm`, `jbai.oracle.eps`, `jbai.oracle.eps_warm`
and `jbai.oracle.projected` solve one [K] instance at a time and apply it over the
leading axes of the means (`batched`); they replace an instance whose best arm is
tied by a well-posed one (`safe_means`) and report the tie convention of
`jbai.oracle.exact`; their bisections run `default_iters` steps; their implicit
derivatives are taken 4 ulp inside the finite ends of Theta (`interior`).
"""

import math
from typing import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.families.base import Family


def default_iters(dtype) -> int:
  """Bisection steps: one bit of the mantissa per step, and 12 to spare."""
  return int(jnp.finfo(dtype).nmant) + 12


def as_float(means: ArrayLike) -> jax.Array:
  """The means as an array of a floating dtype (the default one for integers)."""
  means = jnp.asarray(means)
  if not jnp.issubdtype(means.dtype, jnp.floating):
    means = means.astype(jnp.zeros(()).dtype)
  return means


def batched(fn: Callable, means: jax.Array, *args):
  """Applies fn, written for one [K] instance, over the leading axes of means.

  Each extra argument has shape lead + (its per-instance shape), where lead =
  means.shape[:-1].
  """
  lead = means.shape[:-1]
  size = math.prod(lead)
  flat = [v.reshape((size,) + v.shape[len(lead):]) for v in (means, *args)]
  out = jax.vmap(fn)(*flat)
  return jax.tree.map(lambda v: v.reshape(lead + v.shape[1:]), out)


def safe_means(family: Family, means: jax.Array):
  """Replaces an instance with a tie for the best arm by a well-posed one.

  Returns:
    (means to compute with, tie flag [] bool, tied-with-best mask [K] bool).
  """
  k = means.shape[-1]
  a = jnp.argmax(means)
  tied = (means >= means[a]) | (family.kl(means[a], means) <= 0)
  tie = jnp.sum(tied) > 1
  spread = jnp.linspace(0.75, 0.25, k, dtype=means.dtype)
  fallback = family.lo + (family.hi - family.lo) * spread
  return jnp.where(tie, fallback, means), tie, tied


def interior(family: Family, means: jax.Array) -> jax.Array:
  """The means moved 4 ulp inside the finite ends of Theta.

  At an end of Theta the partial derivatives of the KL in its arguments are
  infinite (Bernoulli: d/dmu KL(mu, m) = log(mu (1 - m) / (m (1 - mu))) at mu = 1),
  and an infinite entry of the implicit system makes every arm's derivative NaN.
  The derivatives are those 4 ulp inside instead: finite, and since the KL's
  derivatives grow like log(1/distance) they differ from the one-sided limit only
  by that (an infinite one-sided derivative is reported as a large finite one).
  """
  eps = 4 * jnp.finfo(means.dtype).eps
  lo, hi = float(family.lo), float(family.hi)
  if math.isfinite(lo):
    means = jnp.maximum(means, lo + eps * max(1.0, abs(lo)))
  if math.isfinite(hi):
    means = jnp.minimum(means, hi - eps * max(1.0, abs(hi)))
  return means


def kl_slope(family: Family, p, m):
  """d/dm KL(p, m), elementwise."""
  return jax.jvp(lambda q: family.kl(p, q), (m,), (jnp.ones_like(m),))[1]


__all__ = ["as_float", "batched", "default_iters", "interior", "kl_slope", "safe_means"]
