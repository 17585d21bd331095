"""APT, the anytime parameter-free thresholding rule (Locatelli, Gutzeit & Carpentier 2016).

For the question "which arms have a mean above the level tau" (`jbai.problems.above`),
APT pulls the arm whose mean is the least told apart from the level,

  A_t = argmin_a sqrt(T_t(a)) (|mu_hat_a - tau| + eps),

(their Algorithm 1; eps >= 0 the precision to which the means may be told from the
level, 0 by default), the lowest index among equal indices; an arm never pulled
has index 0, so every arm is pulled once first. It needs no budget and no
confidence level, so it runs to a fixed confidence with the thresholding GLLR
stop (`jbai.stops.answer_gllr`) and to a budget alike.
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
    level: tau, the level of the thresholding question (the run's `above(level)`).
    eps: the precision, >= 0.

  Raises:
    ValueError: for a level that is not finite, or eps < 0.

  Example:
    >>> import jbai
    >>> jbai.rules.apt(0.5)
    apt(level=0.5, eps=0.0)
  """
  level, eps = dict(above(level).params)["level"], float(eps)  # level checked as the question's
  if not eps >= 0:
    raise ValueError(f"eps must be >= 0, got {eps!r}")

  def select(key, family, arm_stats, state):
    del key, family
    n = arm_stats.counts.astype(arm_stats.mean.dtype)
    index = jnp.sqrt(n) * (jnp.abs(arm_stats.mean - level) + eps)
    return ties.argmin(index).astype(jnp.int32), state

  return Rule("apt", no_state, select, (("level", level), ("eps", eps)), answers=("above",))
