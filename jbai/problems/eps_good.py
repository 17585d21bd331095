"""eps-good identification: an arm whose mean is within eps of the largest.

The answer is the empirical best arm a (an arm i is eps-good when mu_i >= max_j
mu_j - eps, and the best one is); another answer needs some j with lambda_j >=
lambda_a + eps, so the pieces are the arms j != a, each costing

  c_j(w) = min_x w_a kl(mu_a, x) + w_j kl(mu_j, x + eps)

(`jbai.eps_transport.eps_costs`, +inf at a's own index), the GLLR of Garivier &
Kaufmann 2021 for eps-best-arm identification. The oracle is the eps one
(`jbai.oracle.eps.eps_solve`). The GLLR stop reads its leader from the projected
sample means and records its index, as the best arm's does: `statistic(eps_good(eps),
...)` is the eps-GLLR stop's statistic (`jbai.stops.eps_gllr`), and at eps = 0 the
pieces are the best arm's pair costs (`jbai.problems.best_arm`), bit for bit.
"""

from jbai import ties
from jbai.oracle import eps as eps_oracle
from jbai.problems.base import Problem, real
from jbai.problems.best_arm import best_arm
from jbai.eps_transport import check_slack, eps_costs

NAME = "eps-good"


def eps_good(eps: float) -> Problem:
  """An eps-good arm: one whose mean is within eps of the largest.

  Args:
    eps: the additive slack, a finite number >= 0 (below the width of Theta,
      checked with the family).

  Raises:
    ValueError: for eps < 0 or not a finite number (a string too).

  Example:
    >>> import jbai
    >>> sol = jbai.problems.oracle(jbai.problems.eps_good(0.1), "gaussian", [1.0, 0.8, 0.5])
    >>> round(float(sol.t_star), 2), int(sol.answer.argmax())
    (95.24, 0)
  """
  eps = check_slack(real("eps", eps))
  best = best_arm()  # the same answer and arms: the leader and another arm

  def costs(family, w, means, at=None, stats=None):  # [K]: arm j's piece at j, +inf at the answer
    del stats  # the eps-GLLR's costs read the means alone
    return eps_costs(family, w, means, ties.argmax(means if at is None else at), eps)

  def solve(family, means):
    sol = eps_oracle.eps_solve(family, means, eps)
    return sol.w, 1.0 / sol.gamma

  def check(family, means):
    check_slack(eps, family)
    if eps == 0:  # with no slack, only the best arm is eps-good
      best.check(family, means)

  return best._replace(name=NAME, costs=costs, solve=solve, check=check, params=(("eps", eps),))
