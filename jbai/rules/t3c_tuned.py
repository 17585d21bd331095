"""T3C with beta tuning: T3C whose beta is re-estimated at every step.

beta_t = w_{a_t}(nu_hat_t): the weight of the empirical best arm a_t (lowest index
among ties) in the optimal allocation at the projected sample means, computed by
the exact oracle (jbai.oracle.exact_solve). While the empirical best arm is tied
the oracle returns the uniform allocation over the tied arms, so beta_t is then
1 / (number of tied arms).

Source: Russo (2016) proves that top-two sampling with beta = beta* = w_{a*}(nu),
the optimal share of the best arm, reaches the optimal rate, and proposes tuning
beta online since beta* is unknown. The TCB paper compares against "T3C with the
beta-tuning routine of Russo (2016)" without spelling the routine out; this
plug-in estimate of beta* is the simplest such routine and is the one used here.
Leader, challenger and exploration are those of T3C (jbai.rules.t3c). The oracle
runs at every step, so a step costs about as much as a Track-and-Stop step.
"""

import jax.numpy as jnp

from jbai import oracle
from jbai.rules.base import Rule
from jbai.rules.top_two import tc_challenger, top_two_rule, ts_leader


def tuned_beta(family, arm_stats):
  """beta_t = w_{a_t}(nu_hat_t), a_t the empirical best arm."""
  w, _ = oracle.exact_solve(family, arm_stats.mean)
  return w[jnp.argmax(arm_stats.mean)]


def t3c_tuned() -> Rule:
  """T3C with beta tuned online to the plug-in optimal top-arm share w_top(nu_hat_t) (Russo 2016).

  Returns:
    The rule.

  Raises:
    ValueError: when first used with a family that has no posterior_sample.
  """
  return top_two_rule("t3c-tuned", (), leader_fn=ts_leader,
                      challenger_fn=tc_challenger, beta=tuned_beta)
