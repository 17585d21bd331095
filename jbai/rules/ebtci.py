"""EB-TCI: empirical-best leader, penalised transport-cost challenger (Jourdan et al. 2022).

Leader: the empirical best arm. Challenger (TCI): argmin_{j != L}
W_t(L, j) + log T_t(j). Pull L with probability beta, else the challenger. Each arm
is pulled once first; there is no other forced exploration: the log T_t(j) penalty
makes under-sampled arms the challenger, which is what Jourdan et al. (2022) use
in place of forced exploration for this rule.
"""

from jbai.rules.base import Rule
from jbai.rules.top_two import check_beta, eb_leader, tci_challenger, top_two_rule


def ebtci(beta: float = 0.5) -> Rule:
  """EB-TCI, empirical-best leader and penalised transport-cost challenger (Jourdan et al. 2022).

  Args:
    beta: probability of pulling the leader, in (0, 1).

  Returns:
    The rule.
  """
  beta = check_beta(beta)
  return top_two_rule("ebtci", (("beta", beta),), leader_fn=eb_leader,
                      challenger_fn=tci_challenger, beta=beta)
