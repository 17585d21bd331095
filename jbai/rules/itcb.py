"""ITCB: Improved Transportation Cost Balancing (the paper's eq. sampling rule 2).

TCB with the penalised cost Phi_t(w) = min_{i != top} C_i(w) + log(t w_i) / t in
place of Gamma_t(w), and b_t^min = argmin_{i != top} C_i(T_t/t) + log(T_t(i)) / t
in place of a_t^min. The branches follow the appendix (the consistent version, see
READING-NOTES): pull the leader when Phi_t(w'_t) >= Phi_t(T_t/t), else b_t^min.
Forced exploration, r_t = eps / t and tie-breaking as in TCB (jbai.rules.tcb).
"""

from jbai.rules.base import Rule, hyper
from jbai.rules.tcb import BalanceState, balance


def itcb(eps: float = 1.0) -> Rule:
  """ITCB, TCB with a log T_t(i) exploration penalty on the transport costs.

  Args:
    eps: look-ahead step r_t = eps / t.

  Returns:
    The rule.
  """
  if not eps > 0:
    raise ValueError(f"eps must be > 0, got {eps!r}")

  def select(key, family, arm_stats, state):
    return balance(key, family, arm_stats, state.eps, penalty=True), state

  return Rule("itcb", lambda num_arms: BalanceState(hyper(eps)), select,
              (("eps", float(eps)),), runtime=("eps",))
