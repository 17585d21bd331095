"""A small zero-sum matrix game, solved exactly by the simplex method (Frank-Wolfe sampling's step).

The game is max over z in the simplex of min over the active rows k of
sum_i z_i M[k, i]: the Frank-Wolfe direction of FWS (Wang, Tzeng & Proutiere 2021)
for a problem whose alternatives are a union of pieces, where M[k, i] is the
gradient of piece k's transport cost at arm i, less its value. The authors' code
solves it as a linear program (`solveZeroSumGame`); here it is the textbook
reduction of a game to a linear program with a feasible origin (von Neumann's; Dantzig 1951), solved by
the simplex method in a `lax.while_loop`:

  1. rescale the active rows to payoffs in [1, 2], M' = 1 + (M - lo) / (hi - lo);
  2. the minimiser's program, max sum_{k active} y_k subject to sum_k M'[k, i] y_k
     <= 1 for every column i and y >= 0, starts at the feasible basis of its
     slacks (an inactive row's y has no weight in the objective: it never helps);
  3. pivot: the most improving variable enters (Dantzig's rule), the lowest basic
     index among the tied ratios leaves; after `bland_after` pivots the lowest
     improving index enters instead (Bland's rule, which cannot cycle);
  4. at the optimum, the objective row's entries under the slacks are the dual
     solution u >= 0, with sum u = sum y = 1 / V': z = u / sum u, and the value
     V = lo + (V' - 1) (hi - lo).

Each pivot costs O(P K) for P rows and K columns. The result is exact up to
rounding; where the game has several optima, an LP solver and this one may
return different ones.

A game with one active row is the maximiser's best response: the simplex takes
one pivot, whose ratio test picks the lowest column among the row's maxima (up
to the test's tolerance), and `best_response` computes that pivot's z and value
alone. Under `jax.vmap` on a CPU (a pool's lanes; `jax.custom_batching.custom_vmap`
and `lax.platform_dependent`, as `jbai.ties.common_path`) every lane takes it
where its game has one active row, and the simplex runs on the other lanes
only, GROUP at a time: a pool's while loop over pivots otherwise runs every
lane until its slowest game ends (at K = 20 a lane in five has two active rows
or more). A lane's result does not depend on the other lanes or on the pool's
width. On an accelerator every lane runs both, as a plain vmap does.

fws-top-m's games, whose rows each hold two arms, go to `jbai.rules.pair_game`,
which solves one or two active rows in closed form and passes larger games to
`simplex` through the same pool rule (`by_lanes`).
"""

import functools

import jax
import jax.numpy as jnp

# The lanes whose games the simplex solves at a time, under vmap: one width at
# every pool's width, so that a lane's pivots compile to one program (XLA:CPU
# rounds a [300, 21, 57] pool's pivots otherwise than a [150, ...] one's). Of 4,
# 8, 12 and 16, 8 gives the cheapest step (docs/performance.md).
GROUP = 8


def _scaled(payoff, active):
  """(M', lo, width): the active rows' payoffs rescaled to [1, 2] (step 1)."""
  lo = jnp.min(jnp.where(active[:, None], payoff, jnp.inf))
  hi = jnp.max(jnp.where(active[:, None], payoff, -jnp.inf))
  width = jnp.maximum(hi - lo, jnp.finfo(payoff.dtype).tiny)
  return jnp.where(active[:, None], 1.0 + (payoff - lo) / width, 1.0), lo, width


