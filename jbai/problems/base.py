"""The answer interface: what the GLLR stop, the oracle and the rules need of a question.

A pure-exploration problem asks for the answer i*(mu) of the unknown means: the best
arm, the m best arms, the arms above a level. A `Problem` is a NamedTuple of pure
functions, built by a factory that closes over its parameters (`jbai.problems.top_m(2)`):

  answer(means [K]) -> [K] bool      the arms in the answer (one for the best arm)
  costs(family, w [K], means [K], at=None, stats=None) -> [P] float
      the alternatives to the answer of `at` (default: `means`) are a union of
      pieces; c_k(w) is the transport cost, from `means`, of the cheapest
      instance of piece k with weights w: concave, nondecreasing and
      1-homogeneous in w, positive where every weight is and `at` answers as
      `means` do (an identifiable answer); +inf at an index that is no piece
      (top-m lays its pairs on an [m, K] grid whose columns in the answer are
      none; the best arm's pairs on [K], its own arm none); `stats` [K, S], the
      arms' summed statistics, comes only for a family with its own
      `Family.pair_costs` (`cheapest`), and a question passes it on or ignores it
  arms(at [K], k) -> (a, b)   the two arms of piece k of the answer of `at` (one
      arm twice for a piece of one arm), which a stopping threshold sees as
      leader and challenger (for the best arm, its arm and the other)
  solve(family, means [K]) -> (w [K], t_star [])   the oracle, for one instance
  check(family, means [K] numpy) -> None   raises ValueError where the answer is
      not identifiable (a tie at its edge, a mean at a level)
  regret(means [K], answer [K] bool) -> []   how far a set answer is from the
      truth, in units of the means: 0 for the right answer (a run to a budget
      reports its mean beside P(error); None for the best arm, whose answer is an
      arm and whose simple regret is mu* - mu_J)
  pieces(K) -> int   how many pieces a stopping threshold's union bound covers:
      the alternatives to a wrong answer lie in one of that many pieces fixed by
      the truth (the best arm's K - 1 pairs (a*, j); top-m's m (K - m) pairs of an
      arm of S* and one outside; thresholding's K arms). None: K - 1
      (`piece_count`). The proven thresholds (`jbai.thresholds`) take their
      union bound over it (docs/guide/stops.md)
  correct(means [K], answer [K] bool) -> [] bool   whether a set answer is right
      at the true means; None: it is the problem's answer (`is_correct`).
      Thresholding with a tolerance eps counts an arm within eps of the level
      right either way

Two fields say how a trial reads it. `answer_of` names the estimate of
`jbai.state.ArmStats` the GLLR stop takes the empirical answer from: "mle" (the
MLEs, where the costs are taken), or "mean" (the projected sample means, as the
paper's stop takes its leader: the best arm and the eps-good arm; the two differ
only for families whose MLE of the mean is not the sample mean, Weibull and the
general ones). `arm` says the answer is one arm, which a trial records as its
index (the best arm, the eps-good arm) rather than as a [K] mask.

The same `costs` gives the GLLR (weights = counts, means = MLEs: `statistic`,
`glr`), a sampling rule's empirical costs (weights = proportions) and the oracle
(T*(nu)^{-1} = max_w min_k c_k(w): `jbai.oracle.pieces`).
"""

import math
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import ties


class Problem(NamedTuple):
  """A pure-exploration question about the means (see the module's docstring)."""

  name: str
  answer: Callable
  costs: Callable
  arms: Callable
  solve: Callable
  check: Callable
  params: tuple = ()
  regret: Optional[Callable] = None
  answer_of: str = "mle"
  arm: bool = False
  pieces: Optional[Callable] = None
  correct: Optional[Callable] = None
  quiet: tuple = ()  # (key, value) pairs of `params` that repr leaves out (a default)

  def __repr__(self):
    shown = [(k, v) for k, v in self.params if (k, v) not in self.quiet]
    return f"{self.name}({', '.join(f'{k}={v}' for k, v in shown)})"

  def __hash__(self):
    return hash((self.name, self.params))

  def __eq__(self, other):
    return isinstance(other, Problem) and (self.name, self.params) == (other.name, other.params)

  def __ne__(self, other):
    return not self == other


