"""TS-TCI: Thompson-sampling leader, penalised transport-cost challenger (Jourdan et al. 2022).

Leader: the argmax of one posterior draw (as T3C). Challenger (TCI):
argmin_{j != L} W_t(L, j) + log T_t(j). Pull L with probability beta, else the
challenger. Each arm is pulled once first; posterior sampling and the penalty
explore, with no other forced exploration.
"""

from jbai.rules.base import Rule
from jbai.rules.top_two import check_beta, tci_challenger, top_two_rule, ts_leader


def tstci(beta: float = 0.5) -> Rule:
  """TS-TCI, Thompson-sampling leader and penalised transport-cost challenger (Jourdan et al. 2022).

  Args:
    beta: probability of pulling the leader, in (0, 1).

  Returns:
    The rule.

  Raises:
    ValueError: for beta outside (0, 1); when first used with a family that has
      no posterior_sample.
  """
  beta = check_beta(beta)
  return top_two_rule("tstci", (("beta", beta),), leader_fn=ts_leader,
                      challenger_fn=tci_challenger, beta=beta)
