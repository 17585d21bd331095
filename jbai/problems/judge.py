"""Whether an answer is right, and its regret: one call for every question.

A run's answers are judged at the true means of their instance:

  * an arm (the best arm, an eps-good arm: `Problem.arm`) is right where it is
    the best arm, or, with a slack eps > 0, where it is eps-good, mu_J >= mu* -
    eps (`is_eps_good`); its regret is the simple regret mu* - mu_J;
  * a set of arms ([K] bool mask: top-m, thresholding) is right where it is the
    problem's answer (or right by `Problem.correct`, thresholding with a
    tolerance), and its regret is `Problem.regret`.

A trial at the cap answers no arm (-1) or an empty mask and is counted wrong by
the caller (`jbai.core.records.finish`).
"""

import jax
import jax.numpy as jnp

from jbai.problems.base import Problem, is_correct


def is_eps_good(xp, means, answer, eps):
  """Whether each answer is eps-good for its instance: means[..., answer] >=
  max(means) - eps (answer -1, a trial at the cap, is not).

  Args:
    xp: numpy or jax.numpy.
    means: [N, K] the true means of each trial's instance.
    answer: [N, D] answers.
    eps: slack >= 0.
  """
  safe = xp.maximum(answer, 0)
  picked = xp.take_along_axis(means, safe, axis=-1)  # [N, D]
  good = picked >= xp.max(means, axis=-1, keepdims=True) - eps
  return good & (answer >= 0)


def slack(problem: Problem, eps=None):
  """The eps an arm answer of `problem` is judged with: `eps` where given (a
  runtime value, EB-TC_eps's), else the problem's own (0 for the best arm)."""
  return dict(problem.params).get("eps", 0.0) if eps is None else eps


def judge(xp, problem: Problem, means, answers, eps=None) -> tuple:
  """(correct, regret) of `answers` at the true means, for every question.

  Args:
    xp: numpy or jax.numpy, for the arithmetic of arm answers (a set's answers
      are judged with jax, whose result `xp` holds).
    problem: the question (`jbai.problems.Problem`).
    means: [N, K] the true means of each row of answers.
    answers: [N, D] arms (-1: none) where `problem.arm`, else [N, D, K] masks.
    eps: an arm answer's slack where it is a runtime value (`slack`); a number
      0 judges against the best arm exactly.

  Returns:
    (correct [N, D] bool, regret [N, D]): an arm answer's simple regret mu* -
    mu_J (at the best arm's mean for -1), a set's `Problem.regret` (None for a
    problem without one).
  """
  if problem.arm:
    eps = slack(problem, eps)
    safe = xp.maximum(answers, 0)
    regret = xp.max(means, axis=-1, keepdims=True) - xp.take_along_axis(means, safe, axis=-1)
    if isinstance(eps, (int, float)) and eps == 0:
      return answers == xp.argmax(means, axis=-1)[:, None], regret
    return is_eps_good(xp, means, answers, eps), regret
  means = jnp.asarray(means)
  masks = jnp.asarray(answers, bool)
  rows = jnp.broadcast_to(means[:, None, :], masks.shape).reshape(-1, masks.shape[-1])
  flat = masks.reshape(rows.shape)
  correct = jax.vmap(lambda mu, a: is_correct(problem, mu, a))(rows, flat)
  regret = None if problem.regret is None else jax.vmap(problem.regret)(rows, flat)
  shape = masks.shape[:-1]
  return (xp.asarray(correct.reshape(shape)),
          None if regret is None else xp.asarray(regret.reshape(shape)))
