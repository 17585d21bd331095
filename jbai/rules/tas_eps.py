"""Track-and-Stop for eps-good answers (Garivier & Kaufmann 2021), C- and D-tracking.

The rules of `jbai.rules.tas` with the eps oracle in place of the exact one: after
one pull of each arm they track w*_eps(nu_hat_t), the optimal allocation of the
eps-good characteristic time T*_eps at the sample means (`jbai.oracle.eps`), and
stop with the eps-GLLR (`jbai.stops.eps_gllr`, against gk16 by default), whose
complexity T*_eps is. D-tracking pulls the least-sampled arm while some arm has
T_t(a) < sqrt(t) - K/2, else argmax_a t w_a - T_t(a); C-tracking pulls argmax_a
sum_{s <= t} w^{eps_s}_a(nu_hat_s) - T_t(a), w^{eps_s} the projection of w on
{w_a >= eps_s}, eps_s = (K^2 + s)^{-1/2} / 2 (as `jbai.rules.tas`, whose helpers
these rules share: `forced`, `projection` and `lazy_factor` mean the same).

Source: the code of Garivier & Kaufmann 2021 (EmilieKaufmann/BAI_epsBAI_code,
EpsilonBAIalgos.jl, `TrackAndStopD` and `TrackAndStopC` on `OptimalWeightsEpsilon`,
stopped by `PGLRT`), checked here. Where these rules differ from it:
  * the defaults are the 2016 paper's, as `tas-d` and `tas-c` have them: forced
    exploration "strict" for D, none and the eps-projection for C. The code
    explores when min_a T_t(a) <= max(sqrt(t) - K/2, 0) in both rules and sums
    the weights without projection in C: `tas_d_eps(forced="sqrt-t-k2")` and
    `tas_c_eps(forced="sqrt-t-k2", projection="none")` are its rules;
  * the code solves the oracle for every eps-good arm and tracks the weights of
    the first arm of smallest time; the maximum is always attained at an
    empirical best arm (`jbai.oracle.eps`, module docstring), and these rules
    solve for the lowest-index one, the same arm as the code's, and the arm that
    the eps-GLLR answers (the code's PGLRT answers the tied best arm of largest
    statistic);
  * the argmax of the tracking is broken at random here, at the lowest index there.
The paper's text was not checked (its stored copies here give only the abstract).

The oracle (`solver`): "warm" (default) takes NEWTON_STEPS = 2 Newton steps from
the last step's iterate (`jbai.oracle.eps_warm`: the warm start of issue 28 in
the eps problem's own coordinates, no loop, so that a step costs the same in
every lane), "exact" runs the nested bisection `jbai.oracle.eps_solve` from
scratch at every step (the reference). The warm
oracle does not handle a minimiser stopped at lo (means within eps of lo = 1e-3
for the exponential and Weibull families; use solver="exact" there).
"""

from typing import Optional

import jax.numpy as jnp

from jbai.builders import cached
from jbai.eps_transport import check_slack
from jbai.families.base import Family
from jbai.oracle.eps import eps_solve
from jbai.oracle.eps_warm import NEWTON_STEPS, eps_warm_solve, eps_warm_start
from jbai.rules.base import Rule
from jbai.rules.tas import (FORCED, PROJECTIONS, CTrackingState, DTrackingState, c_tracking,
                            check_choice, check_lazy_factor, d_tracking, on_schedule,
                            tracking_params)
from jbai.state import ArmStats, count_dtype
from jbai.stops.eps_good import eps_gllr

SOLVERS = ("warm", "exact")


def tracked_eps_allocation(family: Family, arm_stats: ArmStats, state, eps: float,
                           lazy_factor: Optional[float], solver: str):
  """(w, next_solve, warm): w*_eps(nu_hat_t), every step or on the lazy schedule
  (`jbai.rules.tas.on_schedule`, with the eps oracle)."""
  dtype = state.w.dtype

  def solve(warm, due):
    if solver == "warm":
      sol = eps_warm_solve(family, arm_stats.mean, eps, warm, update=due,
                           newton_steps=NEWTON_STEPS)
      return jnp.where(due, sol.w.astype(dtype), state.w), sol.start
    return jnp.where(due, eps_solve(family, arm_stats.mean, eps).w.astype(dtype),
                     state.w), warm

  return on_schedule(arm_stats, state, lazy_factor, solve)


def _check(exact_rule, eps_good, lazy_factor, solver, forced):
  return (check_slack(eps_good, exact_rule=exact_rule), check_lazy_factor(lazy_factor),
          check_choice("solver", solver, SOLVERS), check_choice("forced", forced, FORCED))


