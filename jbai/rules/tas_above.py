"""Track-and-Stop for thresholding: D-tracking of the closed-form allocation.

For the arms above a level tau (`jbai.problems.above`) the optimal allocation is
w*_a(nu) = (1 / kl(mu_a, tau)) / sum_b 1 / kl(mu_b, tau) (`jbai.problems.threshold`).
The rule tracks it at the sample means as Track-and-Stop's D-tracking does
(Garivier & Kaufmann 2016; `jbai.rules.tas.d_tracking`): pull the arm furthest
below t w*_a(nu_hat_t) (ties at random), or the least-sampled arm while some arm
is unpulled or has T_t(a) < sqrt(t) - K/2. A sample mean at the level takes the
whole allocation (`jbai.problems.threshold.allocation`): that arm must be told
apart. With the thresholding GLLR stop (`jbai.stops.answer_gllr`), E[tau] /
(T*(nu) log(1/delta)) tends to 1 as delta goes to 0.
"""

from jbai.builders import cached
from jbai.problems.threshold import above, allocation
from jbai.rules.base import Rule, no_state
from jbai.rules.tas import d_tracking


@cached
def tas_above(level: float) -> Rule:
  """Track-and-Stop (D-tracking) for the arms above `level`.

  Args:
    level: tau, the level of the thresholding question (the run's `above(level)`).

  Raises:
    ValueError: for a level that is not finite.

  Example:
    >>> import jbai
    >>> jbai.rules.tas_above(0.5)
    tas-above(level=0.5)
  """
  level = dict(above(level).params)["level"]  # checked as the question checks it

  def select(key, family, arm_stats, state):
    w, _ = allocation(family, arm_stats.mean, level)
    return d_tracking(key, arm_stats.counts, arm_stats.t, w, "strict"), state

  return Rule("tas-above", no_state, select, (("level", level),), answers=("above",))
