"""Track-and-Stop sampling (Garivier & Kaufmann 2016), with C- and D-tracking.

Both rules first pull each arm once (the least-sampled arm while some count is 0),
then track the plug-in allocation w(nu_hat_t): the exact oracle's optimal
allocation (jbai.oracle.exact_solve) at the projected sample means. While the
empirical best arm is tied, w(nu) is undefined and the oracle returns the uniform
allocation over the tied arms (its documented convention), so tracking then
splits the pulls between the tied arms.

D-tracking: if some arm has T_t(a) < sqrt(t) - K/2, pull the least-sampled arm
(forced exploration); else pull argmax_a t w_a(nu_hat_t) - T_t(a).

C-tracking: pull argmax_a sum_{s <= t} w_a^{eps_s}(nu_hat_s) - T_t(a), where
w^eps is the projection of w on {w : w_a >= eps, sum w = 1} (Euclidean; it is
also an L-infinity projection, as the paper asks) and eps_s = (K^2 + s)^{-1/2} / 2.
The rule keeps the deficit sum_s w^{eps_s} - T_t instead of the running sum, so
that float32 keeps its precision at large t; the first K pulls add the uniform
allocation to the deficit.

The original papers' settings (`forced`, `projection`; Garivier & Kaufmann's
Julia code, `TrackAndStop` (D) and `TrackAndStop2` (C) in
jsfunc/best-arm-identification BAIalgos.jl, copied as track_stop.jl in
xuedong/BestArm.jl, and Koolen's tidnabbil tracking.jl): forced
exploration "strict" pulls the least-sampled arm when min_a T_t(a) < sqrt(t) - K/2
(the paper's U_t, tas-d's default), "sqrt-t-k2" when min_a T_t(a) <= sqrt(t) - K/2
(their code), "none" never after the first K pulls (tas-c's default). C-tracking
with `projection="none"` tracks sum_s w(nu_hat_s) without the eps-projection, as
their code does. `tas_c(forced="sqrt-t-k2", projection="none")` and
`tas_d(forced="sqrt-t-k2")` are the rules of their experiments (the argmax's ties
are broken at random here, at the lowest index there). Non-default values show in
the rule's params; the defaults keep the rules, and their trials, as they were.

Sources checked for `forced` and `projection`: against that 2016 Julia code.
Both of its rules explore when minimum(N) <= max(sqrt(t) - K/2, 0), t the
number of rewards so far (the same test as "sqrt-t-k2" once every arm is
pulled); its C-tracking sums the plug-in allocations without projection, from
SumWeights = 1/K per arm after the first K pulls (jbai's running sum is 1 per
arm then, a deficit of 0; the offset is the same for every arm, so the argmax
is the same); its
D-tracking pulls argmax(w - N/t). One difference remains: while the empirical
best arm is tied, its D-tracking pulls one of the tied arms at random, without
the forced-exploration test, where jbai tracks the uniform allocation over them
(see above). The paper's U_t, its C-tracking projection and eps_s were not
checked against the paper's text (the stored copies here give only its first
page), nor was Koolen's tracking.jl (the copy of tidnabbil's purex_games_paper
code found here, in rctzeng/NeurIPS2021-Fast-Pure-Exploration-via-Frank-Wolfe,
lacks it).

The oracle (`solver`): "warm" (default) takes NEWTON_STEPS = 2 joint Newton
steps towards w(nu_hat_t) from the previous step's iterate, kept in the rule's
state (`jbai.oracle.warm_solve` with `newton_steps`: two transport evaluations
per step in every lane, against about 1,200 for the nested bisection, and no
loop, so that a step costs the same at any pool width); "warm-converged" runs
`warm_solve` to convergence at every step (safeguarded Newton, a loop that under
vmap waits for the slowest lane); "exact" runs the nested bisection of
`jbai.oracle.exact_solve` from scratch, the reference. "warm-converged" reaches
exact_solve's w to the float precision; "warm" does too but for the few steps
after the empirical best arm changes or a mean jumps (early in a trial), where a
cold start spreads its iterations over a few steps (tests/test_oracle_warm.py,
tests/test_rules_baselines.py state the distances).

Lazy updates (`lazy_factor` = f > 1; Jedra & Proutiere 2020 show that updating
at geometrically spaced times keeps optimality): w(nu_hat) is recomputed only at
the first step t >= t_next, then t_next = max(t + 1, ceil(f t)); in between the
rule tracks the last w, kept in its state. Under vmap the oracle then runs only
at steps where some lane is due. The lanes of `jbai.trace` move in step and are
due together, so there the oracle runs at the grid times only; the lanes of
`jbai.simulate` are at different times and most steps have some lane due, so the
saving there is small. The schedule changes the rule: on the sensitivity
instances (delta = 1e-8, gk16; 500 Bernoulli and 300 Gaussian trials, paired with
the every-step rule by their keys) f = 1.1 raised E[tau] by 3% [0%, 6%]
(Bernoulli) and 12% [-1%, 25%] (Gaussian), f = 2 by 15% [12%, 18%] and
28% [20%, 36%]; with the warm oracle a step costs a few TCB steps anyway.
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jbai import oracle
from jbai.builders import cached
from jbai.families.base import Family
from jbai.oracle.warm import WarmStart, warm_start
from jbai.rules.base import Rule, least_sampled
from jbai.state import ArmStats, count_dtype
from jbai.ties import argmax_random_ties


SOLVERS = ("warm", "warm-converged", "exact")
FORCED = ("strict", "sqrt-t-k2", "none")  # forced exploration (module docstring)
PROJECTIONS = ("eps", "none")            # C-tracking's projection of w
NEWTON_STEPS = 2  # joint Newton steps of the warm oracle per step of the rule ("warm")


def warm_steps(solver: str):
  """The warm oracle's `newton_steps` for `solver`: NEWTON_STEPS, or None (to convergence)."""
  return NEWTON_STEPS if solver == "warm" else None


