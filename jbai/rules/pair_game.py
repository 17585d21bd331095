"""A matrix game whose rows each hold two arms (Frank-Wolfe sampling's step for the top m).

The game is max over z in the simplex of min over the active rows k of

  a_k z_{head_k} + b_k z_{tail_k} - c_k,

row k's payoff being a_k at its arm head_k, b_k at its arm tail_k (a, b >= 0,
head_k != tail_k) and 0 elsewhere, less c_k: FWS's direction for pieces that are
pairs of arms, as the top m's pairs (i, j) (`jbai.rules.fws_top_m`), where a and
b are the gradient's entries of the pair's transport cost and c its value.

A column that no active row holds pays -c_k against every row, no more than a
column that one holds, so an optimum lives on the held columns. With one or two
active rows the game is solved in closed form (`two_rows`): a 2 x n game has an
optimum on one column or on two that the rows rank in opposite orders, mixed so
that both rows pay the same, and with the held columns of two rows (four, counted
with repeats) that is four vertices and six mixtures to compare. With more rows
`jbai.rules.matrix_game.simplex` solves the game: up to ROWS active rows, where
the dense game's tableau is the larger, the compact game of those rows and the
arms they hold (`compact`: [ROWS, 2 ROWS], against [P, K], 36 x 20 for the top 2
of 20 arms), else the dense game. Under `jax.vmap` on a CPU every lane takes the
closed form, and the simplex runs only on the lanes with three active rows or
more, GROUP at a time, the largest games first (`matrix_game.on_lanes`, once for
the compact games and once for the dense ones): along fws-top-m's trials at K =
20 (Gaussian, top 2) about one lane-step in five has two active rows or more, 8
to 10% three or more, and 0.2% more than eight. A lane's result
does not depend on the pool. On an accelerator every lane runs all three, as a
plain vmap does.
"""

import functools

import jax
import jax.numpy as jnp

from jbai.rules.matrix_game import by_lanes, simplex
from jbai.ties import first_index, maxima, or_argmax, running_count

# The active rows of the games that `compact` solves.
ROWS = 8


def payoff(a, b, c, head, tail, num_arms: int) -> jax.Array:
  """[P, num_arms] the game's dense payoff matrix (module docstring)."""
  return _columns(a, b, c, head, tail, jnp.arange(num_arms))


def _columns(a, b, c, head, tail, arms) -> jax.Array:
  """[P, C] the game's payoff at the columns of the arms `arms` [C]."""
  return (jnp.where(head[:, None] == arms, a[:, None], 0.0) +
          jnp.where(tail[:, None] == arms, b[:, None], 0.0) - c[:, None])


def two_rows(a, b, c, head, tail, active, num_arms: int):
  """(z [num_arms], value): the game's solution where one or two rows are active
  (with one, the best response: the better of its two arms, head at a tie).

  Of the optima up to rounding (`jbai.ties.maxima`: a vertex and a mixture often
  tie, and which rounds higher would turn on how XLA compiles the step), the first
  of the four vertices head_1, tail_1, head_2, tail_2 (rows in index order) and
  then of the six mixtures, in the order of their pairs of vertices."""
  index = jnp.arange(a.shape[-1])
  first = first_index(active)
  second = first_index(active & (index > first))
  second = jnp.where(second < index.shape[0], second, first)
  # Gathers: a masked sum over the rows would have XLA:CPU recompute each array's
  # producers (the pairs' transport) over every row, once per sum.
  rows = [tuple(v[k] for v in (a, b, c, head, tail)) for k in (first, second)]
  arms = jnp.stack([rows[0][3], rows[0][4], rows[1][3], rows[1][4]])          # [4]
  u, v = (jnp.where(arms == h, a_, 0.0) + jnp.where(arms == t, b_, 0.0) - c_
          for a_, b_, c_, h, t in rows)                                        # [4] each
  d = u - v
  s, t = (jnp.asarray(i) for i in zip(*[(i, j) for i in range(4) for j in range(i + 1, 4)]))
  # The mixture of vertices s and t where both rows pay the same: weight lam on s.
  apart = d[s] * d[t] < 0
  lam = jnp.where(apart, d[t] / jnp.where(apart, d[t] - d[s], 1.0), 0.0)
  mixed = jnp.minimum(lam * u[s] + (1 - lam) * u[t], lam * v[s] + (1 - lam) * v[t])
  values = jnp.concatenate([jnp.minimum(u, v), jnp.where(apart, mixed, -jnp.inf)])  # [10]
  best = or_argmax(first_index(maxima(values)), values)
  mixture = jnp.maximum(best - 4, 0)
  weight_s = jnp.where(best < 4, 1.0, lam[mixture])
  arm_s, arm_t = arms[jnp.where(best < 4, best, s[mixture])], arms[t[mixture]]
  arm = jnp.arange(num_arms)
  z = (jnp.where(arm == arm_s, weight_s, 0.0) + jnp.where(arm == arm_t, 1 - weight_s, 0.0))
  return z.astype(a.dtype), values[best]


