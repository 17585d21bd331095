"""KL-Racing (Kaufmann & Kalyanakrishnan 2013, Section 3, m = 1).

At the end of round r (`jbai.rules.racing`), the empirical worst active arm w is
eliminated when its KL upper bound is below the empirical best's KL lower bound,
U_w(r) < L_b(r), the bounds of `jbai.stops.bounds` (KL index) at rate
beta(r, delta) = log(k1 K r^alpha / delta), alpha = 1.1, k1 = 405.5 (their
Theorem 3), with the round r in place of t. `kl_racing(rate="gk16")` uses
log((log r + 1) / delta). Own stop: `jbai.stops.elimination`.

Sources checked (the section, theorem and constants above were not checked
against the paper's text: the stored copies here give only its first page, e.g.
https://vdocuments.net/information-compexity-in-bandit-subset-selection-emilie-.html):
  * the elimination test U_w < L_b after every arm of the round is pulled, one
    elimination per round, agrees with the authors' Julia codes, `KLRacing` in
    jsfunc/best-arm-identification BAIalgos.jl (Garivier & Kaufmann, 2016) and
    in EmilieKaufmann/BAI_epsBAI_code EpsilonBAIalgos.jl (2020, with eps = 0);
  * the time at which the rate is evaluated differs between those codes: the
    2016 code calls rate(t, round, delta) with the rate of its experiments,
    explo(t, n, delta) = log((log(t) + 1) / delta), so it evaluates the rate at
    t, the number of rewards so far; the 2020 code calls rate(round, delta).
    jbai evaluates every rate at the round r, as the 2020 code does, so with
    rate="gk16" its threshold is below the 2016 code's (log r < log t) and it
    eliminates earlier than the code of Garivier & Kaufmann 2016's experiments.
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
