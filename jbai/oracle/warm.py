"""Warm-started optimal allocation: w(nu) by Newton from a nearby solution.

A sampling rule that tracks w(nu_hat_t) (Track-and-Stop, beta-tuned T3C) solves the
lower-bound problem at every step for means that moved by O(1/t) since the last
step. `warm_solve` starts from the last step's solution, kept in the rule's state
as a `WarmStart`, and runs Newton iterations on the optimality conditions of
`jbai.oracle.exact` until they hold to rounding (or a fixed number of them,
`newton_steps`: "Fixed cost" below); the nested bisection of `exact_solve` stays
the reference (tests/test_oracle_warm.py compares the two along simulated
trajectories).

The conditions, with a the best arm, D_i = KL(mu_a, mu_i), y_max = min_i D_i and,
for every other arm i, the weight u_i = x_i / (1 + x_i) in (0, 1) of arm i
against arm a (x_i = w_i / w_a), and y in (0, y_max):

  G_i(u_i) = KL(mu_a, m_i) + x_i KL(mu_i, m_i) = y,  m_i the transport point of
             the weights (1 - u_i, u_i);
  Phi = log sum_{i != a} KL(mu_a, m_i) / KL(mu_i, m_i) = 0.

Then w = x / sum(x) and Gamma(nu) = y / sum(x). The unknowns are the u_i and
s = logit(y / y_max). Derivatives: G_i'(u) = KL(mu_i, m_i) / (1 - u)^2 (envelope
theorem; G_i = u D_i for Gaussian arms), and dPhi/du_i from r_i = KL(mu_a, m_i) /
KL(mu_i, m_i) through

  dm/du = -(d_m KL(mu_i, m) - d_m KL(mu_a, m)) / ((1 - u) d2_m KL(mu_a, m) + u d2_m KL(mu_i, m)),

the stationarity of m_i (derivatives of the family's KL by autodiff, so any
family works). Phi is close to linear in s (2 s for two Gaussian arms).
`jbai.oracle.warm_problem` holds the instance and evaluates these pieces.

Two solvers, the second taking the lanes that the first leaves:

  * fast: Newton on all the conditions at once. Its Jacobian is an arrow (each
    G_i depends on u_i and s only), so a step costs one evaluation of the
    transport points and O(K). A lane stops once its relative residual is below
    sqrt(eps), after one more step, which squares it. From a warm start this
    takes two evaluations (three in float64); the first steps are straight-line
    code, which XLA fuses, then a loop of at most FAST_ITERS.
  * safeguarded: Newton on each G_i(u_i) = y, nested in Newton on Phi(s) = 0,
    every step kept inside a bracket (G_i - y and Phi are increasing) and
    replaced by bisection when it leaves it or is not finite. It converges from
    any start, and stops at a relative residual of eps^(3/4), or where a Newton
    step no longer halves a residual below eps^(1/4) (the rounding noise of the
    KLs, near a tie), or after `max_iters` steps of each loop.

The warm start is scale-free: it stores v = y / y_max and q_i = u_i D_i / y (1 for
Gaussian arms), so that the first guess u_i = q_i v y_max / D_i follows the means
to first order. When the best arm changes, the start is discarded (cold start:
v = 1 / (1 + sqrt(K - 1)), the solution for K - 1 equal Gaussian arms, q = 1).

Under vmap a loop runs until every lane has converged: a lane with a cold start
costs every lane a few more iterations at that step. A lane that hits the cap
returns its current iterate, and the next call continues from there.

Fixed cost (`newton_steps` = n, what the rules run at every step): exactly n
joint Newton steps, straight-line code with no loop and no fallback, every lane
stepping (a converged one moves by its residual squared: no threshold whose
rounding would make a trial depend on its program). Under vmap a call then costs
the same whatever the other lanes do, so the cost of a simulation step does not
grow with the pool (with loops, the more lanes, the likelier that one of them
needs more iterations or the safeguarded solver at a given step, and every lane
waits for it). A lane that has not converged returns the allocation of its
iterate and carries the iterate in its start, so that the next call, at means
that moved by O(1/t), goes on from there: the iterations of a cold start are
spread over a few steps of the trial. A lane whose Newton step is not finite
starts cold at the next call. The safeguarded solver, which converges from any
start, is not run: from the cold start the damped joint steps converge in a few
calls on the instances of tests/test_oracle_warm.py, and along trajectories the
allocation is exact_solve's to rounding but for the first steps of a trial
(where the means jump) and the few steps after a change of the best arm or
after a mean leaves an edge of Theta (the tests state the distances).

Ties for the best arm follow `exact_solve` (w uniform over the tied arms,
Gamma = 0) and leave the start unchanged. A lane whose iterate is not finite
(a near-tie that only rounding separates, in float32) gets the uniform
allocation, Gamma = 0 and the cold start. `warm_solve` is not differentiable (use
`exact_solve` for derivatives).
"""

