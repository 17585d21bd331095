"""T3C with beta tuning: T3C whose beta is re-estimated at every step.

beta_t = w_{a_t}(nu_hat_t): the weight of the empirical best arm a_t (lowest index
among ties) in the optimal allocation at the projected sample means. While the
empirical best arm is tied the oracle returns the uniform allocation over the
tied arms, so beta_t is then 1 / (number of tied arms).

Source: Russo (2016) proves that top-two sampling with beta = beta* = w_{a*}(nu),
the optimal share of the best arm, reaches the optimal rate, and proposes tuning
beta online since beta* is unknown. The TCB paper compares against "T3C with the
beta-tuning routine of Russo (2016)" without spelling the routine out; this
plug-in estimate of beta* is the simplest such routine and is the one used here.
Leader, challenger and exploration are those of T3C (jbai.rules.t3c).

The oracle (`solver`, as in Track-and-Stop): "warm" (default) takes two joint
Newton steps of `jbai.oracle.warm_solve` from the previous step's iterate, kept
in the rule's state (the same cost in every lane, at any pool width);
"warm-converged" runs `warm_solve` to convergence; both solve nothing before
every arm has been pulled (beta is unused then: the rule pulls the
least-sampled arm); "exact" runs `jbai.oracle.exact_solve` from scratch at
every step, the reference.
"""

from typing import NamedTuple

import jax.numpy as jnp

from jbai import oracle, ties
from jbai.builders import cached
from jbai.oracle.warm import WarmStart, warm_start
from jbai.rules import top_two
from jbai.rules.base import Rule
from jbai.rules.tas import check_solver, warm_steps
from jbai.rules.top_two import tc_challenger, ts_leader

PAIR = top_two.leader_and_challenger(ts_leader, tc_challenger)  # TS leader, TC challenger

NAME = "t3c-tuned"


class TunedState(NamedTuple):
  warm: WarmStart  # the last solution, the start of the warm oracle


def tuned_beta(family, arm_stats):
  """beta_t = w_{a_t}(nu_hat_t), a_t the empirical best arm (exact oracle)."""
  w, _ = oracle.exact_solve(family, arm_stats.mean)
  return w[ties.argmax(arm_stats.mean)]


@cached
def t3c_tuned(solver: str = "warm") -> Rule:
  """T3C with beta tuned online to the plug-in optimal top-arm share w_top(nu_hat_t) (Russo 2016).

  Args:
    solver: "warm" (two Newton steps from the last step's iterate), "warm-converged"
      (Newton to convergence) or "exact" (nested bisection from scratch, the
      reference).

  Returns:
    The rule.

  Raises:
    ValueError: when first used with a family that has no posterior_sample.
  """
  solver = check_solver(solver)
  params = (("solver", solver),)
  if solver == "exact":
    return top_two.top_two_rule(NAME, params, leader_fn=ts_leader,
                                challenger_fn=tc_challenger, beta=tuned_beta)

  def init(num_arms):
    return TunedState(warm=warm_start(num_arms))

  def select(key, family, arm_stats, state):
    top_two.check_posterior(family, NAME)
    sol = oracle.warm_solve(family, arm_stats.mean, state.warm,
                            update=jnp.min(arm_stats.counts) > 0,
                            newton_steps=warm_steps(solver))
    beta = sol.w[ties.argmax(arm_stats.mean)]
    arm = top_two.top_two_arm(key, family, arm_stats, pair_fn=PAIR, beta=beta,
                              forced_exploration=False)
    return arm, TunedState(warm=sol.start)

  return Rule(NAME, init, select, params)
