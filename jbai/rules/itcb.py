"""ITCB: Improved Transportation Cost Balancing (the paper's eq. sampling rule 2).

TCB with the penalised cost Phi_t(w) = min_{i != top} C_i(w) + log(t w_i) / t in
place of Gamma_t(w), and b_t^min = argmin_{i != top} C_i(T_t/t) + log(T_t(i)) / t
in place of a_t^min. The branches follow the appendix's Lemma con_alloc_4, the
consistent version (eq. sampling rule 2 of the main text reverses them; see
docs/design/paper.md): pull the leader when Phi_t(w'_t) >= Phi_t(T_t/t), else b_t^min.
Forced exploration, r_t = eps / t and tie-breaking as in TCB (jbai.rules.tcb).
"""

from jbai.rules.base import Rule
from jbai.rules.tcb import balance, balancing_rule


def itcb(eps: float = 1.0) -> Rule:
  """ITCB, TCB with a log T_t(i) exploration penalty on the transport costs.

  Args:
    eps: look-ahead step r_t = eps / t.

  Returns:
    The rule.
  """
  return balancing_rule("itcb", eps, _select)


def _select(key, family, arm_stats, state):
  return balance(key, family, arm_stats, state.eps, penalty=True), state