def compact(a, b, c, head, tail, active, num_arms: int):
  """`simplex` on the game of the first ROWS active rows and the arms they hold
  ([ROWS, 2 ROWS]: a column for each row's two arms, repeated where rows share
  one), for a game of at most ROWS active rows: the columns that no active row
  holds are dominated (module docstring), so the value is the full game's, and z
  gathers the weights of an arm's columns."""
  slot = jnp.where(active, running_count(active) - 1, ROWS)      # dropped beyond ROWS
  a, b, c, head, tail = (jnp.zeros(ROWS, v.dtype).at[slot].set(v, mode="drop")
                         for v in (a, b, c, head, tail))
  arms = jnp.concatenate([head, tail])
  z, value = simplex(_columns(a, b, c, head, tail, arms), jnp.arange(ROWS) < jnp.sum(active))
  z = jnp.sum(jnp.where(arms[:, None] == jnp.arange(num_arms), z[:, None], 0.0), axis=0)
  return z, value


def _dense(a, b, c, head, tail, active, num_arms: int):
  return simplex(payoff(a, b, c, head, tail, num_arms), active)


def _largest_compact(rows: int, num_arms: int) -> int:
  """The most active rows of a game that `compact` solves: ROWS where its tableau
  ([2 ROWS + 1, 3 ROWS + 1]) is smaller than the dense game's ([K + 1, P + K + 1]),
  else 2 (none: the dense simplex solves every game of three rows or more)."""
  smaller = (2 * ROWS + 1) * (3 * ROWS + 1) < (num_arms + 1) * (rows + num_arms + 1)
  return ROWS if smaller else 2


def _sizes(low: int, high: int):
  """A game's weight for `on_lanes`: its active rows where it has more than `low`
  and at most `high`, else 0."""
  def weight(a, b, c, head, tail, active):
    size = jnp.sum(active)
    return jnp.where((size > low) & (size <= high), size, 0)

  return weight


def _parts(num_arms: int, rows: int):
  """(closed, *passes) for `matrix_game.by_lanes`: the closed form, `compact` on
  the games of three to `_largest_compact` active rows, the dense simplex on
  larger ones (module docstring)."""
  largest = _largest_compact(rows, num_arms)
  passes = [(functools.partial(compact, num_arms=num_arms), _sizes(2, largest)),
            (functools.partial(_dense, num_arms=num_arms), _sizes(largest, rows))]
  return (functools.partial(two_rows, num_arms=num_arms),
          *(passes if largest > 2 else passes[1:]))


@functools.lru_cache(maxsize=None)
def _solver(num_arms: int, rows: int):
  """`_parts`' solver, and its pool rule under vmap (module docstring)."""
  return by_lanes(*_parts(num_arms, rows))


def solve_pair_game(a: jax.Array, b: jax.Array, c: jax.Array, head: jax.Array,
                    tail: jax.Array, active: jax.Array, num_arms: int):
  """max over z in the simplex of min over the active k of a_k z_{head_k} + b_k z_{tail_k} - c_k.

  Args:
    a: [P] the rows' payoffs at their first arm, >= 0.
    b: [P] the rows' payoffs at their second arm, >= 0.
    c: [P] the rows' offsets.
    head: [P] int, the rows' first arms.
    tail: [P] int, the rows' second arms (head_k != tail_k).
    active: [P] bool, the rows the minimiser may choose (at least one).
    num_arms: the number of columns (arms).

  Returns:
    (z, value): [num_arms] the maximiser's optimal mixture, [] the game's value.
  """
  return _solver(num_arms, a.shape[-1])(a, b, c, head, tail, active)
