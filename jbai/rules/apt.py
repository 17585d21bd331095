"""APT, the anytime parameter-free thresholding rule (Locatelli, Gutzeit & Carpentier 2016).

For the question "which arms have a mean at or above the level tau"
(`jbai.problems.above`), APT pulls the arm whose mean is the least told apart
from the level,

  A_t = argmin_a sqrt(T_t(a)) (|mu_hat_a - tau| + eps),

(their Algorithm 1), the lowest index among equal indices; an arm never pulled
has index 0, so every arm is pulled once first. It needs no budget and no
confidence level, so it runs to a fixed confidence with the thresholding GLLR
stop (`jbai.stops.answer_gllr`) and to a budget alike.

eps is the precision of Locatelli et al.'s loss, under which an arm with
|mu_a - tau| <= eps is right either way: APT(level, eps) samples for, and
answers, the question `above(level, eps)` (0 by default: exact
classification), which scores it by that loss, stops it with that loss's GLLR
and recommends {a : mu_hat_a >= tau}. A run that asks `above(level, eps')`
with eps' != eps is refused (`jbai.stops.question_refusal`: the rule is built
for the question's parameters), so an APT with eps > 0 is never scored on
exact classification.
"""

import jax.numpy as jnp

from jbai import ties
from jbai.builders import cached
from jbai.problems.threshold import above
from jbai.rules.base import Rule, no_state


@cached
def apt(level: float, eps: float = 0.0) -> Rule:
  """APT for the arms above `level`.

  Args:
    level: tau, the level of the thresholding question (the run's
      `above(level, eps)`).
    eps: the precision, >= 0: the tolerance of the question it answers.

  Raises:
    ValueError: for a level that is not finite, or eps < 0.

  Example:
    >>> import jbai
    >>> jbai.rules.apt(0.5)
    apt(level=0.5, eps=0.0)
  """
  asked = dict(above(level, eps).params)  # checked as the question's
  level, eps = asked["level"], asked["eps"]

  def select(key, family, arm_stats, state):
    del key, family
    n = arm_stats.counts.astype(arm_stats.mean.dtype)
    index = jnp.sqrt(n) * (jnp.abs(arm_stats.mean - level) + eps)
    return ties.argmin(index).astype(jnp.int32), state

  return Rule("apt", no_state, select, (("level", level), ("eps", eps)), answers=("above",))
