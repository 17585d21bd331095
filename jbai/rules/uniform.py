"""Uniform sampling: pull the arms in turn (the least-sampled arm, lowest index first)."""

from jbai.builders import cached
from jbai.rules.base import Rule, least_sampled, no_state

ANSWERS = ("best-arm", "top-m", "above")  # any question: it ignores the rewards


@cached
def uniform() -> Rule:
  """Uniform allocation, round-robin over the arms: the baseline every rule should beat,
  for any question (the best arm, top-m, thresholding)."""

  def select(key, family, arm_stats, state):
    del key, family
    return least_sampled(arm_stats.counts), state

  return Rule("uniform", no_state, select, answers=ANSWERS)