class DTrackingState(NamedTuple):
  w: jax.Array           # [K] float, w(nu_hat) at the last recomputation
  next_solve: jax.Array  # [] count_dtype(), time t of the next recomputation (lazy)
  warm: WarmStart        # the last solution, the start of the warm oracle


class CTrackingState(NamedTuple):
  w: jax.Array           # [K] float, w(nu_hat) at the last recomputation
  next_solve: jax.Array  # [] count_dtype(), time t of the next recomputation (lazy)
  warm: WarmStart        # the last solution, the start of the warm oracle
  deficit: jax.Array     # [K] float, sum_{s <= t} w^{eps_s}(nu_hat_s) - T_t


def eps_projection(w: jax.Array, eps: jax.Array) -> jax.Array:
  """Projection of w on the simplex with every weight >= eps (needs K eps <= 1).

  With y = w - eps and s = 1 - K eps it is eps + max(y - theta, 0), where
  theta = max_j (sum_{i: y_i >= y_j} y_i - s) / #{i: y_i >= y_j} (the projection
  on the simplex of mass s, with the sorted sums of the usual algorithm taken
  over comparisons instead: no sort, which is slow on a CPU under vmap). The
  comparisons read w, not y: y_i >= y_j is w_i >= w_j, and XLA may compute the two
  copies of y that a comparison of y with itself reads differently (eps fused
  into each, 0.5 / sqrt(.) as an approximate rsqrt in one), which drops an arm
  from its own row and leaves the projection off the simplex.
  """
  num_arms = w.shape[-1]
  y = w - eps
  above = w[None, :] >= w[:, None]  # [j, i]: y_i >= y_j
  total = jnp.sum(jnp.where(above, y[None, :], 0.0), axis=1)
  theta = jnp.max((total - (1.0 - num_arms * eps)) / jnp.sum(above, axis=1))
  return eps + jnp.maximum(y - theta, 0.0)


def check_solver(solver: str) -> str:
  if solver not in SOLVERS:
    raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
  return solver


def check_choice(name: str, value: str, choices: tuple) -> str:
  if value not in choices:
    raise ValueError(f"{name} must be one of {choices}, got {value!r}")
  return value


def starved(counts: jax.Array, t: jax.Array, forced: str) -> jax.Array:
  """True when forced exploration pulls the least-sampled arm (`forced`: FORCED)."""
  if forced == "none":
    return jnp.zeros((), bool)
  bound = jnp.sqrt(t.astype(jnp.result_type(float))) - counts.shape[-1] / 2
  low = jnp.min(counts)
  return low < bound if forced == "strict" else low <= bound