import functools
import math
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.families.base import Family
from jbai.oracle.common import as_float, batched, default_iters
from jbai.oracle.warm_problem import WarmProblem, evaluate, guess, ratios, to_q, warm_problem

FAST_UNROLLED = 2  # joint Newton steps run unrolled, ...
FAST_ITERS = 6     # ... and at most this many in all, before the safeguarded solver


class WarmStart(NamedTuple):
  """The last solution of `warm_solve`, from which the next one starts."""

  top: jax.Array  # [] int32, the best arm it was solved for (-1: none, cold start)
  v: jax.Array    # [] float, y / y_max, in (0, 1)
  q: jax.Array    # [K] float, u_i D_i / y (the best arm's entry is unused)


class WarmSolution(NamedTuple):
  """What `warm_solve` returns (one entry per instance in a batch)."""

  w: jax.Array            # [..., K] the allocation w(nu)
  gamma: jax.Array        # [...] Gamma(nu)
  start: WarmStart        # the start for the next solve
  evaluations: jax.Array  # [...] int32, transport evaluations this solve used


def cold_v(num_arms: int) -> float:
  """y / y_max at the solution for K - 1 equal Gaussian arms: the cold start."""
  return 1.0 / (1.0 + math.sqrt(num_arms - 1))


def warm_start(num_arms: int, dtype=None) -> WarmStart:
  """A cold start for `num_arms` arms (the state of a rule before its first solve)."""
  dtype = dtype or jnp.zeros(()).dtype
  return WarmStart(top=jnp.asarray(-1, jnp.int32),
                   v=jnp.asarray(cold_v(num_arms), dtype),
                   q=jnp.ones(num_arms, dtype))


# --------------------------------------------------------------------------
# The fast solver: Newton on all the conditions at once.


def _newton(p: WarmProblem, u, v):
  """One joint Newton step from (u, v): (residual, u', v'), residual inf where not finite.

  With e_i = G_i(u_i) - y, g_i = G_i'(u_i), p_i = dPhi/du_i and y' = dy/ds, the
  Jacobian is an arrow,
    g_i du_i - y' ds = -e_i,   sum_i p_i du_i = -Phi,
  solved in O(K).
  """
  others = p.others
  y = v * p.y_max
  m, kl_a, kl_i = evaluate(p, u)
  f, dr_du, kl_a, kl_i = ratios(p, u, m, kl_a, kl_i)
  phi = jnp.log(f)
  e = jnp.where(others, kl_a + u / (1 - u) * kl_i - y, 0.0)
  g = kl_i / (1 - u) ** 2
  dphi_du = dr_du / f
  dy_ds = y * (1 - v)
  ds = (jnp.sum(dphi_du * e / g) - phi) / (dy_ds * jnp.sum(dphi_du / g))
  du = (dy_ds * ds - e) / g
  residual = jnp.maximum(jnp.abs(phi), jnp.max(jnp.abs(e)) / y)
  # Damped far from the solution: u_i moves at most halfway to 0 or 1, and the
  # odds v / (1 - v) by a factor e at most.
  u_new = jnp.where(others, jnp.clip(u + du, 0.5 * u, 0.5 * (1 + u)), 0.5)
  v_new = jax.nn.sigmoid(jnp.log(v) - jnp.log1p(-v) + jnp.clip(ds, -1.0, 1.0))
  ok = (jnp.isfinite(residual) & jnp.all(jnp.isfinite(u_new)) & (v_new > 0) &
        (v_new < 1))
  return jnp.where(ok, residual, jnp.inf), u_new, v_new


def _fast(p: WarmProblem, u, v, solve):
  """The fast solver from (u, v) where `solve`: (u, v, converged, evaluations).

  A lane stops once its relative residual is below `accept`, after one more step
  (which squares it), or at a step that is not finite.
  """

  def fast_step(carry):
    u, v, done, converged, n = carry
    residual, u_new, v_new = _newton(p, u, v)
    ok = jnp.isfinite(residual)
    step = ~done & ok
    small = step & (residual <= p.accept)
    return (jnp.where(step, u_new, u), jnp.where(step, v_new, v), done | ~ok | small,
            converged | small, n + jnp.where(done, 0, 1))

  # The first FAST_UNROLLED steps are straight-line code, which XLA fuses (a
  # while_loop's body costs several times more per step on CPU); the loop takes
  # the lanes that need more.
  carry = (u, v, ~solve, jnp.zeros((), bool), jnp.zeros((), jnp.int32))
  for _ in range(FAST_UNROLLED):
    carry = fast_step(carry)
  u, v, _, converged, evals = jax.lax.while_loop(
      lambda c: ~c[2] & (c[4] < FAST_ITERS), fast_step, carry)
  return u, v, converged, evals