def cheapest(problem: Problem, family, counts, mle, at=None, stats=None):
  """(answer [K] bool, k, c_k(N_t)): the empirical answer, of `at` (default: the
  MLEs), and its cheapest piece with the counts as weights and the MLEs as means
  (the lowest index among equal costs), what the GLLR stop and the rules that
  sample its pieces read. `stats` ([K, S], the arms' summed statistics) reaches
  `Problem.costs` for a family with its own `Family.pair_costs` (a variance read
  from them); for every other family the call is as it was."""
  at = mle if at is None else at
  if stats is None or family.pair_costs is None:
    costs = problem.costs(family, jnp.asarray(counts) * 1.0, mle, at)
  else:
    costs = problem.costs(family, jnp.asarray(counts) * 1.0, mle, at, stats=stats)
  k = ties.argmin(costs)
  return problem.answer(at), k, costs[k]


def statistic(problem: Problem, family, stats):
  """(answer, a, b, Lambda_t) of the GLLR stop for `problem` at a trial's
  statistics `stats` (`jbai.state.ArmStats`): the empirical answer (of the
  estimate `problem.answer_of`; its arm, [] int32, for a problem whose answer is
  an arm, else a [K] bool mask), the arms (a, b) of its cheapest piece and that
  piece's cost, min_k c_k(N_t) at the MLEs (`cheapest`). For the best arm it is
  the paper's stop: the leader, its challenger and Lambda_t(leader, challenger)."""
  at = getattr(stats, problem.answer_of)
  answer, k, value = cheapest(problem, family, stats.counts, stats.mle, at, stats.stats)
  a, b = problem.arms(at, k)
  return (a if problem.arm else answer), a, b, value


def glr(problem: Problem, family, counts, mle):
  """(answer [K] bool, Lambda_t) of the GLLR stop for `problem`: the empirical answer
  and the cost of its cheapest alternative, min_k c_k(N_t) (`cheapest`)."""
  answer, _, value = cheapest(problem, family, counts, mle)
  return answer, value


def piece_count(problem: Optional[Problem], num_arms: int) -> int:
  """The number of pieces a threshold's union bound covers for `problem` at K =
  num_arms arms (`Problem.pieces`): K - 1 for the best arm (problem None) and for
  a problem that does not say."""
  if problem is None or problem.pieces is None:
    return num_arms - 1
  return int(problem.pieces(num_arms))


def is_correct(problem: Problem, means, answers):
  """[...] bool: whether each answer set `answers` [..., K] is right at the true
  means [K] (`Problem.correct`; by default, equal to the problem's answer)."""
  answers = jnp.asarray(answers, bool)
  if problem.correct is None:
    return jnp.all(answers == problem.answer(means), axis=-1)
  flat = answers.reshape((-1, answers.shape[-1]))
  return jax.vmap(problem.correct, (None, 0))(means, flat).reshape(answers.shape[:-1])


def scored(problem: Problem, means, answers):
  """(correct [...] bool, regret [...]) of answer sets `answers` [..., K] at one
  instance `means` [K]: whether each is right (`is_correct`), and its
  `Problem.regret`."""
  answers = jnp.asarray(answers, bool)
  flat = answers.reshape((-1, answers.shape[-1]))
  regret = jax.vmap(problem.regret, (None, 0))(means, flat).reshape(answers.shape[:-1])
  return is_correct(problem, means, answers), regret


def real(name: str, value) -> float:
  """A question's numeric parameter as a float: ints, floats and numpy scalars
  pass; a string, a bool or anything else is refused (as `top_m` refuses m =
  "2"), NaN and infinities too.

  Raises:
    ValueError: one line naming `name` and the value.
  """
  if isinstance(value, (str, bytes, bool, np.bool_)) or not isinstance(value, (int, float,
                                                                                  np.number)):
    raise ValueError(f"{name} must be a number, got {value!r}")
  if not math.isfinite(float(value)):
    raise ValueError(f"{name} must be a finite number, got {value!r}")
  return float(value)


def checked(problem) -> Problem:
  """`problem`, once it is a `Problem` (ValueError naming it otherwise)."""
  if not isinstance(problem, Problem):
    raise ValueError(f"problem must be a jbai.problems.Problem (top_m(m), above(level)), "
                     f"got {problem!r}")
  return problem


def batched(fn: Callable, means: jax.Array):
  """fn(means [K]) mapped over the leading axes of means [..., K]."""
  lead = means.shape[:-1]
  flat = means.reshape((-1, means.shape[-1]))
  out = jax.vmap(fn)(flat)
  return jax.tree.map(lambda x: x.reshape(lead + x.shape[1:]), out)
