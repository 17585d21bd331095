"""Pure-exploration questions beyond the best arm, through one answer interface.

  jbai.problems.best_arm()     the arm with the largest mean
  jbai.problems.eps_good(eps)  an arm whose mean is within eps of the largest
  jbai.problems.top_m(m)       the m arms with the largest means
  jbai.problems.above(level)   the arms whose mean is at or above a level (thresholding;
                               above(level, eps): to a tolerance eps, Locatelli et al.'s loss)

Each is a `Problem` (`jbai.problems.base`): its answer, the pieces of the
alternatives with their transport costs, the oracle and its identifiability
check. `oracle` gives T*(nu) and w*(nu) with the input checked; `glr` the GLLR
statistic of a trial's counts and MLEs; `asked` the question of the options top
and above (the command line's --top and --above, a study's keys).

Example:
  >>> import jbai
  >>> sol = jbai.problems.oracle(jbai.problems.top_m(2), "bernoulli", [0.6, 0.5, 0.4, 0.2])
  >>> [bool(x) for x in sol.answer]
  [True, True, False, False]
"""

from typing import NamedTuple, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from jbai import families
from jbai.families.base import Family, check_means
from jbai.problems.base import Problem, batched, checked, glr, statistic
from jbai.problems.best_arm import best_arm
from jbai.problems.eps_good import eps_good
from jbai.problems.judge import is_eps_good, judge
from jbai.problems.threshold import above
from jbai.problems.top_m import top_m

PROBLEMS = {"best-arm": best_arm, "eps-good": eps_good, "top-m": top_m, "above": above}


class Oracle(NamedTuple):
  """T*(nu), w*(nu) and the answer of a problem, per instance."""

  w: jax.Array       # [..., K] float, w*(nu) on the simplex
  t_star: jax.Array  # [...] float, T*(nu)
  answer: jax.Array  # [..., K] bool, the arms in the answer


def check(problem: Problem, family: Family, means, dtype=None) -> np.ndarray:
  """The means [K] or [I, K] as a numpy array, checked for the family (values in
  Theta, two arms or more) and for the problem (an identifiable answer, in float64
  and in `dtype`, the run's; default JAX's default float).

  Raises:
    ValueError: naming the bad value.
  """
  arr = check_means(family, means, dtype, best_arm=False)
  dtype = np.dtype(dtype or jnp.result_type(float))
  for row in arr.reshape(-1, arr.shape[-1]):
    problem.check(family, row)
    problem.check(family, row.astype(dtype))
  return arr


def oracle(problem: Problem, family: Union[Family, str], means) -> Oracle:
  """T*(nu), w*(nu) and the answer of `problem` at each instance, input checked.

  Args:
    problem: a `Problem` (`best_arm()`, `top_m(m)`, `above(level)`).
    family: a `Family` or a built-in family's name.
    means: [K] or [I, K] means; traced means (under the caller's jit, vmap or
      grad) pass unchecked, and T* and w* are differentiable in them.

  Raises:
    ValueError: for means outside Theta, fewer than two arms, or an answer that
      is not identifiable (`Problem.check`).
  """
  family = families.get(family) if isinstance(family, str) else family
  if not isinstance(means, jax.core.Tracer):
    means = check(problem, family, means)
  return _solve(problem, family, jnp.asarray(means, jnp.result_type(means, float)))


@jax.jit(static_argnums=(0, 1))
def _solve(problem: Problem, family: Family, means) -> Oracle:
  w, t_star = batched(lambda mu: problem.solve(family, mu), means)
  return Oracle(w=w, t_star=t_star, answer=batched(problem.answer, means))


def asked(top=None, above=None, names=("top", "above"), eps=None) -> Optional[Problem]:
  """The question of the options top = m (`top_m(m)`) or above = level
  (`above(level, eps)`; eps the tolerance around the level, None: 0), each None
  when not given: None, the best arm, for neither.

  Raises:
    ValueError: for both (named as `names` gives them: "--top" on the command
      line), eps without above, or a bad m, level or eps.
  """
  if top is not None and above is not None:
    raise ValueError(f"{names[0]} and {names[1]} ask two different questions: give one of "
                     "them")
  if eps is not None and above is None:
    raise ValueError(f"eps = {eps!r} is a tolerance around the level of {names[1]}: give "
                     f"{names[1]} with it")
  if top is None and above is None:
    return None
  if top is not None:
    return PROBLEMS["top-m"](top)
  return PROBLEMS["above"](above) if eps is None else PROBLEMS["above"](above, eps)


def question(problem: Optional[Problem] = None, eps_good=None) -> Problem:
  """The question a run asks, as one `Problem`: `problem` (None: `best_arm()`),
  with `eps_good`, the documented alias of problem=eps_good(eps), folded in.

  Raises:
    ValueError: for a problem that is not a `Problem`, eps_good beside a question
      beyond the best arm, or two different slacks.
  """
  if problem is None:
    return best_arm() if eps_good is None else PROBLEMS["eps-good"](eps_good)
  checked(problem)
  if eps_good is None:
    return problem
  if problem.name == "best-arm":
    return PROBLEMS["eps-good"](eps_good)
  if problem.name == "eps-good":
    if float(eps_good) != dict(problem.params)["eps"]:
      raise ValueError(f"{problem!r} and eps_good={eps_good} ask two different slacks: give "
                       "one of them")
    return problem
  raise ValueError(f"eps_good asks for an eps-good best arm; it cannot go with {problem!r}")


def get(name: str, **params) -> Problem:
  """A problem by name: "best-arm", "eps-good" (eps=...), "top-m" (m=...) or "above"
  (level=..., eps=...)."""
  if name not in PROBLEMS:
    raise ValueError(f"unknown problem {name!r}; use one of {sorted(PROBLEMS)}")
  return PROBLEMS[name](**params)


__all__ = ["Oracle", "PROBLEMS", "Problem", "above", "asked", "best_arm", "check", "eps_good",
           "get", "glr", "is_eps_good", "judge", "oracle", "question", "statistic", "top_m"]
