"""Top-m identification: the m arms with the largest means.

The answer S is the set of the m largest means (an arm's index breaks a tie inside
S or outside it; a tie across its edge, mu_(m) = mu_(m+1), has no answer; a run
to a budget's empirical answer breaks ties at random instead: `answer_random_ties`).
Another answer needs some i in S and j outside S with lambda_j > lambda_i, so the
pieces are the pairs (i, j) in S x S^c, each costing the pair transport cost

  c_ij(w) = min_x w_i kl(mu_i, x) + w_j kl(mu_j, x)

(Kaufmann & Kalyanakrishnan 2013, "Information complexity in bandit subset
selection"; Reda, Kaufmann & Delahaye-Duriez 2021, "Top-m identification for
linear bandits", the GLR of their Section 2), by `jbai.transport.transport_cost`
as the best arm's GLLR takes them. `costs` lays the pairs on a grid (`Grid`),
with no gather or sort (each slow under vmap on a CPU, and the stop and the
rules evaluate it at every step): up to PACKED arms, S's arms against the arms
outside S, both picked by one-hot rows of `ranks`; beyond, S's arms (m
arg-maxes) against every arm, S's own columns masked, which spares ranking every
arm against every other. The GLLR of the stop is
the smallest of them at the counts and the MLEs; T*(nu) and w*(nu) come from the
pair pieces' solver (`jbai.oracle.pieces`). At m = 1 this is best-arm identification,
whose pieces are the K - 1 pairs of the best arm (`jbai.problems.best_arm`).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai.oracle.pieces import pairs_solve
from jbai.ties import select
from jbai.problems.base import Problem
from jbai.transport import transport_cost

NAME = "top-m"
PACKED = 8    # up to this many arms, S and S^c come from `ranks` (`places`)
UNROLLED = 8  # beyond, up to this many rows of S come from arg-maxes (`leaders`)


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


def answer_random_ties(key, means, m: int):
  """[K] bool the m largest of `means` [K], equal means in a uniformly random
  order (one uniform per arm from `key`, then the index), where `answer` takes the
  lower index: a run to a budget's empirical answer (`jbai.stops.budget`), which
  then does not depend on the order of the arms. From comparisons, as `ranks`."""
  u = jax.random.uniform(key, means.shape)
  index = jnp.arange(means.shape[-1])
  first = (u[None, :] > u[:, None]) | (
      (u[None, :] == u[:, None]) & (index[None, :] < index[:, None]))  # b before a in a tie
  before = (means[None, :] > means[:, None]) | ((means[None, :] == means[:, None]) & first)
  return jnp.sum(before, axis=-1) < m


def places(means, m: int):
  """([m, K], [K - m, K]) bool: one-hot rows that pick S and S^c in `split`'s
  order, from `ranks` (K^2 comparisons)."""
  rank = ranks(means)
  one_hot = rank[None, :] == jnp.arange(means.shape[-1])[:, None]  # [place, arm]
  return one_hot[:m], one_hot[m:]


def leaders(means, m: int):
  """([m, K], [K]) bool: one-hot rows of the m largest of the finite `means`, in
  `split`'s order, and the answer S, their union. Up to PACKED arms or beyond
  UNROLLED rows from `places` (O(K^2) comparisons, which fuse well at small K;
  one program whatever m); else by m arg-maxes (O(mK); the first of equal means
  is the lower index)."""
  index = jnp.arange(means.shape[-1])
  if means.shape[-1] <= PACKED or m > UNROLLED:
    rows = places(means, m)[0]
    return rows, jnp.any(rows, axis=0)
  rows, answer = [], jnp.zeros(means.shape, bool)
  for _ in range(m):
    rows.append(index == jnp.argmax(jnp.where(answer, -jnp.inf, means)))
    answer = answer | rows[-1]
  return jnp.stack(rows), answer


class Grid(NamedTuple):
  """The pairs (S_r, c) of the top m S and an arm c, R per arm of S.

  rows: [m, K] bool, one-hot rows of S in `split`'s order (`leaders`).
  columns: [R, K] bool, one-hot rows of the arms c: the K - m arms outside S in
    `split`'s order (up to PACKED arms); None beyond, every arm (R = K), since
    reading K - m of K arms through one-hot rows costs (K - m) K masked reads,
    more than the m^2 pairs inside S that the grid then carries.
  live: [R] bool, the columns outside S (their pairs are the pieces).
  """
  rows: jax.Array
  columns: Optional[jax.Array]
  live: jax.Array

  def pick(self, values):
    """[R] the columns' values of `values` [K]."""
    return values if self.columns is None else select(self.columns, values)


def packed(means, m: int) -> Grid:
  """The `Grid` of the pairs (S_r, S^c_s) alone, both in `split`'s order
  (`places`): R = K - m, every column live."""
  top, rest = places(means, m)
  return Grid(top, rest, jnp.ones(rest.shape[0], bool))


def grid(means, m: int) -> Grid:
  """The `Grid` of the top m of `means`: `packed` up to PACKED arms, else S's
  rows (`leaders`) against every arm."""
  if means.shape[-1] <= PACKED:
    return packed(means, m)
  rows, answer = leaders(means, m)
  return Grid(rows, None, ~answer)


def pair_grid(family, w, means, g: Grid):
  """Transport [m, R]: the transport of every pair (S_r, c) of the grid g of
  `means`, with weights w. Callers mask the columns that are not live."""
  return transport_cost(family, select(g.rows, w)[:, None], select(g.rows, means)[:, None],
                        g.pick(w)[None, :], g.pick(means)[None, :])


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
    return leaders(means, m)[1]

  def costs(family, w, means, at=None, stats=None):  # [m R]: pair (S_r, c) at r R + c, +inf where c is in S
    del stats  # the pair grid reads the means alone
    g = grid(means if at is None else at, m)
    return jnp.where(g.live, pair_grid(family, w, means, g).value, jnp.inf).reshape(-1)

  def arms(at, k):
    g = grid(at, m)
    index = jnp.arange(at.shape[-1])
    columns = g.pick(index)
    nth = lambda values, i: jnp.sum(jnp.where(jnp.arange(values.shape[0]) == i, values, 0))
    r, c = k // columns.shape[0], k % columns.shape[0]
    return nth(select(g.rows, index), r).astype(jnp.int32), nth(columns, c).astype(jnp.int32)

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

  return Problem(NAME, answer, costs, arms, solve, check, (("m", m),), regret,
                 pieces=lambda num_arms: m * (num_arms - m))  # the pairs of S* x S*^c
