"""Warm-started eps oracle: w*_eps(nu) by a few Newton steps from the last solution.

The eps version of `jbai.oracle.warm` for Track-and-Stop on eps-good answers
(`jbai.rules.tas_eps`): the rule solves the eps problem at means that moved by
O(1/t) since its last step, so it starts from the last step's iterate, kept in
its state as an `EpsWarmStart`, and takes a fixed number of Newton steps
(`newton_steps`, straight-line code with no loop, each lane masked once it has
converged), so that a step costs the same in every lane; `jbai.oracle.eps_solve`
(nested bisection) stays the reference.

The conditions are those of `jbai.oracle.eps` in the minimisers' coordinates:
with a the answer (argmax mu), for every other arm i the minimiser m_i in
(m_lo_i, m_hi) = (max(mu_i - eps, lo), min(mu_a, hi - eps)) gives the weight
x_i(m_i) = -d_m d(mu_a, m_i) / d_m d(mu_i, m_i + eps) and the pair cost
g_i(m_i) = d(mu_a, m_i) + x_i d(mu_i, m_i + eps) in closed form, and

  g_i(m_i) = y for every i != a,   Phi = log sum_{i != a} d(mu_a, m_i) / d(mu_i, m_i + eps) = 0.

The unknowns are the fractions c_i in (0, 1) of the brackets, m_i = m_lo_i +
c_i (m_hi - m_lo_i), and y. Each g_i depends on c_i alone and Phi on every c_i,
so the Jacobian is an arrow and a Newton step costs one evaluation of the pair
costs and their derivatives (by autodiff, any family) and O(K), as in
`jbai.oracle.warm`; no transport point is searched (warm.py's u_i needs one
where the family has no closed form; the m_i need none). A step is damped far
from the solution: c_i moves at most halfway to 0 or 1, and y - y_min by a
factor 2 at most. Then w = x / sum(x), x_a = 1.

The start is scale-free: it keeps the c_i (y follows from them: the mean of the
g_i(m_i), which is y at the solution). It is discarded when the answer changes,
or after a step that is not finite (cold start: c_i = sqrt(K - 1) / (1 +
sqrt(K - 1)), the solution for K - 1 equal Gaussian arms).

Degenerate instances follow `eps_solve` and leave the start unchanged: eps = 0
with a tie for the best arm (w uniform over the tied arms, Gamma = 0), and an
arm i != a with an empty bracket (mu_i = mu_a = hi, Bernoulli arms at 1: w the
answer's vertex, Gamma = y_min). A lane whose step is not finite gets the
uniform allocation, Gamma = 0 and a cold start. Not handled here (use
`eps_solve`): a minimiser stopped at lo (mu_i - eps < lo for a family whose
divergence has a finite slope there: the exponential and Weibull families'
lo > 0), where the solution leaves these coordinates. Not differentiable (use
`eps_solve` for derivatives).
"""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.families.base import Family
from jbai.oracle.common import as_float, batched, safe_means
from jbai.oracle.eps_problem import eps_problem, g_of, is_saturated, x_of_m

NEWTON_STEPS = 2  # Newton steps per call in the rules ("warm")


class EpsWarmStart(NamedTuple):
  """The last solution of `eps_warm_solve`, from which the next one starts."""

  top: jax.Array  # [] int32, the answer it was solved for (-1: none, cold start)
  c: jax.Array    # [K] float, the fractions c_i of the brackets (the answer's unused)


class EpsWarmSolution(NamedTuple):
  """What `eps_warm_solve` returns (one entry per instance in a batch)."""

  w: jax.Array              # [..., K] the allocation w*_eps(nu) (of the iterate)
  gamma: jax.Array          # [...] w_a min_i g_i(m_i), Gamma_eps(nu) at convergence
  start: EpsWarmStart       # the start for the next solve
  converged: jax.Array      # [...] bool, the residual is below sqrt(float eps)


def cold_c(num_arms: int) -> float:
  """The fraction c_i of the solution for K - 1 equal Gaussian arms: the cold start."""
  return math.sqrt(num_arms - 1) / (1.0 + math.sqrt(num_arms - 1))


def eps_warm_start(num_arms: int, dtype=None) -> EpsWarmStart:
  """A cold start for `num_arms` arms (the state of a rule before its first solve)."""
  dtype = dtype or jnp.zeros(()).dtype
  return EpsWarmStart(top=jnp.asarray(-1, jnp.int32),
                      c=jnp.full(num_arms, cold_c(num_arms), dtype))


