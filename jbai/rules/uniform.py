"""Uniform sampling: pull the arms in turn (the least-sampled arm, lowest index first)."""

from jbai.builders import cached
from jbai.rules.base import Rule, least_sampled, no_state


@cached
def uniform() -> Rule:
  """Uniform allocation, round-robin over the arms: the baseline every rule should beat."""

  def select(key, family, arm_stats, state):
    del key, family
    return least_sampled(arm_stats.counts), state

  return Rule("uniform", no_state, select)