def _fixed(p: WarmProblem, u, v, solve, steps: int):
  """`steps` joint Newton steps from (u, v), with no loop: (u, v, restart,
  evaluations).

  Every lane takes every step (a lane stops only at a step that is not finite,
  and `restart` marks it: its next call starts cold). A converged lane's step
  moves it by its residual squared, to rounding; stopping it at a threshold of
  the residual, as `_fast` does, would make the iterate jump by a residual's
  worth where the rounding of one program crosses the threshold and another's
  does not, and a trial that tracks w depend on the program it runs in.
  """
  done, failed = ~solve, jnp.zeros((), bool)
  for _ in range(steps):
    residual, u_new, v_new = _newton(p, u, v)
    ok = jnp.isfinite(residual)
    step = ~done & ok
    u, v = jnp.where(step, u_new, u), jnp.where(step, v_new, v)
    failed = failed | (~done & ~ok)
    done = done | ~ok
  return u, v, failed, jnp.where(solve, steps, 0)


# --------------------------------------------------------------------------
# The safeguarded solver: the inner equations by Newton in u_i, then the outer
# one by Newton in s, each step kept inside a bracket (bisection otherwise).


def _inner(p: WarmProblem, y, u, active):
  """G_i(u_i) = y for every arm i != a, from u; `active` False: nothing to do.

  Returns (u, m, KL(mu_a, m), KL(mu_i, m), transport evaluations).
  """
  eps, tol, noise, max_iters = p.eps, p.tol, p.noise, p.max_iters

  def residual(u, kl_a, kl_i):  # (1 - u) (G(u) - y), with the sign of G(u) - y
    return (1 - u) * kl_a + u * kl_i - y * (1 - u)

  def status(u, lo, hi, h, n):
    small = jnp.abs(h) <= tol * y * (1 - u)
    narrow = hi - lo <= 4 * eps * jnp.maximum(u, eps)
    return ~active | p.is_a | small | narrow | (n >= max_iters)

  m, kl_a, kl_i = evaluate(p, u)
  h = residual(u, kl_a, kl_i)
  lo = jnp.where(h < 0, u, 0.0)
  hi = jnp.where(h < 0, 1.0, u)
  n = jnp.zeros((), jnp.int32)
  carry = (u, lo, hi, h, m, kl_a, kl_i, status(u, lo, hi, h, n), n)

  def body(carry):
    u, lo, hi, h, m, kl_a, kl_i, done, n = carry
    step = u - h * (1 - u) / kl_i
    ok = jnp.isfinite(step) & (step > lo) & (step < hi)
    u_new = jnp.where(done, u, jnp.where(ok, step, 0.5 * (lo + hi)))
    m_new, kl_a_new, kl_i_new = evaluate(p, u_new)
    h_new = residual(u_new, kl_a_new, kl_i_new)
    keep = lambda old, new: jnp.where(done, old, new)
    lo = keep(lo, jnp.where(h_new < 0, u_new, lo))
    hi = keep(hi, jnp.where(h_new < 0, hi, u_new))
    # A Newton step that does not halve a small residual has met the rounding
    # noise of the KLs (near a tie, say): stop there.
    stalled = (ok & (jnp.abs(h_new) > 0.5 * jnp.abs(h)) &
               (jnp.abs(h_new) <= noise * y * (1 - u_new)))
    u, h, m = keep(u, u_new), keep(h, h_new), keep(m, m_new)
    kl_a, kl_i = keep(kl_a, kl_a_new), keep(kl_i, kl_i_new)
    n = n + 1
    return (u, lo, hi, h, m, kl_a, kl_i, done | stalled | status(u, lo, hi, h, n), n)

  u, _, _, _, m, kl_a, kl_i, _, n = jax.lax.while_loop(
      lambda c: ~jnp.all(c[7]), body, carry)
  return u, m, kl_a, kl_i, 1 + n


