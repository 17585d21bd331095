"""FWS for top-m: Frank-Wolfe sampling (Wang, Tzeng & Proutiere 2021) on the pairs of the top m.

Frank-Wolfe sampling for the best arm (`jbai.rules.fws`) solves its game in one
dimension, since every piece there holds the empirical best arm. For the top m the
pieces are the pairs (i, j), i in the empirical top m and j outside it
(`jbai.problems.top_m`), and the game is a matrix game whose rows each hold two
arms, which the authors' code for problems other than the best arm solves as a
linear program (rctzeng/NeurIPS2021-FWS, linear/samplingrules.jl); here
`jbai.rules.pair_game.solve_pair_game` (closed forms up to two active pairs, the
simplex beyond). The rule keeps the Frank-Wolfe iterate
x(t) (uniform at the start) and, after the first pull of every arm, at each round t:

  1. forced exploration: if floor(t/K) is a perfect square, if a piece costs 0 at
     x (a tie across the edge of the empirical top m: no answer to tell apart), or
     where the game has no finite solution, z = (1/K, ..., 1/K);
  2. else, with r_t = t^{-0.9} / K, the active pieces A = {k : f_k(x) < min f + r_t}
     (and the minima up to rounding), f_k the pair's transport cost with weights x
     at the projected sample means, and z solves the game
     max_{z in simplex} min_{k in A} <grad f_k(x), z - x>. By the envelope
     theorem grad f_k(x) has two non-zero entries, kl(mu_i, x*) at i and
     kl(mu_j, x*) at j, x* the pair's transport minimiser (as in `jbai.rules.fws`);
  3. x(t+1) = x(t) + (z - x(t)) / t, and the arm pulled is argmax_k x_k(t+1) / T_t(k)
     (ties at random).

These are the steps, r_t and forced exploration of `jbai.rules.fws` (the authors'
standard/samplingrules.jl) with the pieces of the top m; at m = 1 it is FWS up to
the game's solver and its ties. With the top-m GLLR stop (`jbai.stops.answer_gllr`).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.ties import select
from jbai.problems.top_m import grid, pair_grid, top_m
from jbai.rules.base import Rule, least_sampled
from jbai.rules.fws import is_square
from jbai.rules.pair_game import solve_pair_game
from jbai.ties import argmax_random_ties, maxima


class FWSTopMState(NamedTuple):
  x: jax.Array  # [K] float, the Frank-Wolfe iterate x(t)


def pairs(family, x: jax.Array, mean: jax.Array, m: int):
  """(f, a, b, head, tail), each [P]: the pairs' transport costs f_k(x) at the
  means (+inf where a grid's pair is not a piece), the entries of their gradients
  in x at the arm of S (a) and at the arm outside S (b), and those two arms, on
  `Problem.costs`'s grid (`jbai.problems.top_m.grid`)."""
  g = grid(mean, m)
  cost = pair_grid(family, x, mean, g)
  m_in, m_out = select(g.rows, mean)[:, None], g.pick(mean)[None, :]
  # The KLs are >= 0, but a formula may round a tiny one below 0 at a near tie.
  a = jnp.maximum(family.kl(m_in, cost.x), 0.0)                  # [m, R]
  b = jnp.maximum(family.kl(m_out, cost.x), 0.0)
  arm = jnp.arange(x.shape[-1])
  head, tail = jnp.broadcast_arrays(select(g.rows, arm)[:, None], g.pick(arm)[None, :])
  f = jnp.where(g.live, cost.value, jnp.inf)
  # One array: XLA:CPU otherwise recomputes the transport inside each consumer of
  # f, a and b (the active set, its tolerance, the game's inputs), and may round
  # those copies apart.
  f, a, b = jnp.stack([f, a, b]).reshape(3, -1)
  return f, a, b, head.reshape(-1), tail.reshape(-1)


def fw_direction(family, x: jax.Array, mean: jax.Array, m: int, r: jax.Array):
  """(z [K] on the simplex, min_k f_k(x)): the Frank-Wolfe vertex mixture of step 2
  at the iterate x, for the pairs of the top m at the means `mean`, and the cost
  of the cheapest pair. The game's row k pays <grad f_k, e_i - x> =
  grad f_k[i] - f_k at arm i (`jbai.rules.pair_game`)."""
  f, a, b, head, tail = pairs(family, x, mean, m)
  active = (f < jnp.min(f) + r) | maxima(-f)
  z, _ = solve_pair_game(a, b, f, head, tail, active, x.shape[-1])
  return z, jnp.min(f)


def _init(num_arms: int) -> FWSTopMState:
  return FWSTopMState(x=jnp.full(num_arms, 1.0 / num_arms, jnp.result_type(float)))


@cached
def _select(m: int):
  def select_arm(key, family, arm_stats, state):
    counts, t, mean = arm_stats.counts, arm_stats.t, arm_stats.mean
    num_arms = counts.shape[-1]
    x = state.x
    tf = jnp.maximum(t, 1).astype(x.dtype)
    z, least = fw_direction(family, x, mean.astype(x.dtype), m, tf ** -0.9 / num_arms)
    forced = is_square(t // num_arms) | ~(least > 0) | ~jnp.all(jnp.isfinite(z))
    z = jnp.where(forced, 1.0 / num_arms, z.astype(x.dtype))
    initial = jnp.min(counts) == 0
    x = jnp.where(initial, x, x + (z - x) / tf)
    tracked = argmax_random_ties(key, x / jnp.maximum(counts, 1))
    arm = jnp.where(initial, least_sampled(counts), tracked).astype(jnp.int32)
    return arm, FWSTopMState(x=x)

  return select_arm


def fws_top_m(m: int) -> Rule:
  """Frank-Wolfe sampling for top-m (Wang et al. 2021): one Frank-Wolfe step on the pairs' game per round.

  The game of each round is solved exactly (`jbai.rules.pair_game`); the run
  stops with the top-m GLLR (`jbai.simulate(..., problem=jbai.problems.top_m(m))`).

  Args:
    m: the size of the answer, 1 <= m < K.

  Example:
    >>> import jbai
    >>> jbai.rules.fws_top_m(2)
    fws-top-m(m=2)
  """
  m = top_m(m).params[0][1]  # checked
  return Rule("fws-top-m", _init, _select(m), (("m", m),), answers=("top-m",))
