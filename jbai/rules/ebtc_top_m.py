"""EB-TC for top-m: the top-two rule whose leader and challenger are the arms of the
GLLR's cheapest piece.

For the m best arms (`jbai.problems.top_m`), with S_t the empirical top m (the
MLEs' m largest), the pieces of the alternatives are the pairs (i, j),
i in S_t and j outside, each costing the pair transport cost W_t(i, j) at the
counts and the MLEs (`jbai.problems.top_m`), as the stop computes them. The rule takes the cheapest
pair (the lowest index among equal costs), pulls i, the leader, with
probability beta and j, the challenger, otherwise, after You, Qin, Wang & Yang
2023 ("Information-directed selection for top-two algorithms", their top-m
extension of the top-two rules) with a fixed beta. Forced exploration as EB-TC's:
the least-sampled arm while some arm has T_t(i) <= ceil(sqrt(t/K)). At m = 1 the
pair is EB-TC's (the empirical best and its transport-cost challenger). beta is a
runtime value with its policy score (`jbai.rules.top_two`), so `jbai.estimate`
differentiates in it.

Not optimal for m > 1. You et al. 2023 show that a top-two rule with a fixed
beta cannot be asymptotically optimal for top-m identification when m > 1, and
their fix is information-directed selection (IDS), which chooses between leader
and challenger from the current counts and estimates at each step. This rule
keeps a fixed beta: E[tau] / (T* log(1/delta)) need not tend to 1 for m > 1. The
paper's text was not checked here; the rule is what the paragraphs above say.
"""

from jbai.builders import cached
from jbai.problems.base import cheapest
from jbai.problems.top_m import top_m
from jbai.rules.base import Rule
from jbai.rules.top_two import check_beta, top_two_rule


@cached
def _pair(m: int):
  """The pair function of `top_two_rule`: the arms of the cheapest piece."""
  problem = top_m(m)

  def pair(k_lead, k_chal, family, arm_stats, active):
    del k_lead, k_chal, active
    # The stop's own (`jbai.stops.answer_gllr`): XLA computes it once a step.
    _, k, _ = cheapest(problem, family, arm_stats.counts, arm_stats.mle)
    return problem.arms(arm_stats.mle, k)

  return pair


def ebtc_top_m(m: int, beta: float = 0.5) -> Rule:
  """EB-TC for top-m identification: leader and challenger from the cheapest pair.

  Args:
    m: the size of the answer (the run's `top_m(m)`).
    beta: probability of pulling the leader, in (0, 1).

  Example:
    >>> import jbai
    >>> jbai.rules.ebtc_top_m(2)
    ebtc-top-m(m=2, beta=0.5)
  """
  top_m(m)  # checks m
  beta = check_beta(beta)
  rule = top_two_rule("ebtc-top-m", (("m", int(m)), ("beta", beta)), pair_fn=_pair(int(m)),
                      beta=beta, forced_exploration=True)
  return rule._replace(answers=("top-m",))