def d_tracking(key: jax.Array, counts: jax.Array, t: jax.Array, w: jax.Array,
               forced: str) -> jax.Array:
  """[] int32, D-tracking's arm: the furthest below t w, or the least sampled
  while some arm is unpulled or starved (`starved`)."""
  tracked = argmax_random_ties(key, t.astype(w.dtype) * w - counts)
  explore = starved(counts, t, forced) | (jnp.min(counts) == 0)
  return jnp.where(explore, least_sampled(counts), tracked).astype(jnp.int32)


def c_tracking(key: jax.Array, counts: jax.Array, t: jax.Array, w: jax.Array,
               deficit: jax.Array, forced: str, projection: str) -> tuple:
  """(arm, deficit): C-tracking's arm, the largest cumulative deficit of the
  (eps-projected, `projection`) allocations, or the least sampled while some
  arm is unpulled (uniform steps then) or starved; the deficit after the pull."""
  num_arms = counts.shape[-1]
  initial = jnp.min(counts) == 0
  floor = 0.5 / jnp.sqrt(num_arms**2 + t.astype(w.dtype))
  tracked_w = eps_projection(w, floor) if projection == "eps" else w
  deficit = deficit + jnp.where(initial, 1.0 / num_arms, tracked_w)
  tracked = argmax_random_ties(key, deficit)
  explore = initial | starved(counts, t, forced)
  arm = jnp.where(explore, least_sampled(counts), tracked).astype(jnp.int32)
  return arm, deficit.at[arm].add(-1.0)


def check_lazy_factor(lazy_factor: Optional[float]) -> Optional[float]:
  if lazy_factor is None:
    return None
  if not lazy_factor > 1.0:
    raise ValueError(f"lazy_factor must be > 1 (or None for every step), got {lazy_factor!r}")
  return float(lazy_factor)


def tracked_allocation(family: Family, arm_stats: ArmStats, state,
                       lazy_factor: Optional[float], solver: str):
  """(w, next_solve, warm): w(nu_hat_t), recomputed every step or on the lazy schedule
  (`on_schedule`, with the exact oracle: warm-started or from scratch). A model
  with its own oracle (`Family.solve`: per-arm Gaussian variances) is solved by it
  whatever the solver, the warm start being that of the nested bisection."""
  dtype = state.w.dtype

  def solve(warm, due):
    if solver != "exact" and family.solve is None:
      sol = oracle.warm_solve(family, arm_stats.mean, warm, update=due,
                              newton_steps=warm_steps(solver))
      return jnp.where(due, sol.w.astype(dtype), state.w), sol.start
    return oracle.exact_solve(family, arm_stats.mean)[0].astype(dtype), warm

  return on_schedule(arm_stats, state, lazy_factor, solve)


def on_schedule(arm_stats: ArmStats, state, lazy_factor: Optional[float], solve):
  """(w, next_solve, warm): `solve(warm, due) -> (w, warm)` run every step or on the
  lazy schedule t_{n+1} = ceil(f t_n), from `state` (w, next_solve, warm).

  Nothing is recomputed while some arm has not been pulled (the exact oracle,
  without a lazy schedule, solves at every step, and its w is then unused).
  """
  t = arm_stats.t
  pulled = jnp.min(arm_stats.counts) > 0
  due = pulled if lazy_factor is None else (t >= state.next_solve) & pulled
  if lazy_factor is not None:
    grown = jnp.ceil(t.astype(jnp.float32) * lazy_factor).astype(t.dtype)
    next_solve = jnp.where(due, jnp.maximum(t + 1, grown), state.next_solve)
  else:
    next_solve = state.next_solve

  if lazy_factor is None:
    w, warm = solve(state.warm, due)
    return w, next_solve, warm
  # A while_loop of at most one pass, not lax.cond: vmap turns a cond with a
  # batched predicate into a select that runs the oracle in every lane at every
  # step, while a batched while_loop skips its body when no lane is due (and
  # keeps the carry of the lanes that are not).
  def recompute(carry):
    _, _, warm = carry
    return (jnp.zeros_like(due),) + solve(warm, due)

  _, w, warm = jax.lax.while_loop(lambda carry: carry[0], recompute,
                                  (due, state.w, state.warm))
  return w, next_solve, warm


