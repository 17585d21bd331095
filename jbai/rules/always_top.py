"""The paper's ablation "sampling over-sampled arms" (Section Numerical Experiments).

Keeps TCB's forced exploration (pull the least-sampled arm while some
T_t(i) <= ceil(sqrt(t/K))) and otherwise always pulls the empirical top arm, so
the best arm ends over-sampled and Gamma_t(T_t/t) drifts away from Gamma(nu).
"""

import jax.numpy as jnp

from jbai.builders import cached
from jbai.rules.base import Rule, leader, least_sampled, no_state, under_explored


@cached
def always_top() -> Rule:
  """Forced exploration, otherwise the empirical top arm (the paper's ablation)."""

  def select(key, family, arm_stats, state):
    del family
    arm = jnp.where(under_explored(arm_stats.counts, arm_stats.t),
                    least_sampled(arm_stats.counts), leader(key, arm_stats))
    return arm.astype(jnp.int32), state

  return Rule("always-top", no_state, select)
