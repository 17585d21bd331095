"""Uniform sampling: pull the arms in turn (the least-sampled arm, lowest index first).

Its counts are fixed in advance: after t pulls arm a has floor(t / K) + [a < t mod K]
(`round_robin`, the rule's `schedule`). So in a run to a budget T on Bernoulli or
Gaussian arms each arm's share of T is one block of rewards, drawn from its exact
law and read up to the arm's share of each checkpoint (`jbai.core.blocks.share`):
the trial's law is that of the rewards drawn one by one, its bits those of every
run to the same budget, not those of `jbai.simulate`'s trial (docs/guide/budget.md).
"""

import jax

from jbai.builders import cached
from jbai.rules.base import Rule, least_sampled, no_state

ANSWERS = ("best-arm", "top-m", "above")  # any question: it ignores the rewards


def round_robin(arm: jax.Array, t: jax.Array, num_arms: int) -> jax.Array:
  """[] the count of `arm` after t pulls in turn, floor(t / K) + [arm < t mod K]
  (t's dtype): the counts that `select` gives at every time.

  Example:
    >>> import jax.numpy as jnp
    >>> [int(round_robin(jnp.int32(a), jnp.int32(7), 3)) for a in range(3)]
    [3, 2, 2]
  """
  return t // num_arms + (arm < t % num_arms).astype(t.dtype)


@cached
def uniform() -> Rule:
  """Uniform allocation, round-robin over the arms: the baseline every rule should beat,
  for any question (the best arm, top-m, thresholding)."""

  def select(key, family, arm_stats, state):
    del key, family
    return least_sampled(arm_stats.counts), state

  return Rule("uniform", no_state, select, answers=ANSWERS, schedule=round_robin)
