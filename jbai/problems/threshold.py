"""Thresholding: the arms whose mean is at or above a level tau, to a tolerance eps.

The answer is S = {a : mu_a >= tau}: a mean at the level counts as above it, as
Locatelli, Gutzeit & Carpentier 2016 (APT, S_tau = {mu_a >= tau}) and
banditpylib have it, and every place that classifies reads this one `answer`
(the empirical answer of the GLLR stop and of a recommendation at a budget, the
truth a trial is scored against, the oracle's answer).

With eps = 0 (exact classification) another answer moves one arm across the
level, so the pieces are the arms, arm a's costing w_a kl(mu_a, tau); the GLLR
is min_a N_a kl(mu_hat_a, tau). A mean at the level is not identifiable (its
piece costs 0 whatever the weights).

With eps > 0 (Locatelli et al.'s loss: an arm with |mu_a - tau| <= eps is right
either way) the answer S is wrong only when an arm of S has mu_a < tau - eps or
an arm outside S has mu_a > tau + eps, so arm a's piece costs
w_a kl(mu_a, tau - eps) for a in S and w_a kl(mu_a, tau + eps) otherwise (0
where mu_a is already beyond that end of the band). Every mean is identifiable.

The oracle has a closed form (the thresholding bandit of Garivier, Menard &
Rossi 2017, "Thresholding bandit for dose-ranging: the impact of
monotonicity"; Locatelli et al. 2016 for its fixed-budget complexity):
max_w min_a w_a d_a, with d_a arm a's divergence above, equalises the pieces,

  w*_a = (1 / d_a) / T*(nu),   T*(nu) = sum_a 1 / d_a.

With eps > 0 it is the complexity of the answer S = {mu_a >= tau} (the answer
the stop gives); an arm inside the band may be cheaper to classify the other
way for a family whose kl is not symmetric.

A stopping threshold's union bound covers the K pieces (`pieces`).
"""

import jax.numpy as jnp

from jbai.problems.base import Problem, real

NAME = "above"


def targets(means, level, eps: float = 0.0):
  """[K] the end of the band each arm's piece moves it to: tau - eps for the
  arms at or above the level, tau + eps below (tau at eps = 0)."""
  level = jnp.asarray(level, means.dtype)
  if eps == 0:
    return jnp.broadcast_to(level, means.shape)
  return jnp.where(means >= level, level - eps, level + eps)


def divergences(family, means, level, eps: float = 0.0, at=None):
  """[K] each arm's divergence to the other end of the band of the answer of
  `at` (default: `means`): kl(mu_a, tau) at eps = 0; with eps > 0,
  kl(mu_a, tau -/+ eps), 0 where mu_a lies beyond that end."""
  if eps == 0:
    return family.kl(means, jnp.asarray(level, means.dtype))
  end = targets(means if at is None else at, level, eps)
  up = (means if at is None else at) >= level
  beyond = jnp.where(up, means <= end, means >= end)
  return jnp.where(beyond, 0.0, family.kl(means, end))


def allocation(family, means, level, eps: float = 0.0):
  """(w* [K], T*) of thresholding at `level` to tolerance eps: w*_a = (1 / d_a) /
  T*, T* = sum_a 1 / d_a (`divergences`). A mean at the level with eps = 0 (a
  sample mean in a trial) counts as d = the dtype's tiny: its arm takes the
  whole allocation, the one to tell apart."""
  divergence = divergences(family, means, level, eps)
  inverse = 1.0 / jnp.maximum(divergence, jnp.finfo(means.dtype).tiny)
  t_star = jnp.sum(inverse)
  return inverse / t_star, t_star


def above(level: float, eps: float = 0.0) -> Problem:
  """The arms whose mean is at or above `level`, to a tolerance eps.

  Args:
    level: tau, inside the family's Theta (checked with the family).
    eps: the tolerance, >= 0: an arm with |mu_a - tau| <= eps is right either
      way (Locatelli et al. 2016's loss); 0 (the default) asks for exact
      classification. The band [tau - eps, tau + eps] must lie inside Theta.

  Raises:
    ValueError: for a level that is not a finite number (a string too), or eps
      not a finite number >= 0.

  Example:
    >>> import jbai
    >>> sol = jbai.problems.oracle(jbai.problems.above(0.5), "gaussian", [1.0, 0.8, 0.2])
    >>> [round(float(x), 3) for x in sol.w], round(float(sol.t_star), 3)
    ([0.153, 0.424, 0.424], 52.444)
    >>> jbai.problems.above(0.5, eps=0.1)
    above(level=0.5, eps=0.1)
  """
  level = real("the level", level)
  eps = real("eps (the tolerance around the level)", eps)
  if not eps >= 0:
    raise ValueError(f"eps (the tolerance around the level) must be >= 0, got {eps!r}")

  def answer(means):
    return means >= level

  def costs(family, w, means, at=None, stats=None):  # the pieces are the arms
    del stats  # the divergences to the level read the means alone
    return w * divergences(family, means, level, eps, at)

  def arms(means, k):
    del means
    return k, k

  def solve(family, means):
    return allocation(family, means, level, eps)

  def check(family, means):
    if not (family.lo < level - eps and level + eps < family.hi):
      band = f"the level {level!r}" if eps == 0 else f"the band [{level - eps!r}, {level + eps!r}]"
      raise ValueError(f"{band} must lie inside Theta = ({family.lo}, {family.hi}) of the "
                       f"{family.name} family")
    at = means[means == level]
    if eps == 0 and at.size:
      raise ValueError(f"mean {float(at[0])!r} equals the level {level!r} (means "
                       f"{means.tolist()}): whether it is above is not identifiable (ask "
                       "above(level, eps) with a tolerance eps > 0)")

  def wrong(means, chosen):  # [K] the arms misplaced beyond the tolerance
    return jnp.where(chosen, means < level - eps, means > level + eps)

  def correct(means, chosen):
    return ~jnp.any(wrong(means, chosen))

  def regret(means, chosen):  # the farthest misplaced arm's distance to the level
    if eps == 0:
      wrong_arms = chosen != answer(means)
    else:
      wrong_arms = wrong(means, chosen)
    return jnp.max(jnp.where(wrong_arms, jnp.abs(means - level), 0))

  return Problem(NAME, answer, costs, arms, solve, check, (("level", level), ("eps", eps)),
                 regret, pieces=lambda num_arms: num_arms,
                 correct=None if eps == 0 else correct, quiet=(("eps", 0.0),))
