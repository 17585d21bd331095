"""LUCB1 for eps-good answers (Kalyanakrishnan, Tewari, Auer & Stone 2012, Algorithm 1, m = 1).

The paper states LUCB1 with a slack eps: it samples as LUCB1 does (the empirical
best h_t and its strongest contender l_t, `jbai.rules.lucb`) and stops at the
first t where U_{l_t}(t, delta) - L_{h_t}(t, delta) < eps, answering h_t, which
is then eps-good (mu_{h_t} >= max mu - eps) with probability at least 1 - delta.
`jbai.rules.lucb1` is its eps = 0 case; this factory builds the same rule with
the eps stop of `jbai.stops.confidence`, so that a run counts an error as an
answer that is not eps-good (`jbai.stops.eps_good.eps_of`).

Sources checked: the stop U_{l_t} - L_{h_t} < epsilon is best-arm's
LUCBStoppingCondition (its default epsilon = 0.02: `lucb1_eps(eps_good=0.02)`
stops as best-arm's default does). As for `jbai.rules.lucb1`, the paper's
algorithm box and theorem were not checked against its text (no stored copy of
it was found here). Where jbai differs: the stop is checked after every reward
rather than after every round (`jbai.rules.lucb`).
"""

from jbai.eps_transport import check_slack
from jbai.rules.base import Rule
from jbai.rules.lucb import lucb_rule


def lucb1_eps(eps_good: float = 0.1, index: str = "subgaussian", rate: str = "lucb1") -> Rule:
  """LUCB1's eps version (Kalyanakrishnan et al. 2012): stop when L(h_t) > U(l_t) - eps; eps-good answers.

  Args:
    eps_good: the slack eps > 0: the answer is eps-good, mu_answer >= max mu - eps.
    index: confidence index, "subgaussian" (Hoeffding, the paper's) or "kl".
    rate: exploration rate (`jbai.stops.bounds.RATES`).

  Returns:
    The rule; its sampling depends on delta (one level per run), and its own
    stop carries eps_good.

  Raises:
    ValueError: for eps_good <= 0 or not finite (eps = 0 is `jbai.rules.lucb1`).

  Example:
    >>> from jbai import rules
    >>> rules.lucb1_eps(0.05)
    lucb1-eps(eps_good=0.05, index=subgaussian, rate=lucb1)
  """
  return lucb_rule("lucb1-eps", index, rate, check_slack(eps_good, exact_rule="lucb1"))

