"""One instance of the eps-good oracle's problem, in the coordinates of the minimisers.

What `jbai.oracle.eps` (nested bisection) and `jbai.oracle.eps_warm` (Newton steps)
both solve, with a the answer (argmax mu): the brackets (m_lo_i, m_hi) of the
minimisers m_i, the range [y_min, y_max) of the common pair cost y, the weight
x_i(m) whose minimiser is m, and the pair cost g_i = d(mu_a, m) + x d(mu_i, m + eps)
(`jbai.oracle.eps`'s module docstring has the construction). Gaussian arms with a
known sigma take the closed forms (`is_gaussian`).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.families.base import Family
from jbai.oracle.common import kl_slope


def is_gaussian(family: Family) -> bool:
  """Gaussian arms of a known sigma: the closed forms of the pieces, no search."""
  return family.name == "gaussian" and "sigma" in dict(family.params)


class EpsProblem(NamedTuple):
  """One instance: the answer a and the brackets of the searches (a plain Python
  argument of the solver's functions while they trace, not a pytree)."""

  family: Family
  means: jax.Array   # [K] the means (tie-safe at eps = 0)
  eps: jax.Array     # [] the slack
  is_a: jax.Array    # [K] bool, the answer a
  mu_a: jax.Array    # [] mu_a
  m_lo: jax.Array    # [K] max(mu_i - eps, lo), the lower end of m_i
  m_hi: jax.Array    # [] min(mu_a, hi - eps), the upper end of every m_i
  y_min: jax.Array   # [] d(mu_a, m_hi)
  y_max: jax.Array   # [] min_{i != a} d(mu_a, mu_i - eps), inf where some mu_i - eps < lo


def eps_problem(family: Family, means: jax.Array, eps: jax.Array) -> EpsProblem:
  """The instance at `means` [K] with slack eps, answering a = argmax(means)."""
  k = means.shape[-1]
  a = jnp.argmax(means)
  is_a = jnp.arange(k) == a
  mu_a = means[a]
  lo, hi = float(family.lo), float(family.hi)
  if is_gaussian(family):  # the closed form ignores Theta, as the eps-GLLR's does
    m_lo, m_hi = means - eps, mu_a
  else:
    m_lo, m_hi = jnp.maximum(means - eps, lo), jnp.minimum(mu_a, hi - eps)
  y_min = family.kl(mu_a, m_hi)
  inside = means - eps >= m_lo
  d_max = jnp.where(inside, family.kl(mu_a, jnp.where(inside, means - eps, mu_a)), jnp.inf)
  y_max = jnp.min(jnp.where(is_a, jnp.inf, d_max))
  return EpsProblem(family, means, eps, is_a, mu_a, m_lo, m_hi, y_min, y_max)


def x_of_m(p: EpsProblem, m):
  """x(m) = -d_m d(mu_a, m) / d_m d(mu_i, m + eps): the weight whose minimiser is m
  (inf at m = mu_i - eps; 0 where the slope at m + eps > mu_i is not positive: the
  end hi of Theta, which the KL clips, as m = hi - eps rounds to in float32)."""
  num = -kl_slope(p.family, p.mu_a, m)
  den = kl_slope(p.family, p.means, m + p.eps)
  return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0),
                   jnp.where(m + p.eps > p.means, 0.0, jnp.inf))


def g_of(p: EpsProblem, x, m):
  """d(mu_a, m) + x d(mu_i, m + eps), with 0 * inf = 0."""
  kl_i = p.family.kl(p.means, m + p.eps)
  return p.family.kl(p.mu_a, m) + jnp.where(x > 0, x * kl_i, 0.0)


def is_saturated(p: EpsProblem) -> jax.Array:
  """[] bool: some arm i != a has an empty bracket, m_lo_i >= m_hi (mu_i = mu_a = hi
  with eps > 0, say Bernoulli arms at 1): its pair cost is w_a y_min whatever w_i,
  so Gamma_eps = y_min at w = the answer's vertex (the code's special case)."""
  return jnp.any(~p.is_a & (p.m_lo >= p.m_hi))


__all__ = ["EpsProblem", "eps_problem", "g_of", "is_gaussian", "is_saturated", "x_of_m"]