def simplex(payoff: jax.Array, active: jax.Array, max_pivots: int = 0, bland_after: int = 0):
  """`solve_matrix_game` by the simplex method alone (module docstring), for any
  number of active rows; its arguments and results are `solve_matrix_game`'s."""
  rows, cols = payoff.shape
  dtype = payoff.dtype
  scaled, lo, width = _scaled(payoff, active)                     # [P, K]
  # The tableau of the minimiser's program: a row per column i of the game, then
  # the objective; the variables y (P), the slacks (K), and the right-hand side.
  body = jnp.concatenate([scaled.T, jnp.eye(cols, dtype=dtype),
                          jnp.ones((cols, 1), dtype)], axis=1)
  goal = jnp.concatenate([-active.astype(dtype), jnp.zeros(cols + 1, dtype)])[None, :]
  tableau = jnp.concatenate([body, goal], axis=0)                 # [K + 1, P + K + 1]
  basis = rows + jnp.arange(cols)                                  # the slacks
  tol = 1024 * jnp.finfo(dtype).eps
  index = jnp.arange(rows + cols)

  def entering(tableau, n):
    reduced = tableau[-1, :-1]
    improves = reduced < -tol
    lowest = jnp.min(jnp.where(improves, index, rows + cols))
    steepest = jnp.argmin(reduced)
    return jnp.where(n < (bland_after or rows + cols), steepest, lowest), jnp.any(improves)

  def pivot(carry):
    tableau, basis, n = carry
    j, _ = entering(tableau, n)
    column, rhs = tableau[:-1, j], tableau[:-1, -1]
    fits = column > tol
    ratio = jnp.where(fits, rhs / jnp.where(fits, column, 1.0), jnp.inf)
    least = jnp.min(ratio)
    tied = fits & (ratio <= least + tol * jnp.maximum(least, 1.0))
    r = jnp.argmin(jnp.where(tied, basis, rows + cols + 1))        # Bland: the lowest basic index
    row = tableau[r] / tableau[r, j]
    tableau = tableau - tableau[:, j][:, None] * row[None, :]
    tableau = tableau.at[r].set(row)
    return tableau, basis.at[r].set(j), n + 1

  def running(carry):
    tableau, _, n = carry
    return entering(tableau, n)[1] & (n < (max_pivots or 4 * (rows + cols)))

  tableau, _, _ = jax.lax.while_loop(running, pivot, (tableau, basis, jnp.zeros((), jnp.int32)))
  u = jnp.maximum(tableau[-1, rows:rows + cols], 0.0)
  total = jnp.sum(u)
  value = lo + (1.0 / tableau[-1, -1] - 1.0) * width
  return u / total, value


def best_response(payoff: jax.Array, active: jax.Array):
  """The simplex's (z, value) for a game with one active row k, in its one pivot:
  z is the vertex of the lowest column i whose ratio 1 / M'[k, i] is within the
  ratio test's tolerance of the least, and the value that pivot leaves."""
  scaled, lo, width = _scaled(payoff, active)
  tol = 1024 * jnp.finfo(payoff.dtype).eps
  column = jnp.max(jnp.where(active[:, None], scaled, -jnp.inf), axis=0)   # M'[k]
  fits = column > tol
  ratio = jnp.where(fits, 1.0 / jnp.where(fits, column, 1.0), jnp.inf)
  least = jnp.min(ratio)
  r = jnp.argmax(fits & (ratio <= least + tol * jnp.maximum(least, 1.0)))
  z = (jnp.arange(payoff.shape[1]) == r).astype(payoff.dtype)
  return z, lo + (1.0 / (1.0 / column[r]) - 1.0) * width


def _heaviest_first(weight):
  """[lanes] int32 the lanes by decreasing weight, the lower lane first among equal
  ones: one sort of integer keys (weight, lane) packed into one int32, faster on
  a CPU than a stable argsort's sort of pairs (docs/changelog.md, issue 74). A
  weight beyond the packing's range counts as its largest, which changes an
  order, never a result."""
  lanes = weight.shape[0]
  heaviest = jnp.iinfo(jnp.int32).max // lanes - 1
  key = (heaviest - jnp.clip(weight, 0, heaviest)) * lanes + jnp.arange(lanes, dtype=jnp.int32)
  return (jnp.sort(key) % lanes).astype(jnp.int32)


