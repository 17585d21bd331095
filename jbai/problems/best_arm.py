"""Best-arm identification: the arm with the largest mean.

The answer is the best arm a*; the pieces are the K - 1 pairs (a*, j), each costing
the pair transport cost (paper Lemma 1, `jbai.transport.pair_costs`, +inf at a*'s
own index), so that the GLLR is the paper's Lambda_t(top, ch) and the oracle is
the exact one (`jbai.oracle.exact_solve`, Garivier & Kaufmann 2016's nested
bisection). It is top-m at m = 1 (`jbai.problems.top_m`), laid out as the paper's
stop lays it: one leader against every arm. The GLLR stop reads its leader from
the projected sample means (`answer_of = "mean"`), costs at the MLEs, and records
the leader's index: the engine's own stop (`jbai.core.lane.stopping_statistic`
is `statistic(best_arm(), ...)`).
"""

import jax.numpy as jnp

from jbai import ties
from jbai.oracle.exact import exact_solve
from jbai.problems.base import Problem
from jbai.transport import pair_costs

NAME = "best-arm"


def best_arm() -> Problem:
  """The best arm (a unique largest mean).

  Example:
    >>> import jbai
    >>> sol = jbai.problems.oracle(jbai.problems.best_arm(), "gaussian", [1.0, 0.8, 0.5])
    >>> round(float(sol.t_star), 3)
    208.695
  """

  def answer(means):
    return jnp.arange(means.shape[-1]) == ties.argmax(means)

  def costs(family, w, means, at=None, stats=None):  # [K]: pair (a*, j) at j, +inf at a*
    return pair_costs(family, w, means, ties.argmax(means if at is None else at), stats=stats)

  def arms(at, k):
    return ties.argmax(at), jnp.asarray(k, jnp.int32)

  def solve(family, means):
    w, gamma = exact_solve(family, means)
    return w, 1.0 / gamma

  def check(family, means):
    del family
    top = means.max()
    if (means == top).sum() > 1:
      raise ValueError(f"tie for the best arm at mean {float(top)!r} (means "
                       f"{means.tolist()}): the best arm must be unique")

  return Problem(NAME, answer, costs, arms, solve, check, answer_of="mean", arm=True)
