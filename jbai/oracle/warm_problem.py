"""One instance of the lower-bound problem in the coordinates of the warm-started oracle.

`jbai.oracle.warm` solves the conditions G_i(u_i) = y (i != a) and Phi = 0 of its
module docstring in the weights u_i = x_i / (1 + x_i) of the arms i != a against the
best arm a and s = logit(y / y_max). This module holds what its solvers evaluate:
the instance (`warm_problem`: the tie-safe means, a, D_i = KL(mu_a, mu_i), y_max
and the solvers' tolerances), the first guess u_i = q_i v y_max / D_i of a
scale-free start (`guess`, and `to_q` back), the transport points m_i of the
weights (1 - u_i, u_i) with the two KLs there (`evaluate`), and F = sum_i r_i,
r_i = KL(mu_a, m_i) / KL(mu_i, m_i), with dr_i/du_i through the stationarity of
m_i (`ratios`; derivatives of the family's KL by autodiff, so any family works).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.families.base import Family, weighted_mean
from jbai.oracle.common import kl_slope, safe_means
from jbai.transport import transport_cost


def _kl_derivatives(family: Family, p, m):
  """(d/dm, d2/dm2) of KL(p, m), elementwise."""
  return jax.jvp(lambda q: kl_slope(family, p, q), (m,), (jnp.ones_like(m),))


class WarmProblem(NamedTuple):
  """One instance of the lower-bound problem, and the tolerances of its solvers.

  Not a pytree that crosses a JAX boundary: the solvers' functions take it as a
  plain Python argument while they trace.
  """

  family: Family
  max_iters: int     # cap on the steps of each safeguarded loop
  safe: jax.Array    # [K] the means, tie-safe (`safe_means`)
  is_a: jax.Array    # [K] bool, the best arm a
  others: jax.Array  # [K] bool, the arms i != a
  mu_a: jax.Array    # [] mu_a
  d: jax.Array       # [K] D_i = KL(mu_a, mu_i) (1 at a)
  y_max: jax.Array   # [] min_{i != a} D_i
  eps: float         # the dtype's machine epsilon
  tol: float         # relative residual: 6e-6 in float32, 2e-12 in float64
  accept: float      # a Newton step from a residual below this squares it
  noise: float       # below this, a step that does not halve the residual is noise


def guess(p: WarmProblem, q, v):
  """u_i = q_i y / D_i with y = v y_max, inside (0, 1)."""
  u = q * v * p.y_max / p.d
  return jnp.where(p.is_a, 0.5, jnp.clip(u, p.eps, 1 - p.eps))


def to_q(p: WarmProblem, u, v):
  """The scale-free start q_i = u_i D_i / y of a solution (u, v)."""
  return jnp.where(p.others, u * p.d / (v * p.y_max), 1.0)


def evaluate(p: WarmProblem, u):
  """The transport point m_i of the weights (1 - u_i, u_i), and the two KLs there."""
  family = p.family
  m = transport_cost(family, 1 - u, p.mu_a, u, p.safe).x
  return m, family.kl(p.mu_a, m), family.kl(p.safe, m)


def ratios(p: WarmProblem, u, m, kl_a, kl_i):
  """(F, dr_i/du_i, KL(mu_a, m_i), KL(mu_i, m_i)), r_i = KL(mu_a, m_i) / KL(mu_i, m_i),
  F = sum_i r_i."""
  family, mu_a, safe = p.family, p.mu_a, p.safe
  if family.transport_x is weighted_mean:  # m = (1 - u) mu_a + u mu_i
    da1, di1 = kl_slope(family, mu_a, m), kl_slope(family, safe, m)
    dm_du = safe - mu_a
  else:  # from the stationarity of m: (1 - u) d_m KL(mu_a, m) + u d_m KL(mu_i, m) = 0
    da1, da2 = _kl_derivatives(family, mu_a, m)
    di1, di2 = _kl_derivatives(family, safe, m)
    curvature = (1 - u) * da2 + u * di2
    dm_du = -(di1 - da1) / curvature
    if family.transport_x is None:
      # Golden section finds m to sqrt(eps) only (it compares values near a
      # minimum), and the ratios are first-order sensitive to m: one Newton
      # step on the stationarity condition brings m to rounding accuracy.
      m = m - ((1 - u) * da1 + u * di1) / curvature
      kl_a, kl_i = family.kl(mu_a, m), family.kl(safe, m)
  kl_i = jnp.where(p.others, jnp.maximum(kl_i, jnp.finfo(safe.dtype).tiny), 1.0)
  f = jnp.sum(jnp.where(p.others, kl_a / kl_i, 0.0))
  dr_du = jnp.where(p.others, (da1 * kl_i - kl_a * di1) / kl_i ** 2 * dm_du, 0.0)
  return f, dr_du, kl_a, kl_i


def warm_problem(family: Family, max_iters: int, means):
  """(problem, a, tie, tied): the instance at `means` [K], its best arm a, and
  `safe_means`' tie flag and tied arms."""
  k = means.shape[-1]
  dtype = means.dtype
  eps = jnp.finfo(dtype).eps
  safe, tie, tied = safe_means(family, means)
  a = jnp.argmax(safe).astype(jnp.int32)
  is_a = jnp.arange(k) == a
  mu_a = safe[a]
  d = jnp.where(is_a, 1.0, family.kl(mu_a, safe))
  y_max = jnp.min(jnp.where(is_a, jnp.inf, d))
  problem = WarmProblem(family=family, max_iters=max_iters, safe=safe, is_a=is_a,
                        others=~is_a, mu_a=mu_a, d=d, y_max=y_max, eps=eps,
                        tol=eps ** 0.75, accept=eps ** 0.5, noise=eps ** 0.25)
  return problem, a, tie, tied


__all__ = ["WarmProblem", "evaluate", "guess", "ratios", "to_q", "warm_problem"]
