"""EB-TC: empirical-best leader, transport-cost challenger (TT-SPRT, Mukherjee 2022).

Leader: the empirical best arm. Challenger: argmin_{j != L} W_t(L, j) (the TC
challenger of T3C; W_t(L, j) is the GLLR of "L beats j" at the sample means). Pull
L with probability beta, else the challenger.

Forced exploration: pull the least-sampled arm while some arm has
T_t(i) <= ceil(sqrt(t/K)) (the set U_t, as in TCB and TT-SPRT). Without it the
rule can stall for ever: an unlucky best arm that trails two tied sub-optimal arms
is never the leader and never the closest challenger (docs/design/paper.md, "Pitfalls").
"""

from jbai.rules.base import Rule
from jbai.rules.top_two import check_beta, eb_leader, tc_challenger, top_two_rule


def ebtc(beta: float = 0.5) -> Rule:
  """EB-TC (TT-SPRT), empirical-best leader and transport-cost challenger, with forced exploration.

  Args:
    beta: probability of pulling the leader, in (0, 1).

  Returns:
    The rule.
  """
  beta = check_beta(beta)
  return top_two_rule("ebtc", (("beta", beta),), leader_fn=eb_leader,
                      challenger_fn=tc_challenger, beta=beta,
                      forced_exploration=True)
