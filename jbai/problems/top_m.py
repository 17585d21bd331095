"""Top-m identification: the m arms with the largest means.

The answer S is the set of the m largest means (an arm's index breaks a tie inside
S or outside it; a tie across its edge, mu_(m) = mu_(m+1), has no answer). Another
answer needs some i in S and j outside S with lambda_j > lambda_i, so the pieces
are the pairs (i, j) in S x S^c, each costing the pair transport cost

  c_ij(w) = min_x w_i kl(mu_i, x) + w_j kl(mu_j, x)

(Kaufmann & Kalyanakrishnan 2013, "Information complexity in bandit subset
selection"; Reda, Kaufmann & Delahaye-Duriez 2021, "Top-m identification for
linear bandits", the GLR of their Section 2), by `jbai.transport.transport_cost`
as the best arm's GLLR takes them. `costs` selects S and S^c with
one-hot rows built from comparisons (no gather or sort, slow under vmap on a
CPU: the stop and the rules evaluate it at every step). The GLLR of the stop is
the smallest of them at the counts and the MLEs; T*(nu) and w*(nu) come from the
pair pieces' solver (`jbai.oracle.pieces`). At m = 1 this is best-arm identification,
whose pieces are the K - 1 pairs of the best arm (`jbai.problems.best_arm`).
"""

import jax
import jax.numpy as jnp
import numpy as np

from jbai.oracle.pieces import pairs_solve, select
from jbai.problems.base import Problem
from jbai.transport import transport_cost

NAME = "top-m"


def split(means, m: int):
  """(S, S^c): the indices of the m largest means and of the others, each in
  decreasing order of the means (the lower index first among equal means)."""
  order = jnp.argsort(-means, stable=True)
  return order[:m], order[m:]


def ranks(means):
  """[K] int, each arm's place in `split`'s order (0: the largest mean), from
  comparisons: the arms with a larger mean, or an equal one at a lower index,
  rank before it (no sort: a sort under vmap is slow on a CPU)."""
  index = jnp.arange(means.shape[-1])
  before = (means[None, :] > means[:, None]) | (
      (means[None, :] == means[:, None]) & (index[None, :] < index[:, None]))  # [a, b]
  return jnp.sum(before, axis=-1)


def places(means, m: int):
  """([m, K], [K - m, K]) bool: one-hot rows that pick S and S^c in `split`'s order
  (`select` reads them without a gather)."""
  rank = ranks(means)
  one_hot = rank[None, :] == jnp.arange(means.shape[-1])[:, None]  # [place, arm]
  return one_hot[:m], one_hot[m:]


def pair_transport(family, w, means, m: int):
  """(Transport [m, K - m], S rows [m, K], S^c rows [K - m, K]): the transport of
  every pair (S_r, S^c_s) of the top m of `means` and an arm outside it, with
  weights w, and the one-hot rows of `places`."""
  top, rest = places(means, m)
  cost = transport_cost(family, select(top, w)[:, None], select(top, means)[:, None],
                        select(rest, w)[None, :], select(rest, means)[None, :])
  return cost, top, rest


def top_m(m: int) -> Problem:
  """The m best arms.

  Args:
    m: the size of the answer, 1 <= m < K (K is checked with the means).

  Raises:
    ValueError: for m not an integer >= 1.

  Example:
    >>> import jbai
    >>> sol = jbai.problems.oracle(jbai.problems.top_m(2), "gaussian", [1.0, 0.8, 0.5, 0.2])
    >>> round(float(sol.t_star), 3)
    104.99
  """
  if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
    raise ValueError(f"m (the number of arms to find) must be an integer >= 1, got {m!r}")
  m = int(m)

  def answer(means):
    return ranks(means) < m

  def costs(family, w, means):  # [m (K - m)]: pair (S_r, S^c_s) at r (K - m) + s
    return pair_transport(family, w, means, m)[0].value.reshape(-1)

  def arms(means, k):
    top, rest = places(means, m)
    index = jnp.arange(means.shape[-1])
    r, s = k // rest.shape[0], k % rest.shape[0]
    pick = lambda rows, i: jnp.sum(jnp.where(jnp.arange(rows.shape[0]) == i,
                                             select(rows, index), 0))
    return pick(top, r).astype(jnp.int32), pick(rest, s).astype(jnp.int32)

  def solve(family, means):
    top, rest = split(jax.lax.stop_gradient(means), m)
    pairs = jnp.broadcast_arrays(top[:, None], rest[None, :])
    sol = pairs_solve(family, means, pairs[0].reshape(-1), pairs[1].reshape(-1))
    return sol.w, sol.t_star

  def check(family, means):
    del family
    k = means.shape[-1]
    if m >= k:
      raise ValueError(f"m = {m} must be less than the number of arms K = {k}: top-{m} of "
                       f"{k} arms has only one answer")
    ranked = np.sort(means)[::-1]
    if ranked[m - 1] == ranked[m]:
      raise ValueError(
          f"tie across the top {m} at mean {float(ranked[m])!r} (means {means.tolist()}): "
          f"the {m} best arms must be unique")

  def regret(means, chosen):  # the subset's simple regret: the m best means' sum minus S's
    return jnp.sum(jnp.where(answer(means), means, 0)) - jnp.sum(jnp.where(chosen, means, 0))

  return Problem(NAME, answer, costs, arms, solve, check, (("m", m),), regret)
