"""DKM: AdaHedge against best responses (Degenne, Koolen & Menard 2019, Algorithm 1).

"Non-Asymptotic Pure Exploration by Solving Games" (NeurIPS 2019) samples by
playing the game max_w min_{lambda in Alt(i*)} sum_k w_k d(mu_k, lambda_k) with
an online learner for w and a best response for lambda. After one pull of each
arm, at each step t, with i* the empirical best arm (ties at random):

  1. w_t = the weights of the AdaHedge learner of the answer i* (one learner per
     answer, as the paper's Algorithm 1 and Koolen's code; `shared=True` keeps one
     learner for all answers, as the peer package best-arm does);
  2. lambda_t = the best response to w_t: the closest alternative in Alt(i*), the
     challenger's transport point (`jbai.rules.learners.best_response`);
  3. optimism: the learner gains
     U_k = max(d(up_k, lambda_k), d(low_k, lambda_k), f(t)/T_t(k)), where
     [low_k, up_k] = {x : d(mu_k, x) <= f(t)/T_t(k)} is the KL confidence interval
     and f(t) = log t (Koolen's code, tidnabbil DaBomb's `optimistic_gradient`;
     best-arm uses log(t + 1)); with `optimistic=False` it gains the plain
     gradient d(mu_k, lambda_k) (the non-optimistic game, not covered by the
     paper's sample-complexity bound);
  4. cumulative tracking of sum_s w_s without forced exploration (the optimism
     explores).

The steps above follow Koolen's code (DaBomb with CTracking), which the paper's
experiments ran, as the module's author read it. The stop is jbai's GLLR against
the run's threshold.

Sources checked: against best-arm (algorithms/adahedge.py, AdaHedgeBestResponse):
steps 1 to 4 agree (the best response through the weighted midpoint, the
optimistic gains max(d(up_k, lambda_k), d(low_k, lambda_k), f(t)/T_t(k)), the
cumulative tracking argmin(T_t - sum_s w_s)) but for f(t) = log(t + 1), its one
learner for all answers, and its ties (i* and the tracked arm at the lowest
index there, at random here). Against Koolen's `DaBomb` (in
rctzeng/NeurIPS2021-Fast-Pure-Exploration-via-Frank-Wolfe standard/samplingrules.jl,
a copy of tidnabbil's purex_games_paper code): one AdaHedge learner per answer
(`hs[istar]`), the best response of `glrt`, the optimistic gradient
max(d(up, lambda), d(down, lambda), log(t)/N_k) with the intervals at level
log(t)/N_k, and tracking of the learner's w, as here; its comment places the
algorithm in "Section 3.1 in Degenne, Koolen and Menard, 2019". Its tracking
rule (tracking.jl) and AdaHedge (regret.jl) are not in that copy and were not
checked. Not checked: the paper's Algorithm 1, Section 3.1 and its equations
(the stored copies here, e.g. the NeurIPS metadata
https://papers.nips.cc/paper/2019/file/8d1de7457fa769ece8d93a13a59c8552-Metadata.json
and arXiv 1906.10431, could be read only up to the abstract and introduction).
"""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.rules.base import Rule, leader, least_sampled
from jbai.rules.learners import (Hedge, best_response, hedge_init, hedge_update,
                                 hedge_weights, track_deficit)
from jbai.stops.bounds import kl_bound


class DKMState(NamedTuple):
  hedge: Hedge        # AdaHedge, [K, K] losses (one row per answer; [1, K] if shared)
  deficit: jax.Array  # [K] float, sum_s w_s - T_t


# How far inside a bounded Theta the gain's KL reads lambda_k (a fraction of hi - lo).
# An arm whose sample mean sits at an end of Theta (a Bernoulli arm with no reward
# yet) keeps lambda_k there, and d(up_k, lambda_k) is infinite: the KL of the family
# would clamp it at a level that depends on the float dtype (about 350 up_k in
# float64, 44 up_k in float32), and AdaHedge's Delta, and so tau, with it. 2^-23 is
# exact at both ends in float32 and float64 (so the gain is the same in both); it
# caps the gain near 16 up_k (best-arm clamps at 1e-8, 18 up_k).
EDGE = 2.0**-23


def optimistic_gain(family, mean, counts, t, alt):
  """U_k = max(d(up_k, lambda_k), d(low_k, lambda_k), log(t) / T_t(k)) (step 3),
  with lambda_k kept EDGE inside a bounded Theta."""
  level = jnp.log(jnp.maximum(t, 1).astype(mean.dtype)) / jnp.maximum(counts, 1)
  up = kl_bound(family, mean, level, upper=True)
  low = kl_bound(family, mean, level, upper=False)
  if math.isfinite(family.lo) and math.isfinite(family.hi):
    margin = EDGE * (family.hi - family.lo)
    alt = jnp.clip(alt, family.lo + margin, family.hi - margin)
  return jnp.maximum(jnp.maximum(family.kl(up, alt), family.kl(low, alt)), level)


@cached
def dkm(optimistic: bool = True, shared: bool = False) -> Rule:
  """DKM game rule: AdaHedge against best responses, with optimism (Degenne, Koolen & Menard 2019).

  Args:
    optimistic: gain the optimistic gradient (the paper) or the plain one.
    shared: one AdaHedge learner for all answers (best-arm's code) instead of
      one per answer (the paper).

  Returns:
    The rule.
  """
  optimistic, shared = bool(optimistic), bool(shared)

  def init(num_arms):
    dtype = jnp.result_type(float)
    return DKMState(hedge=hedge_init(1 if shared else num_arms, num_arms, dtype),
                    deficit=jnp.zeros(num_arms, dtype))

  def select(key, family, arm_stats, state):
    k_top, k_resp, k_arm = jax.random.split(key, 3)
    counts, t, mean = arm_stats.counts, arm_stats.t, arm_stats.mean
    initial = jnp.min(counts) == 0
    top = leader(k_top, arm_stats)
    row = jnp.zeros_like(top) if shared else top
    hedge = state.hedge
    w = hedge_weights(hedge.loss[row], hedge.delta[row])
    resp = best_response(k_resp, family, w, mean, top)
    gain = (optimistic_gain(family, mean, counts, t, resp.alt) if optimistic
            else resp.gradient)
    updated = hedge_update(hedge, row, -gain.astype(w.dtype))
    hedge = jax.tree.map(lambda new, old: jnp.where(initial, old, new), updated, hedge)
    arm, deficit = track_deficit(jax.random.uniform(k_arm), state.deficit, w,
                                 least_sampled(counts), initial)
    return arm, DKMState(hedge=hedge, deficit=deficit)

  return Rule("dkm", init, select, (("optimistic", optimistic), ("shared", shared)))
