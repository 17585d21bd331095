"""LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone 2012, Algorithm 1 with m = 1).

Hoeffding bounds U, L = mean +- sqrt(beta(t, delta) / (2 T_t(i))) for rewards in
[0, 1] (the sub-Gaussian index with the family's variance proxy, so sigma
sqrt(2 beta / T) for Gaussian rewards), beta(t, delta) = log(5 K t^4 / (4 delta))
(their Theorem 1, k1 = 5/4; t counts rewards, as best-arm does, not rounds).
Sampling: `jbai.rules.lucb`; own stop: `jbai.stops.confidence` with the same bounds.

Sources checked: the bounds and the rate (k1 = 5/4, t = the number of rewards)
agree with best-arm (algorithms/lucb1.py and LUCBStoppingCondition). Theorem 1
and k1 = 5/4 were not checked against the paper's text (no stored copy of it
was found here). best-arm's LUCB stop has a default precision epsilon = 0.02
(it stops when U_{l_t} - L_{h_t} < 0.02); jbai's stop is the eps = 0 one, so a
comparison with best-arm's defaults stops later here.
"""

from jbai.rules.base import Rule
from jbai.rules.lucb import lucb_rule


def lucb1(index: str = "subgaussian", rate: str = "lucb1") -> Rule:
  """LUCB1 (Kalyanakrishnan et al. 2012): pulls the leader and its strongest contender; stop: confidence.

  Args:
    index: confidence index, "subgaussian" (Hoeffding, the paper's) or "kl".
    rate: exploration rate (`jbai.stops.bounds.RATES`).

  Returns:
    The rule; its sampling depends on delta (one level per run).
  """
  return lucb_rule("lucb1", index, rate)
