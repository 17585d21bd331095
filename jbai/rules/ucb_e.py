"""UCB-E (Audibert, Bubeck & Munos 2010): a highly exploring UCB for the fixed budget.

"Best Arm Identification in Multi-Armed Bandits" (COLT 2010). After one pull of
each arm, pull

  argmax_i  mu_hat_i + sqrt(a / T_i(t)),

the index of UCB with an exploration parameter a in place of a log t: the
paper's analysis takes a = (25/36) (n - K) / H_1 for a budget n and the
complexity H_1 = sum_{i != *} 1 / Delta_i^2 of rewards in [0, 1], which the
rule cannot know, and its experiments run a = c (n - K) / H_1 for a few c. Here a
is the rule's parameter (a runtime value: a sweep over a compiles one program),
in the units of the mean squared; the rule needs no budget of its own. It
recommends the empirical best arm. Ties for the index go to the lowest index.

Sources: the index as the paper states it, checked against the implementation
in xuedong/BestArm.jl (src/fixed_budget/ucbe.jl, `compute_ucbe` in
src/utils.jl: mean + sqrt(a / s), each arm pulled once first). The paper's text
itself was not available here (its abstract only).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.rules.base import Rule, hyper, least_sampled


class UcbeState(NamedTuple):
  a: jax.Array  # [] float, the exploration parameter a > 0 (a runtime value)


def _select(key, family, arm_stats, state):
  del key, family
  counts = arm_stats.counts
  pulls = jnp.maximum(counts, 1).astype(arm_stats.mean.dtype)
  index = arm_stats.mean + jnp.sqrt(state.a / pulls)
  arm = jnp.where(jnp.min(counts) == 0, least_sampled(counts), ties.argmax(index))
  return arm.astype(jnp.int32), state


def ucb_e(a: float = 1.0) -> Rule:
  """UCB-E (Audibert, Bubeck & Munos 2010): the UCB index mu_hat + sqrt(a / T_i) with exploration parameter a.

  Args:
    a: the exploration parameter a > 0 (the paper's theory takes
      a = (25/36) (n - K) / H_1 for rewards in [0, 1]).

  Returns:
    The rule (anytime: it needs no budget).
  """
  if not (isinstance(a, (int, float)) and 0 < a < float("inf")):
    raise ValueError(f"a must be a number > 0, got {a!r}")
  return Rule("ucb-e", lambda num_arms: UcbeState(hyper(a)), _select, (("a", float(a)),),
              runtime=("a",))