def _outer_point(p: WarmProblem, v, q, active):
  """The inner solution at y = v y_max, and Phi and dPhi/ds there (s = logit v):
  (Phi, dPhi/ds, q of the solution, transport evaluations)."""
  y = v * p.y_max
  u, m, kl_a, kl_i, evals = _inner(p, y, guess(p, q, v), active)
  f, dr_du, _, kl_i = ratios(p, u, m, kl_a, kl_i)
  df_dy = jnp.sum(dr_du * (1 - u) ** 2 / kl_i)  # du_i/dy = 1 / G_i'(u_i)
  return jnp.log(f), df_dy / f * y * (1 - v), to_q(p, u, v), evals


def _nested(p: WarmProblem, v, q, active):
  """Newton on Phi(s) = 0 over `_outer_point`, from (v, q): (v, q, evaluations)."""
  eps, tol, noise, max_iters = p.eps, p.tol, p.noise, p.max_iters

  def converged(phi, v, lo, hi, n):
    return ~active | (jnp.abs(phi) <= tol) | (hi - lo <= 4 * eps * v) | (n >= max_iters)

  phi, dphi, q, evals = _outer_point(p, v, q, active)
  lo = jnp.where(phi < 0, v, 0.0)
  hi = jnp.where(phi < 0, 1.0, v)
  n = jnp.zeros((), jnp.int32)
  carry = (v, lo, hi, phi, dphi, q, converged(phi, v, lo, hi, n), n, evals)

  def body(carry):
    v, lo, hi, phi, dphi, q, done, n, evals = carry
    step = jax.nn.sigmoid(jnp.log(v) - jnp.log1p(-v) - phi / dphi)
    ok = jnp.isfinite(step) & (step > lo) & (step < hi)
    v_new = jnp.where(done, v, jnp.where(ok, step, 0.5 * (lo + hi)))
    phi_new, dphi_new, q_new, more = _outer_point(p, v_new, q, ~done)
    keep = lambda old, new: jnp.where(done, old, new)
    lo = keep(lo, jnp.where(phi_new < 0, v_new, lo))
    hi = keep(hi, jnp.where(phi_new < 0, hi, v_new))
    stalled = ok & (jnp.abs(phi_new) > 0.5 * jnp.abs(phi)) & (jnp.abs(phi_new) <= noise)
    v, phi, dphi, q = keep(v, v_new), keep(phi, phi_new), keep(dphi, dphi_new), keep(q, q_new)
    evals = evals + jnp.where(done, 0, more)
    n = n + 1
    return (v, lo, hi, phi, dphi, q, done | stalled | converged(phi, v, lo, hi, n), n,
            evals)

  v, _, _, _, _, q, _, _, evals = jax.lax.while_loop(lambda c: ~c[6], body, carry)
  return v, q, evals


# --------------------------------------------------------------------------
# One instance: set up, the fast solver, the safeguarded one for the lanes it
# leaves, and the allocation.


def _solve_one(family: Family, max_iters: int, newton_steps: Optional[int], means,
               start: WarmStart, update):
  """`warm_solve` for one instance: (w, gamma, start, evaluations)."""
  k = means.shape[-1]
  dtype = means.dtype
  p, a, tie, tied = warm_problem(family, max_iters, means)
  solve = jnp.asarray(update) & ~tie
  fresh = (start.top != a) | ~(start.v > 0) | ~(start.v < 1) | ~jnp.all(jnp.isfinite(start.q))
  v0 = jnp.where(fresh, cold_v(k), start.v).astype(dtype)
  q0 = jnp.where(fresh, 1.0, start.q).astype(dtype)
  # An arm whose q puts u_i = q_i y / D_i at or beyond 1 starts cold (q_i = 1):
  # its D_i fell by orders of magnitude since the last solve (its mean left an edge
  # of Theta), and u_i at the edge of (0, 1) would give it all the weight.
  q0 = jnp.where(q0 * v0 * p.y_max < p.d, q0, 1.0)

  if newton_steps is not None:
    u, v, restart, evals = _fixed(p, guess(p, q0, v0), v0, solve, newton_steps)
    q = jnp.where(restart, 1.0, to_q(p, u, v))
    v = jnp.where(restart, cold_v(k), v).astype(dtype)
    return _allocation(p, a, tie, tied, solve, start, v, q, evals)

  u, v, converged, evals = _fast(p, guess(p, q0, v0), v0, solve)
  q = to_q(p, u, v)
  # The lanes that the fast path left go to the safeguarded one, from where it
  # ended (every step it kept had finite values and 0 < v < 1). A while_loop of
  # at most one pass skips it when no lane needs it.
  slow = solve & ~converged

  def fallback(carry):
    _, v, q, evals = carry
    v, q, more = _nested(p, v, q, slow)
    return jnp.zeros((), bool), v, q, evals + jnp.where(slow, more, 0)

  _, v, q, evals = jax.lax.while_loop(lambda c: c[0], fallback, (slow, v, q, evals))
  return _allocation(p, a, tie, tied, solve, start, v, q, evals)


