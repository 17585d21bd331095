"""T3C: Top-Two Transportation Cost (Shang, de Heide, Kaufmann, Menard, Valko 2020).

Leader: the argmax of one draw from the posterior (Thompson sampling; the
family's conjugate posterior, `Family.posterior_sample`). Challenger: the arm j
other than the leader L with the smallest transport cost W_t(L, j) (counts as
weights, projected sample means; 0 when mu_t(j) >= mu_t(L)), ties at random.
Pull L with probability beta, else the challenger. Each arm is pulled once first;
there is no other forced exploration: posterior sampling explores.
"""

from jbai.rules.base import Rule
from jbai.rules.top_two import check_beta, tc_challenger, top_two_rule, ts_leader


def t3c(beta: float = 0.5) -> Rule:
  """T3C, Thompson-sampling leader and transport-cost challenger (Shang et al. 2020).

  Args:
    beta: probability of pulling the leader, in (0, 1).

  Returns:
    The rule.

  Raises:
    ValueError: for beta outside (0, 1); when first used with a family that has
      no posterior_sample.
  """
  beta = check_beta(beta)
  return top_two_rule("t3c", (("beta", beta),), leader_fn=ts_leader,
                      challenger_fn=tc_challenger, beta=beta)
