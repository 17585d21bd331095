"""Chernoff-Racing (Garivier & Kaufmann 2016, Section 5).

At the end of round r (`jbai.rules.racing`, every active arm pulled r times),
the empirical worst active arm w is eliminated when the GLLR of "b beats w"
with equal counts exceeds the threshold,

  r [kl(mean_b, m) + kl(mean_w, m)] > beta(t, delta),  m = (mean_b + mean_w) / 2,

with beta(t, delta) = log((log t + 1) / delta) (their experiments' rate, t the
number of rewards so far; any `jbai.stops.bounds.RATES` entry may be named).
The midpoint m is the minimiser for exponential families with equal counts;
for other families jbai uses the family's transport cost (`jbai.transport`).
Own stop: `jbai.stops.elimination`.

Sources checked: the test, the rate and its time agree with `ChernoffRacing` in
the authors' Julia code (jsfunc/best-arm-identification BAIalgos.jl, Garivier &
Kaufmann 2016): round * (d(MuBest, mid) + d(MuWorst, mid)) > rate(t, 0, delta)
with mid the midpoint, t the number of rewards so far, and the experiments'
rate explo(t, n, delta) = log((log(t) + 1) / delta) (mainBAI.jl). The section
number was not checked against the paper's text (the stored copies here give
only its first page, e.g. https://123dok.net/document/y8g28v2z-optimal-best-arm-identification-with-fixed-confidence.html).
The first test comes one round earlier here than in that code
(`jbai.rules.racing`).
"""

from jbai.builders import cached
from jbai.rules.base import Rule
from jbai.rules.racing import racing_rule
from jbai.stops import bounds as bounds_lib
from jbai.transport import transport_cost


@cached
def _eliminate_fn(rate: str):
  def eliminate(family, arm_stats, b, w, r, log_inv):
    num_arms = arm_stats.counts.shape[-1]
    beta = bounds_lib.rate(rate, arm_stats.t, log_inv, num_arms)
    rf = r.astype(arm_stats.mean.dtype)
    glr = transport_cost(family, rf, arm_stats.mean[b], rf, arm_stats.mean[w]).value
    return glr > beta
  return eliminate


def chernoff_racing(rate: str = "gk16") -> Rule:
  """Chernoff-Racing (Garivier & Kaufmann 2016): rounds, the worst arm out when its GLLR to the best crosses; stop: elimination.

  Args:
    rate: exploration rate (`jbai.stops.bounds.RATES`), at the time t.

  Returns:
    The rule; its sampling depends on delta (one level per run).
  """
  rate = bounds_lib.check_rate(rate)
  return racing_rule("chernoff-racing", _eliminate_fn(rate), (("rate", rate),))