def _pieces(p, c):
  """(g_i, r_i = d(mu_a, m_i) / d(mu_i, m_i + eps), x_i) at the fractions c, and
  their derivatives in c_i, elementwise."""
  width = p.m_hi - p.m_lo

  def at(c_):
    m = p.m_lo + c_ * width
    x = x_of_m(p, m)
    kl_i = p.family.kl(p.means, m + p.eps)
    kl_i = jnp.maximum(kl_i, jnp.finfo(kl_i.dtype).tiny)
    return g_of(p, x, m), p.family.kl(p.mu_a, m) / kl_i, x

  (g, r, x), (dg, dr, _) = jax.jvp(at, (c,), (jnp.ones_like(c),))
  return g, r, x, dg, dr


def _newton(p, others, c, y):
  """One damped Newton step from (c, y): (residual, c', y', x at c).

  With e_i = g_i - y, g'_i = dg_i/dc_i, q_i = dPhi/dc_i, the arrow system
  g'_i dc_i - dy = -e_i, sum_i q_i dc_i = -Phi is solved in O(K).
  """
  g, r, x, dg, dr = _pieces(p, c)
  f = jnp.sum(jnp.where(others, r, 0.0))
  phi = jnp.log(f)
  e = jnp.where(others, g - y, 0.0)
  dg = jnp.where(others, dg, 1.0)
  q = jnp.where(others, dr / f, 0.0)
  dy = (jnp.sum(q * e / dg) - phi) / jnp.sum(q / dg)
  dc = (dy - e) / dg
  residual = jnp.maximum(jnp.abs(phi), jnp.max(jnp.abs(e)) / jnp.abs(y))
  c_new = jnp.where(others, jnp.clip(c + dc, 0.5 * c, 0.5 * (1 + c)), c)
  excess = y - p.y_min
  y_new = p.y_min + jnp.clip(excess + dy, 0.5 * excess, 2.0 * excess)
  ok = jnp.isfinite(residual) & jnp.all(jnp.isfinite(c_new)) & jnp.isfinite(y_new)
  return jnp.where(ok, residual, jnp.inf), c_new, y_new, x


def _cold(p, others, num_arms: int):
  """The cold start's fractions: y = y_min + v (min_i D_i - y_min) with
  v = 1 / (1 + sqrt(K - 1)) and c_i = 1 - (y - y_min) / (D_i - y_min),
  D_i = d(mu_a, m_lo_i) the cost as x_i grows (Gaussian arms: the exact c_i at
  that y, and the solution for K - 1 equal arms); c_i = 1 - v where D_i is
  infinite."""
  v = 1.0 / (1.0 + math.sqrt(num_arms - 1))
  d = jnp.where(others, p.family.kl(p.mu_a, p.m_lo), jnp.inf)
  finite = jnp.isfinite(d)
  d_min = jnp.min(jnp.where(finite, d, jnp.inf))
  y = p.y_min + v * (d_min - p.y_min)
  u = jnp.where(finite, (y - p.y_min) / jnp.where(finite, d - p.y_min, 1.0), v)
  tiny = jnp.finfo(u.dtype).eps
  u = jnp.where(jnp.isfinite(u), jnp.clip(u, tiny, 1 - tiny), v)
  return jnp.where(others, 1.0 - u, 0.5)


def _y_of(p, others, c):
  """The mean of the pair costs g_i(m_i) at the fractions c (y at the solution)."""
  g, *_ = _pieces(p, c)
  n = jnp.sum(others)
  return jnp.sum(jnp.where(others, g, 0.0)) / n