@cached
def _select_d(eps: float, lazy_factor, solver: str, forced: str):
  def select(key, family, arm_stats, state):
    w, next_solve, warm = tracked_eps_allocation(family, arm_stats, state, eps,
                                                 lazy_factor, solver)
    arm = d_tracking(key, arm_stats.counts, arm_stats.t, w, forced)
    return arm, DTrackingState(w=w, next_solve=next_solve, warm=warm)
  return select


@cached
def _select_c(eps: float, lazy_factor, solver: str, forced: str, projection: str):
  def select(key, family, arm_stats, state):
    w, next_solve, warm = tracked_eps_allocation(family, arm_stats, state, eps,
                                                 lazy_factor, solver)
    arm, deficit = c_tracking(key, arm_stats.counts, arm_stats.t, w, state.deficit, forced,
                              projection)
    return arm, CTrackingState(w=w, next_solve=next_solve, warm=warm, deficit=deficit)
  return select


def _uniform(num_arms):
  return jnp.full(num_arms, 1.0 / num_arms, jnp.result_type(float))


def tas_d_eps(eps_good: float = 0.1, lazy_factor: Optional[float] = None,
              solver: str = "warm", forced: str = "strict") -> Rule:
  """Track-and-Stop for eps-good answers, D-tracking of w*_eps (Garivier & Kaufmann 2021); stop: eps-GLLR.

  Args:
    eps_good: the slack eps > 0 of the oracle and of the stop: the answer is
      eps-good, mu_answer >= max mu - eps.
    lazy_factor: None to recompute w*_eps(nu_hat) every step (default), or f > 1
      for geometrically spaced times, as `jbai.rules.tas_d`.
    solver: "warm" (two Newton steps from the last iterate) or "exact" (nested
      bisection from scratch, the reference).
    forced: forced exploration, "strict" (the 2016 paper), "sqrt-t-k2" (the
      authors' code) or "none".

  Returns:
    The rule, with the eps-GLLR against gk16 as its own stop.

  Raises:
    ValueError: for eps_good <= 0 or not finite (eps = 0 is `jbai.rules.tas_d`),
      or an unknown solver or forced.

  Example:
    >>> from jbai import rules
    >>> rules.tas_d_eps(0.1)
    tas-d-eps(eps_good=0.1, lazy_factor=None, solver=warm)
  """
  eps, lazy_factor, solver, forced = _check("tas-d", eps_good, lazy_factor, solver, forced)

  def init(num_arms):
    return DTrackingState(w=_uniform(num_arms), next_solve=jnp.zeros((), count_dtype()),
                          warm=eps_warm_start(num_arms))

  return Rule("tas-d-eps", init, _select_d(eps, lazy_factor, solver, forced),
              (("eps_good", eps),) + tracking_params(lazy_factor, solver,
                                             forced=(forced, "strict")),
              stop=eps_gllr(eps, "gk16"))


def tas_c_eps(eps_good: float = 0.1, lazy_factor: Optional[float] = None,
              solver: str = "warm", forced: str = "none", projection: str = "eps") -> Rule:
  """Track-and-Stop for eps-good answers, C-tracking of w*_eps (Garivier & Kaufmann 2021); stop: eps-GLLR.

  Args:
    eps_good: the slack eps > 0 of the oracle and of the stop.
    lazy_factor: None to recompute w*_eps(nu_hat) every step (default), or f > 1.
    solver: "warm" or "exact", as `tas_d_eps`.
    forced: forced exploration, "none" (the 2016 paper's C-tracking), "strict"
      or "sqrt-t-k2" (the authors' code).
    projection: "eps" (the 2016 paper's eps-projection of w) or "none" (the code).

  Returns:
    The rule, with the eps-GLLR against gk16 as its own stop.

  Raises:
    ValueError: as `tas_d_eps`, and for an unknown projection.

  Example:
    >>> from jbai import rules
    >>> rules.tas_c_eps(0.1, forced="sqrt-t-k2", projection="none")
    tas-c-eps(eps_good=0.1, lazy_factor=None, solver=warm, forced=sqrt-t-k2, projection=none)
  """
  eps, lazy_factor, solver, forced = _check("tas-c", eps_good, lazy_factor, solver, forced)
  projection = check_choice("projection", projection, PROJECTIONS)

  def init(num_arms):
    return CTrackingState(w=_uniform(num_arms), next_solve=jnp.zeros((), count_dtype()),
                          warm=eps_warm_start(num_arms),
                          deficit=jnp.zeros(num_arms, jnp.result_type(float)))

  return Rule("tas-c-eps", init, _select_c(eps, lazy_factor, solver, forced, projection),
              (("eps_good", eps),) + tracking_params(lazy_factor, solver, forced=(forced, "none"),
                                             projection=(projection, "eps")),
              stop=eps_gllr(eps, "gk16"))
