"""KL-Racing (Kaufmann & Kalyanakrishnan 2013, Section 3, m = 1).

At the end of round r (`jbai.rules.racing`), the empirical worst active arm w is
eliminated when its KL upper bound is below the empirical best's KL lower bound,
U_w(r) < L_b(r), the bounds of `jbai.stops.bounds` (KL index) at rate
beta(r, delta) = log(k1 K r^alpha / delta), alpha = 1.1, k1 = 405.5 (their
Theorem 3), with the round r in place of t as in their racing algorithm.
Garivier & Kaufmann 2016, Table 1, used log((log r + 1) / delta):
`kl_racing(rate="gk16")`. Own stop: `jbai.stops.elimination`.
"""

from jbai.builders import cached
from jbai.rules.base import Rule
from jbai.rules.racing import racing_rule
from jbai.stops import bounds as bounds_lib


@cached
def _eliminate_fn(rate: str):
  def eliminate(family, arm_stats, b, w, r, log_inv):
    num_arms = arm_stats.counts.shape[-1]
    beta = bounds_lib.rate(rate, r, log_inv, num_arms)
    counts, mean = arm_stats.counts, arm_stats.mean
    low, _ = bounds_lib.bounds(family, "kl", counts[b], mean[b], beta, ("lower",))
    return bounds_lib.upper_below(family, "kl", counts[w], mean[w], beta, low)
  return eliminate


def kl_racing(rate: str = "kl-lucb") -> Rule:
  """KL-Racing (Kaufmann & Kalyanakrishnan 2013): rounds, the worst arm out when its KL bounds separate; stop: elimination.

  Args:
    rate: exploration rate (`jbai.stops.bounds.RATES`), at the round r.

  Returns:
    The rule; its sampling depends on delta (one level per run).
  """
  rate = bounds_lib.check_rate(rate)
  return racing_rule("kl-racing", _eliminate_fn(rate), (("rate", rate),))
