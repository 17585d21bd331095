"""Optimistic Track-and-Stop: tracking the oracle at the most optimistic means.

Degenne, Koolen & Menard 2019 ("Non-Asymptotic Pure Exploration by Solving
Games", the experiments' "O-C") replace the plug-in allocation of
Track-and-Stop by an optimistic one: the allocation w(mu') of the instance mu'
that, in the confidence region {mu' : d(mu_hat_k, mu'_k) <= f(t)/T_t(k) for all k},
has the largest Gamma*(mu') = max_w Gamma(mu', w). For best-arm identification,
with the answer fixed to the empirical best arm i*, each transport cost
C_j(w; mu_{i*}, mu_j) grows with mu_{i*} and falls with mu_j, so that maximum is
at mu'_{i*} = up_{i*} and mu'_k = low_k for k != i*, the ends of the KL
confidence intervals (`jbai.stops.bounds.kl_bound`). This rule takes that mu',
with f(t) = log t as in Koolen's code (tidnabbil, the level of its optimistic
gradients), and the oracle of `jbai.rules.tas` (its `solver` option) at mu'.
It then tracks sum_s w(mu'_s) cumulatively, without projection or forced
exploration (Koolen's `OptimisticTrackAndStop` with `CTracking`).

Where this differs from Koolen's `optimistic_oracle`: that maximises over every
answer's part of the confidence region, where an arm other than i* may be made
best; this rule keeps the answer i* (one oracle call per step instead of K).

Sources checked: Koolen's `OptimisticTrackAndStop` (in
rctzeng/NeurIPS2021-Fast-Pure-Exploration-via-Frank-Wolfe standard/samplingrules.jl,
a copy of tidnabbil's purex_games_paper code) calls `optimistic_oracle(pep, xi, N)` and
tracks its w with the tracking rule alone (its plain `TrackAndStop` wraps the
tracking rule in `ForcedExploration`, the optimistic one does not), as here; the
body of `optimistic_oracle` and of the tracking rule are not in that copy and
were not checked, nor was the paper's text (its stored copies give only its
abstract and introduction). best-arm (utils.py, `optimistic_oracle`) also uses f(t) = log t and
the ends of the KL intervals, one candidate instance per arm j (up_j for j, low_k
elsewhere), but it then keeps the instance whose allocation has the least sum;
every allocation sums to 1, so rounding decides which it keeps (j = 0 on exact
ties), whatever the empirical best arm: it does not maximise Gamma* over the
candidates.
"""

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.rules.base import Rule, leader, least_sampled
from jbai.rules.learners import track_deficit
from jbai.stops.bounds import kl_bound
from jbai.rules.tas import CTrackingState, check_solver, tracked_allocation
from jbai.oracle.warm import warm_start
from jbai.state import count_dtype


def optimistic_means(family, mean, counts, t, top):
  """mu': the leader at its upper KL bound, the other arms at their lower ones."""
  level = jnp.log(jnp.maximum(t, 1).astype(mean.dtype)) / jnp.maximum(counts, 1)
  up = kl_bound(family, mean, level, upper=True)
  low = kl_bound(family, mean, level, upper=False)
  return jnp.where(jnp.arange(mean.shape[-1]) == top, up, low)


@cached
def optimistic_tas(solver: str = "warm") -> Rule:
  """Optimistic Track-and-Stop (Degenne, Koolen & Menard 2019): C-tracking of w at optimistic means.

  Args:
    solver: the oracle, as for tas-c and tas-d: "warm", "warm-converged" or "exact".

  Returns:
    The rule.
  """
  solver = check_solver(solver)

  def init(num_arms):
    dtype = jnp.result_type(float)
    return CTrackingState(w=jnp.full(num_arms, 1.0 / num_arms, dtype),
                          next_solve=jnp.zeros((), count_dtype()), warm=warm_start(num_arms),
                          deficit=jnp.zeros(num_arms, dtype))

  def select(key, family, arm_stats, state):
    k_top, k_arm = jax.random.split(key)
    counts, t = arm_stats.counts, arm_stats.t
    top = leader(k_top, arm_stats)
    hopeful = arm_stats._replace(mean=optimistic_means(family, arm_stats.mean, counts, t, top))
    w, next_solve, warm = tracked_allocation(family, hopeful, state, None, solver)
    initial = jnp.min(counts) == 0
    arm, deficit = track_deficit(jax.random.uniform(k_arm), state.deficit, w,
                                 least_sampled(counts), initial)
    return arm, CTrackingState(w=w, next_solve=next_solve, warm=warm, deficit=deficit)

  return Rule("optimistic-tas", init, select, (("solver", solver),))
