"""Best challenger: the sampling rule of Garivier & Kaufmann 2016's experiments (their code).

This is the "best challenger" rule of Garivier & Kaufmann's Julia code for
"Optimal Best Arm Identification with Fixed Confidence" (COLT 2016; `ChernoffBC`
in jsfunc/best-arm-identification BAIalgos.jl, whose comment calls it the rule
"described in experimental section of [Garivier and Kaufmann 2016]"; the same
function is `chernoff_bc` in xuedong/BestArm.jl src/fixed_confidence/best_challenger.jl),
not Russo 2016's top-two rule of the same name. After one pull of each arm, at
each step t, with B the empirical best arm (ties at random):

  1. forced exploration: if min_a T_t(a) <= sqrt(t) - K/2, pull the least-sampled arm;
  2. else the challenger C = argmin_{a != B} of the GLLR transport cost with the
     counts as weights, T_t(B) d(mu_B, x_a) + T_t(a) d(mu_a, x_a) (the stopping
     statistic's minimiser; ties at random);
  3. pull B if T_t(B) / (T_t(B) + T_t(C)) < w_B / (w_B + w_C), else C, where
     w = w(mu_hat_t) is the optimal allocation at the sample means (the oracle of
     `jbai.rules.tas`, whose `solver` option it takes).

Sources checked: steps 1 to 3 agree with that code (forced exploration when
minimum(N) <= max(sqrt(t) - K/2, 0), t the number of rewards so far; B at
random among ties). Where it differs: its challenger is the lowest index among
ties (a strict < in its loop), at random here. The later EmilieKaufmann/BAI_epsBAI_code has a
`ChernoffBC` with a different rule (it compares d(mu_B, x_C) with d(mu_C, x_C),
"different tie breaking rule compared to the one described in [Garivier and
Kaufmann 2016]", its comment); jbai follows the 2016 one. The paper's
description of the rule was not checked against its text (the stored copies
here give only its first page).
"""

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.rules.base import Rule, leader, least_sampled
from jbai.rules.tas import DTrackingState, check_solver, tracked_allocation
from jbai.oracle.warm import warm_start
from jbai.ties import argmax_random_ties
from jbai.transport import pair_costs
from jbai.state import count_dtype


@cached
def best_challenger(solver: str = "warm") -> Rule:
  """Best challenger of Garivier & Kaufmann 2016's code: the leader or its GLLR challenger, whichever lags w(mu_hat).

  Args:
    solver: the oracle of w(mu_hat), as for tas-c and tas-d: "warm",
      "warm-converged" or "exact".

  Returns:
    The rule.
  """
  solver = check_solver(solver)

  def init(num_arms):
    return DTrackingState(w=jnp.full(num_arms, 1.0 / num_arms, jnp.result_type(float)),
                          next_solve=jnp.zeros((), count_dtype()), warm=warm_start(num_arms))

  def select(key, family, arm_stats, state):
    k_top, k_chal = jax.random.split(key)
    counts, t, mean = arm_stats.counts, arm_stats.t, arm_stats.mean
    num_arms = counts.shape[-1]
    w, next_solve, warm = tracked_allocation(family, arm_stats, state, None, solver)
    top = leader(k_top, arm_stats)
    costs = pair_costs(family, counts, mean, top, stats=arm_stats.stats)
    chal = argmax_random_ties(k_chal, -costs)
    n_top, n_chal = counts[top].astype(w.dtype), counts[chal].astype(w.dtype)
    lags = n_top / (n_top + n_chal) < w[top] / (w[top] + w[chal])
    arm = jnp.where(lags, top, chal)
    starved = jnp.min(counts) <= jnp.sqrt(t.astype(w.dtype)) - num_arms / 2
    arm = jnp.where(starved | (jnp.min(counts) == 0), least_sampled(counts), arm)
    return arm.astype(jnp.int32), DTrackingState(w=w, next_solve=next_solve, warm=warm)

  return Rule("best-challenger", init, select, (("solver", solver),))
