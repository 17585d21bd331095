"""eps-good identification: an arm whose mean is within eps of the largest.

The answer is the empirical best arm a (an arm i is eps-good when mu_i >= max_j
mu_j - eps, and the best one is); another answer needs some j with lambda_j >=
lambda_a + eps, so the pieces are the arms j != a, each costing

  c_j(w) = min_x w_a kl(mu_a, x) + w_j kl(mu_j, x + eps)

(`jbai.stops.eps_good.eps_costs`, +inf at a's own index), the GLLR of Garivier &
Kaufmann 2021 for eps-best-arm identification. The oracle is the eps one
(`jbai.oracle.eps.eps_solve`). The GLLR stop reads its leader from the projected
sample means and records its index, as the best arm's does: `statistic(eps_good(eps),
...)` is the eps-GLLR stop's statistic (`jbai.stops.eps_gllr`), and at eps = 0 the
pieces are the best arm's pair costs (`jbai.problems.best_arm`), bit for bit.
"""

import jax.numpy as jnp

from jbai import ties
from jbai.oracle import eps as eps_oracle  # a module: it may be loading, as it imports the stops
from jbai.problems.base import Problem
from jbai.stops.eps_good import check_slack, eps_costs

NAME = "eps-good"


def eps_good(eps: float) -> Problem:
  """An eps-good arm: one whose mean is within eps of the largest.

  Args:
    eps: the additive slack, a finite number >= 0 (below the width of Theta,
      checked with the family).

  Raises:
    ValueError: for eps < 0 or not a finite number.

  Example:
    >>> import jbai
    >>> sol = jbai.problems.oracle(jbai.problems.eps_good(0.1), "gaussian", [1.0, 0.8, 0.5])
    >>> round(float(sol.t_star), 2), int(sol.answer.argmax())
    (95.24, 0)
  """
  eps = check_slack(eps)

  def answer(means):
    return jnp.arange(means.shape[-1]) == ties.argmax(means)

  def costs(family, w, means, at=None):  # [K]: arm j's piece at j, +inf at the answer
    return eps_costs(family, w, means, ties.argmax(means if at is None else at), eps)

  def arms(at, k):
    return ties.argmax(at), jnp.asarray(k, jnp.int32)

  def solve(family, means):
    sol = eps_oracle.eps_solve(family, means, eps)
    return sol.w, 1.0 / sol.gamma

  def check(family, means):
    eps_oracle.check_eps(family, eps)
    top = means.max()
    if eps == 0 and (means == top).sum() > 1:
      raise ValueError(f"tie for the best arm at mean {float(top)!r} (means "
                       f"{means.tolist()}): with eps = 0 the best arm must be unique")

  return Problem(NAME, answer, costs, arms, solve, check, (("eps", eps),), answer_of="mean",
                 arm=True)
