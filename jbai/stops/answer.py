"""The GLLR stop of a question beyond the best arm (`jbai.problems`): top-m, thresholding.

With the counts N_t as weights and the MLEs as means, the empirical answer is
problem.answer(MLE) and the GLLR of the alternatives to it is the smallest of its
pieces' transport costs, min_k c_k(N_t) (`jbai.problems.glr`): for top-m the
smallest pair cost between an arm of the empirical top m and one outside it, for
thresholding min_a N_a kl(mu_hat_a, tau). The trial stops for level delta when it
crosses the threshold beta_t(delta), as the best arm's GLLR does (Garivier &
Kaufmann 2016, Section 3; Degenne & Koolen 2019 for any union of pieces), and
answers the empirical answer, a [K] bool mask of its arms. The threshold sees
the arms of the cheapest piece as the leader and the challenger (one arm twice
for a thresholding piece).

A proven threshold (`Threshold.union`) takes its union bound over the problem's
pieces (`jbai.problems.Problem.pieces`: m (K - m) for the top m, K for
thresholding), so that the stop is delta-correct for the question it answers;
a heuristic one (gk16) or one of the user's gets init(delta, K) as for the best
arm (docs/guide/stops.md).
"""

import jax.numpy as jnp

from jbai import thresholds as thresholds_lib
from jbai.builders import cached
from jbai.problems.base import Problem, checked, piece_count, statistic
from jbai.stops.base import Stop
from jbai.stops.eps_good import eps_gllr

NAME = "answer-gllr"


@cached
def _test_fn(problem: Problem, threshold):
  def test(params, family, arm_stats, rule_state):
    del rule_state
    answer, a, b, value = statistic(problem, family, arm_stats)
    beta = threshold.value(params, family, arm_stats, a, b)
    return answer, b, jnp.broadcast_to(value, beta.shape), beta
  return test


@cached
def _init_fn(problem: Problem, threshold):
  """The threshold's init with the union bound over the problem's pieces
  (`Threshold.union`), or the threshold's own init."""
  if not getattr(threshold, "union", False):
    return threshold.init

  def init(delta, num_arms):
    return threshold.init(delta, num_arms, pieces=piece_count(problem, num_arms))
  return init


def answer_gllr(problem: Problem, threshold="gk16") -> Stop:
  """The GLLR stop of `problem`, against a GLLR threshold.

  Args:
    problem: a `jbai.problems.Problem`: a set's (`top_m(m)`, `above(level)`),
      whose stop answers a [K] bool mask; or an arm's, whose stop answers the
      arm's index: the best arm's (the engine's stop with `threshold`, trial for
      trial), or an eps-good one's (`jbai.stops.eps_gllr`, which it returns).
    threshold: a `jbai.thresholds.Threshold` or its name.

  Example:
    >>> from jbai import problems, stops
    >>> stops.answer_gllr(problems.above(0.5))
    answer-gllr(problem=above(level=0.5), threshold=gk16())
  """
  if checked(problem).name == "eps-good":
    return eps_gllr(dict(problem.params)["eps"], threshold)
  if isinstance(threshold, str):
    threshold = thresholds_lib.get(threshold)
  return Stop(NAME, _init_fn(problem, threshold), _test_fn(problem, threshold),
              (("problem", problem), ("threshold", threshold)),
              problem=None if problem.arm else problem)
