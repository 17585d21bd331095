"""Best-arm identification: the arm with the largest mean.

The answer is the best arm a*; the pieces are the K - 1 pairs (a*, j), each costing
the pair transport cost (paper Lemma 1), so that the GLLR is the paper's
Lambda_t(top, ch) and the oracle is the exact one (`jbai.oracle.exact_solve`,
Garivier & Kaufmann 2016's nested bisection): top-m at m = 1, with the solver
of best-arm identification.
"""

from jbai.oracle.exact import exact_solve
from jbai.problems.base import Problem
from jbai.problems.top_m import top_m

NAME = "best-arm"


def best_arm() -> Problem:
  """The best arm (a unique largest mean).

  Example:
    >>> import jbai
    >>> sol = jbai.problems.oracle(jbai.problems.best_arm(), "gaussian", [1.0, 0.8, 0.5])
    >>> round(float(sol.t_star), 3)
    208.695
  """
  one = top_m(1)

  def solve(family, means):
    w, gamma = exact_solve(family, means)
    return w, 1.0 / gamma

  def check(family, means):
    del family
    top = means.max()
    if (means == top).sum() > 1:
      raise ValueError(f"tie for the best arm at mean {float(top)!r} (means "
                       f"{means.tolist()}): the best arm must be unique")

  return Problem(NAME, one.answer, one.costs, one.arms, solve, check)