def tracking_params(lazy_factor, solver, **options):
  """A tracking rule's params, for its repr and cache key: the lazy factor and the
  solver, then `options` ({name: (value, default)}) where not the default."""
  extra = tuple((k, v) for k, (v, default) in options.items() if v != default)
  return (("lazy_factor", lazy_factor), ("solver", solver)) + extra


@cached
def tas_d(lazy_factor: Optional[float] = None, solver: str = "warm",
          forced: str = "strict") -> Rule:
  """Track-and-Stop with D-tracking and forced exploration (Garivier & Kaufmann 2016).

  Args:
    lazy_factor: None to recompute w(nu_hat) every step (default), or f > 1 to
      recompute it only at geometrically spaced times t_{n+1} = ceil(f t_n).
    solver: "warm" (two Newton steps from the last step's iterate), "warm-converged"
      (Newton to convergence) or "exact" (nested bisection from scratch, the
      reference).
    forced: forced exploration, "strict" (min T < sqrt(t) - K/2, the paper),
      "sqrt-t-k2" (min T <= sqrt(t) - K/2, the authors' code) or "none".

  Returns:
    The rule.
  """
  lazy_factor = check_lazy_factor(lazy_factor)
  solver = check_solver(solver)
  forced = check_choice("forced", forced, FORCED)

  def init(num_arms):
    return DTrackingState(w=jnp.full(num_arms, 1.0 / num_arms, jnp.result_type(float)),
                          next_solve=jnp.zeros((), count_dtype()), warm=warm_start(num_arms))

  def select(key, family, arm_stats, state):
    counts, t = arm_stats.counts, arm_stats.t
    w, next_solve, warm = tracked_allocation(family, arm_stats, state, lazy_factor, solver)
    arm = d_tracking(key, counts, t, w, forced)
    return arm, DTrackingState(w=w, next_solve=next_solve, warm=warm)

  return Rule("tas-d", init, select,
              tracking_params(lazy_factor, solver, forced=(forced, "strict")))


@cached
def tas_c(lazy_factor: Optional[float] = None, solver: str = "warm",
          forced: str = "none", projection: str = "eps") -> Rule:
  """Track-and-Stop with C-tracking of eps-projected allocations (Garivier & Kaufmann 2016).

  Args:
    lazy_factor: None to recompute w(nu_hat) every step (default), or f > 1 to
      recompute it only at geometrically spaced times t_{n+1} = ceil(f t_n).
    solver: "warm" (two Newton steps from the last step's iterate), "warm-converged"
      (Newton to convergence) or "exact" (nested bisection from scratch, the
      reference).
    forced: forced exploration, "none" (the paper's C-tracking), "strict" or
      "sqrt-t-k2" (min T <= sqrt(t) - K/2, the authors' code).
    projection: "eps" (the paper's eps-projection of w) or "none" (the code).

  Returns:
    The rule.
  """
  lazy_factor = check_lazy_factor(lazy_factor)
  solver = check_solver(solver)
  forced = check_choice("forced", forced, FORCED)
  projection = check_choice("projection", projection, PROJECTIONS)

  def init(num_arms):
    return CTrackingState(w=jnp.full(num_arms, 1.0 / num_arms, jnp.result_type(float)),
                          next_solve=jnp.zeros((), count_dtype()), warm=warm_start(num_arms),
                          deficit=jnp.zeros(num_arms, jnp.result_type(float)))

  def select(key, family, arm_stats, state):
    w, next_solve, warm = tracked_allocation(family, arm_stats, state, lazy_factor, solver)
    arm, deficit = c_tracking(key, arm_stats.counts, arm_stats.t, w, state.deficit, forced,
                              projection)
    return arm, CTrackingState(w=w, next_solve=next_solve, warm=warm, deficit=deficit)

  return Rule("tas-c", init, select,
              tracking_params(lazy_factor, solver, forced=(forced, "none"),
                      projection=(projection, "eps")))