def _solve_one(family: Family, newton_steps: int, means, eps, start: EpsWarmStart, update):
  """`eps_warm_solve` for one instance: (w, gamma, start, converged)."""
  k = means.shape[-1]
  dtype = means.dtype
  safe, tie, tied = safe_means(family, means)
  tie = tie & (eps <= 0)
  p = eps_problem(family, jnp.where(tie, safe, means), eps)
  a = jnp.argmax(p.means).astype(jnp.int32)
  others = ~p.is_a
  saturated = is_saturated(p)
  solve = jnp.asarray(update) & ~tie & ~saturated
  fresh = ((start.top != a) | ~jnp.all(jnp.where(others, (start.c > 0) & (start.c < 1), True)))
  c = jnp.where(fresh, _cold(p, others, k), start.c).astype(dtype)
  c = jnp.where(others, c, 0.5)
  y = _y_of(p, others, c)
  tol = jnp.finfo(dtype).eps ** 0.5
  done, failed = ~solve, jnp.zeros((), bool)
  converged = jnp.zeros((), bool)
  for _ in range(newton_steps):
    residual, c_new, y_new, _ = _newton(p, others, c, y)
    ok = jnp.isfinite(residual)
    step = ~done & ok
    c, y = jnp.where(step, c_new, c), jnp.where(step, y_new, y)
    failed = failed | (~done & ~ok)
    small = step & (residual <= tol)
    converged = converged | small
    done = done | ~ok | small
  g, _, x, _, _ = _pieces(p, c)
  x = jnp.where(p.is_a, 1.0, x)
  total = jnp.sum(x)
  w = x / total
  gamma = jnp.min(jnp.where(others, g, jnp.inf)) / total
  good = jnp.all(jnp.isfinite(w)) & jnp.isfinite(gamma) & ~failed
  uniform = jnp.full((k,), 1.0 / k, dtype)
  w_tie = (tied / jnp.sum(tied)).astype(dtype)
  w = jnp.where(tie, w_tie, jnp.where(good, w, uniform))
  gamma = jnp.where(tie | ~good, 0.0, gamma)
  w = jnp.where(saturated, p.is_a.astype(dtype), w)
  gamma = jnp.where(saturated, p.y_min, gamma)
  new_start = EpsWarmStart(top=jnp.where(good, a, -1).astype(jnp.int32),
                           c=jnp.where(good, c, cold_c(k)).astype(dtype))
  keep = ~solve
  new_start = jax.tree.map(lambda old, new: jnp.where(keep, old, new),
                           EpsWarmStart(jnp.asarray(start.top, jnp.int32), start.c.astype(dtype)),
                           new_start)
  return w, gamma, new_start, converged & good


def eps_warm_solve(family: Family, means: ArrayLike, eps: ArrayLike, start: EpsWarmStart,
                   update: ArrayLike = True,
                   newton_steps: int = NEWTON_STEPS) -> EpsWarmSolution:
  """w*_eps(nu) by `newton_steps` Newton steps from `start` (pure, jit/vmap-able).

  Args:
    family: the reward family.
    means: [..., K] arm means.
    eps: the slack >= 0, broadcast against means[..., 0].
    start: the `EpsWarmStart` of the last solve (or `eps_warm_start(K)`),
      broadcast against means.
    update: [...] bool; False keeps the start (and returns its allocation).
    newton_steps: the fixed number of Newton steps (>= 1).

  Returns:
    EpsWarmSolution(w, gamma, start, converged).

  Example:
    >>> import jax.numpy as jnp, jbai
    >>> from jbai.oracle import eps_warm
    >>> fam, mu = jbai.families.gaussian(), jnp.array([1.0, 0.97, 0.95, 0.5, 0.3])
    >>> sol = eps_warm.eps_warm_solve(fam, mu, 0.1, eps_warm.eps_warm_start(5),
    ...                               newton_steps=8)
    >>> round(float(1 / sol.gamma), 2)
    621.08
  """
  if newton_steps < 1:
    raise ValueError(f"newton_steps must be >= 1, got {newton_steps!r}")
  means = as_float(means)
  lead = means.shape[:-1]
  eps = jnp.broadcast_to(jnp.asarray(eps, means.dtype), lead)
  start = EpsWarmStart(top=jnp.broadcast_to(jnp.asarray(start.top, jnp.int32), lead),
                       c=jnp.broadcast_to(jnp.asarray(start.c, means.dtype), means.shape))
  update = jnp.broadcast_to(jnp.asarray(update, bool), lead)

  def one(mu, e, top, c, upd):
    return _solve_one(family, int(newton_steps), mu, e, EpsWarmStart(top, c), upd)

  return EpsWarmSolution(*batched(one, means, eps, *start, update))


__all__ = ["EpsWarmSolution", "EpsWarmStart", "NEWTON_STEPS", "cold_c", "eps_warm_solve",
           "eps_warm_start"]