def on_lanes(solve, weight: jax.Array, args, out):
  """`out` (a pytree of [lanes, ...] arrays) with the lanes where `weight` [lanes]
  is positive replaced by `jax.vmap(solve)(*args)`'s, computed on those lanes
  alone, GROUP at a time, the heaviest first (a `lax.while_loop` over the groups;
  the last group's extra lanes repeat a lane and are dropped). A lane's result
  does not depend on the others: every group is one program of GROUP lanes, and a
  lane that is done waits, unchanged, for the group's last. Weighing a game by its
  size groups the long games together."""
  lanes = weight.shape[0]
  count = jnp.sum(weight > 0)
  order = _heaviest_first(weight)

  def solve_group(carry):
    start, out = carry
    slot = start + jnp.arange(GROUP)
    at = jnp.take(order, slot, mode="clip")
    solved = jax.vmap(solve)(*(a[at] for a in args))
    at = jnp.where(slot < count, at, lanes)                      # dropped
    return start + GROUP, jax.tree.map(lambda o, s: o.at[at].set(s, mode="drop"), out, solved)

  return jax.lax.while_loop(lambda carry: carry[0] < count, solve_group,
                            (jnp.zeros((), count.dtype), out))[1]


def by_weight(closed, *passes):
  """One game's function from `by_lanes`' parts: the `solve` of the pass (solve,
  weight) whose weight is positive (one at most), else `closed` (a `lax.switch`)."""
  branches = [closed] + [solve for solve, _ in passes]

  def one_game(*args):
    index = sum((k + 1) * (weight(*args) > 0).astype(jnp.int32)
                for k, (_, weight) in enumerate(passes))
    return jax.lax.switch(index, branches, *args)

  return one_game


def by_lanes(closed, *passes):
  """`by_weight(closed, *passes)` (one game's function), with a batching rule:
  under `jax.vmap` on a CPU `closed` runs on every lane and each pass (solve,
  weight) on the lanes of positive weight alone (`on_lanes`); on an accelerator
  (`lax.platform_dependent`'s default) the one game's function runs on every
  lane, as a plain vmap does."""
  one_game = by_weight(closed, *passes)
  pooled = jax.custom_batching.custom_vmap(one_game)

  @pooled.def_vmap
  def _pool(lanes, in_batched, *args):
    args = [a if batched else jnp.broadcast_to(a, (lanes,) + jnp.shape(a))
            for a, batched in zip(args, in_batched)]

    def on_cpu(*args):
      out = jax.vmap(closed)(*args)
      for solve, weight in passes:
        out = on_lanes(solve, jax.vmap(weight)(*args), args, out)
      return out

    out = jax.lax.platform_dependent(*args, cpu=on_cpu, default=jax.vmap(one_game))
    return out, jax.tree.map(lambda _: True, out)

  return pooled


def _several(payoff, active):
  """A game's weight for `on_lanes`: its active rows where it has several, else 0."""
  size = jnp.sum(active)
  return jnp.where(size > 1, size, 0)


@functools.lru_cache(maxsize=None)
def _solver(max_pivots: int, bland_after: int):
  """The best response where one row is active, else the simplex; under vmap on a
  CPU the best response on every lane and the simplex on the lanes with several
  active rows (module docstring)."""
  return by_lanes(best_response,
                  (functools.partial(simplex, max_pivots=max_pivots, bland_after=bland_after),
                   _several))


def solve_matrix_game(payoff: jax.Array, active: jax.Array, max_pivots: int = 0,
                      bland_after: int = 0):
  """max over z in the simplex of min over the active k of sum_i z_i payoff[k, i].

  Args:
    payoff: [P, K] the maximiser's payoff, row k for the minimiser's choice k.
    active: [P] bool, the rows the minimiser may choose (at least one).
    max_pivots: a cap on the pivots (a safeguard: Bland's rule ends on its own);
      0: 4 (P + K).
    bland_after: the pivots by Dantzig's rule before Bland's; 0: P + K.

  Returns:
    (z, value): [K] the maximiser's optimal mixture, [] the game's value.
  """
  return _solver(max_pivots, bland_after)(payoff, active)
