"""Thresholding: the arms whose mean is above a level tau.

The answer is S = {a : mu_a > tau}. Another answer moves one arm across the level,
so the pieces are the arms, arm a's costing w_a kl(mu_a, tau); the GLLR is
min_a N_a kl(mu_hat_a, tau), and the oracle has a closed form (Garivier & Kaufmann
2016's thresholding example; Locatelli, Gutzeit & Carpentier 2016 for its
fixed-budget complexity): max_w min_a w_a kl(mu_a, tau) equalises the pieces,

  w*_a = (1 / kl(mu_a, tau)) / T*(nu),   T*(nu) = sum_a 1 / kl(mu_a, tau).

A mean at the level has no answer (its piece costs 0 whatever the weights).
"""

import math

import jax.numpy as jnp

from jbai.problems.base import Problem

NAME = "above"


def allocation(family, means, level):
  """(w* [K], T*) of thresholding at `level`: w*_a = (1 / kl(mu_a, tau)) / T*, T* =
  sum_a 1 / kl(mu_a, tau). A mean at the level (a sample mean in a trial) counts as
  kl = the dtype's tiny: its arm takes the whole allocation, the one to tell apart."""
  divergence = family.kl(means, jnp.asarray(level, means.dtype))
  inverse = 1.0 / jnp.maximum(divergence, jnp.finfo(means.dtype).tiny)
  t_star = jnp.sum(inverse)
  return inverse / t_star, t_star


def above(level: float) -> Problem:
  """The arms whose mean is above `level`.

  Args:
    level: tau, inside the family's Theta (checked with the family).

  Raises:
    ValueError: for a level that is not a finite number.

  Example:
    >>> import jbai
    >>> sol = jbai.problems.oracle(jbai.problems.above(0.5), "gaussian", [1.0, 0.8, 0.2])
    >>> [round(float(x), 3) for x in sol.w], round(float(sol.t_star), 3)
    ([0.153, 0.424, 0.424], 52.444)
  """
  try:
    level = float(level)
  except (TypeError, ValueError):
    raise ValueError(f"the level must be a number, got {level!r}") from None
  if not math.isfinite(level):
    raise ValueError(f"the level must be a finite number, got {level!r}")

  def answer(means):
    return means > level

  def costs(family, w, means, at=None):  # the pieces are the arms, whatever the answer
    del at
    return w * family.kl(means, jnp.asarray(level, means.dtype))

  def arms(means, k):
    del means
    return k, k

  def solve(family, means):
    return allocation(family, means, level)

  def check(family, means):
    if not family.lo < level < family.hi:
      raise ValueError(f"the level {level!r} must lie inside Theta = ({family.lo}, "
                       f"{family.hi}) of the {family.name} family")
    at = means[means == level]
    if at.size:
      raise ValueError(f"mean {float(at[0])!r} equals the level {level!r} (means "
                       f"{means.tolist()}): whether it is above is not identifiable")

  def regret(means, chosen):  # the farthest misplaced arm's distance to the level
    wrong = chosen != answer(means)
    return jnp.max(jnp.where(wrong, jnp.abs(means - level), 0))

  return Problem(NAME, answer, costs, arms, solve, check, (("level", level),), regret)