def _allocation(p: WarmProblem, a, tie, tied, solve, start: WarmStart, v, q, evals):
  """(w, gamma, start, evaluations) from the solution (v, q), with the conventions
  for ties and for lanes whose iterate is not finite."""
  k = p.safe.shape[-1]
  dtype = p.safe.dtype
  u = guess(p, q, v)
  x = jnp.where(p.is_a, 1.0, u / (1 - u))
  total = jnp.sum(x)
  w = x / total
  gamma = v * p.y_max / total
  w_tie = (tied / jnp.sum(tied)).astype(dtype)
  new = WarmStart(top=a, v=v, q=q)
  start = jax.tree.map(lambda n_, o: jnp.where(solve, n_, o.astype(n_.dtype)), new, start)
  # A near-tie that `safe_means` does not flag (KLs of rounding size, float32)
  # can leave a non-finite iterate: such a lane gets the uniform allocation and
  # Gamma = 0, and the cold start.
  failed = ~(jnp.all(jnp.isfinite(w)) & jnp.isfinite(gamma))
  w = jnp.where(tie, w_tie, jnp.where(failed, 1.0 / k, w))
  start = start._replace(v=jnp.where(failed, cold_v(k), start.v).astype(dtype),
                         q=jnp.where(failed, 1.0, start.q).astype(dtype))
  return w, jnp.where(tie | failed, 0.0, gamma), start, evals.astype(jnp.int32)


@functools.partial(jax.jit, static_argnames=("family", "max_iters", "newton_steps"))
def warm_solve(family: Family, means: ArrayLike, start: WarmStart,
               update: ArrayLike = True, max_iters: Optional[int] = None,
               newton_steps: Optional[int] = None) -> WarmSolution:
  """Optimal allocation w(nu) and Gamma(nu), by Newton from `start` (module docstring).

  Pure, jit-compiled (`family`, `max_iters` and `newton_steps` static) and
  vmappable; safe on ties, like `exact_solve`, so it can run on empirical means
  inside a simulation loop. Not differentiable.

  Args:
    family: the reward family.
    means: [..., K] arm means.
    start: a `WarmStart` with leading axes those of means[..., 0]: the last
      solution (from a previous call), or `warm_start(K)` for none.
    update: [...] bool, broadcast against means[..., 0]; where False, nothing is
      solved: the start comes back unchanged and w is the start's allocation at
      these means (one Newton guess, no iteration).
    max_iters: cap on the steps of each of the safeguarded solver's two nested
      loops; default from the dtype (35 in float32, 64 in float64), which
      bisection alone would need.
    newton_steps: None to solve to convergence (the fast solver, then the
      safeguarded one for the lanes it leaves); or n >= 1 for exactly n joint
      Newton steps and no loop, so that a call costs the same in every lane
      (module docstring, "Fixed cost"): a lane that has not converged returns
      its iterate's allocation and carries the iterate in the start.

  Returns:
    A `WarmSolution` (w, gamma, start for the next call, evaluations used).

  Example:
    >>> import jax.numpy as jnp, jbai
    >>> from jbai.oracle import warm
    >>> fam = jbai.families.gaussian()
    >>> sol = warm.warm_solve(fam, jnp.array([1.2, 1.0, 1.0]), warm.warm_start(3))
    >>> [round(float(v), 4) for v in sol.w]
    [0.4142, 0.2929, 0.2929]
    >>> sol = warm.warm_solve(fam, jnp.array([1.21, 1.0, 1.0]), sol.start)
    >>> int(sol.evaluations) <= 4
    True
  """
  means = as_float(means)
  max_iters = max_iters or default_iters(means.dtype)
  lead = means.shape[:-1]
  start = WarmStart(top=jnp.broadcast_to(jnp.asarray(start.top, jnp.int32), lead),
                    v=jnp.broadcast_to(jnp.asarray(start.v, means.dtype), lead),
                    q=jnp.broadcast_to(jnp.asarray(start.q, means.dtype), means.shape))
  update = jnp.broadcast_to(jnp.asarray(update, bool), lead)

  if newton_steps is not None and newton_steps < 1:
    raise ValueError(f"newton_steps must be None or >= 1, got {newton_steps!r}")

  def one(mu, top, v, q, upd):
    return _solve_one(family, max_iters, newton_steps, mu, WarmStart(top, v, q), upd)

  return WarmSolution(*batched(one, means, *start, update))
