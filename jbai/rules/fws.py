"""FWS: Frank-Wolfe sampling (Wang, Tzeng & Proutiere 2021), for best-arm identification.

The rule runs one Frank-Wolfe step per round on the lower-bound problem
max_{x in simplex} F(x), F(x) = min_{j != top} f_j(x), where f_j(x) is the
transport cost of (top, j) with weights x at the projected sample means and top
is the empirical best arm. It keeps the Frank-Wolfe iterate x(t) (state; uniform
at the start) and, after the first pull of every arm, at each round t:

  1. forced exploration: if floor(t/K) is a perfect square, or the empirical
     best arm is not unique, z = (1/K, ..., 1/K); also where the game of step 2
     has no finite solution (a safeguard: a user family's KL may fail at a
     near-tie), so that the iterate x never becomes NaN;
  2. else, with r_t = t^{-0.9} / K, the active set A = {j : f_j(x) < min_i f_i(x) + r_t}
     (the r_t-subdifferential of F at x is the hull of the gradients of f_j, j in A),
     z solves the zero-sum game max_{z in simplex} min_{j in A} <grad f_j(x), z - x>;
  3. x(t+1) = ((t-1)/t) x(t) + z/t, and the arm pulled is argmax_k x_k(t+1) / T_t(k)
     (ties at random).

This is the rule of the authors' code for standard best-arm identification
(rctzeng/NeurIPS2021-Fast-Pure-Exploration-via-Frank-Wolfe,
standard/samplingrules.jl and utilities/envelope.jl): the same r_t, forced
exploration test and tracking step. The gradients and the active set are taken at
the iterate x(t), as there, and not at the empirical proportions T_t/t (which
the tracking step keeps close to x(t)). With one active j the game's solution
is the vertex argmax_k grad f_j(x)_k, which the authors hard-code; the game solver
below returns it too.

The game. By the envelope theorem grad f_j(x) has two non-zero entries,
a_j = kl(mu_top, x_j*) at top and b_j = kl(mu_j, x_j*) at j (x_j* the transport
minimiser), and <grad f_j(x), x> = f_j(x). The game is therefore the linear
program max_z min_{j in A} a_j z_top + b_j z_j - c_j (c_j = f_j(x)). For a fixed
z_top = s, the best value V(s) is the water level v with
sum_{j in A} max(0, (v - s a_j + c_j) / b_j) = 1 - s, which is the smallest of the
levels that the sets {i : d_i <= d_j}, d_i = s a_i - c_i, reach alone: each such
level is linear in s, so V is concave and piecewise linear, and the line of the
smallest level lies above V everywhere. The solver maximises V by cutting planes
in one dimension: it keeps the lines at a point of positive slope and at one of
negative slope (at first s = 0 and s = 1), evaluates V where they cross, and
stops when V there reaches the crossing, which bounds max V from above. Every
step uses a line not seen before, so it ends after finitely many, in practice
two to five on random games with up to 20 arms; it is exact up to rounding and
needs no sort (O(K^2) per step). The authors solve the same linear program with
an LP solver; where it has several optima, the two may return different ones.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.families.base import tiny
from jbai.rules.base import Rule, leader, least_sampled
from jbai.ties import argmax_random_ties, argmin, maxima
from jbai.transport import transport_cost


class FWSState(NamedTuple):
  x: jax.Array  # [K] float, the Frank-Wolfe iterate x(t)


def game_value(s: jax.Array, a: jax.Array, b: jax.Array, c: jax.Array,
               active: jax.Array):
  """V(s) = max over z on the simplex with z_top = s of min_{j in A} a_j s + b_j z_j - c_j.

  Args:
    s: [] the weight z_top in [0, 1].
    a: [K] the top-arm entries of the gradients.
    b: [K] the own entries of the gradients, > 0 on the active set.
    c: [K] the offsets <grad f_j, x>.
    active: [K] bool, the active set A (non-empty, top excluded).

  Returns:
    (value, slope): V(s), and the slope of a line through (s, V(s)) that lies
    above V on [0, 1] (a supergradient).
  """
  d = jnp.where(active, s * a - c, jnp.inf)
  inv_b = jnp.where(active, 1.0 / jnp.maximum(b, tiny(b)), 0.0)
  # [j, i]: d_i <= d_j, and i = j always (XLA may round the two copies of d that a
  # comparison of d_j with itself reads differently: docs/design/float32.md).
  below = ((d[None, :] <= d[:, None]) | jnp.eye(d.shape[-1], dtype=bool)) & active[None, :]
  total = lambda v: jnp.sum(jnp.where(below, v[None, :], 0.0), axis=1)
  total_inv_b = jnp.where(active, total(inv_b), 1.0)
  level = jnp.where(active, (1.0 - s + total(d * inv_b)) / total_inv_b, jnp.inf)
  j = argmin(level)
  return level[j], (total(a * inv_b)[j] - 1.0) / total_inv_b[j]


def solve_bai_game(a: jax.Array, b: jax.Array, c: jax.Array, active: jax.Array,
                   top: jax.Array, max_steps: int = 64):
  """Solves max_{z in simplex} min_{j in A} a_j z_top + b_j z_j - c_j by cutting planes.

  This is the zero-sum game max_z min_{j in A} <g_j, z> - c_j of Frank-Wolfe
  sampling, for gradients g_j supported on {top, j} (module docstring).

  Args:
    a: [K] entries of the gradients at top (g_j[top] = a_j).
    b: [K] entries of the gradients at their own arm (g_j[j] = b_j).
    c: [K] offsets.
    active: [K] bool, the active set (non-empty, top excluded).
    top: [] int, the index of the top arm.
    max_steps: cap on the cutting-plane steps (a safeguard; the steps end on
      their own after a few).

  Returns:
    (z, value): [K] the maximising z on the simplex, [] the value of the game.
  """
  value_at = lambda s: game_value(s, a, b, c, active)
  zero, one = jnp.zeros((), a.dtype), jnp.ones((), a.dtype)
  v0, g0 = value_at(zero)
  v1, g1 = value_at(one)
  tol = 16 * jnp.finfo(a.dtype).eps

  def step(carry):
    s_lo, v_lo, g_lo, s_hi, v_hi, g_hi, _, n = carry
    s = jnp.clip((v_hi - v_lo + g_lo * s_lo - g_hi * s_hi) / (g_lo - g_hi), s_lo, s_hi)
    bound = v_lo + g_lo * (s - s_lo)  # the crossing: max V <= bound
    v, g = value_at(s)
    up = g > 0
    # Done when V reaches the bound, or (in rounding) when the line at s is one
    # of the two already known: no step can then make progress.
    done = ((v >= bound - tol * jnp.maximum(jnp.abs(bound), jnp.abs(v))) | (g == 0) |
            (g == jnp.where(up, g_lo, g_hi)))
    return (jnp.where(up, s, s_lo), jnp.where(up, v, v_lo), jnp.where(up, g, g_lo),
            jnp.where(up, s_hi, s), jnp.where(up, v_hi, v), jnp.where(up, g_hi, g),
            done, n + 1)

  # At an end whose slope points outwards, that end is the optimum.
  carry = (zero, v0, g0, one, v1, g1, (g0 <= 0) | (g1 >= 0), jnp.zeros((), jnp.int32))
  s_lo, v_lo, _, s_hi, v_hi, _, _, _ = jax.lax.while_loop(
      lambda c_: ~c_[6] & (c_[7] < max_steps), step, carry)
  # The last point evaluated is the optimum, and is one end of the bracket.
  s = jnp.where(g0 <= 0, 0.0, jnp.where(g1 >= 0, 1.0, jnp.where(v_lo >= v_hi, s_lo, s_hi)))
  v = jnp.where(g0 <= 0, v0, jnp.where(g1 >= 0, v1, jnp.maximum(v_lo, v_hi)))
  inv_b = jnp.where(active, 1.0 / jnp.maximum(b, tiny(b)), 0.0)
  z = jnp.where(active, jnp.maximum(0.0, (v - (s * a - c)) * inv_b), 0.0)
  z = jnp.where(jnp.arange(a.shape[-1]) == top, s, z)
  return z / jnp.sum(z), v


def is_square(n: jax.Array) -> jax.Array:
  """True where the non-negative integer n is a perfect square."""
  root = jnp.round(jnp.sqrt(n.astype(jnp.float32))).astype(n.dtype)
  return (root * root == n) | ((root - 1) * (root - 1) == n) | ((root + 1) * (root + 1) == n)


def fw_direction(family, x: jax.Array, mean: jax.Array, top: jax.Array,
                 r: jax.Array) -> jax.Array:
  """The Frank-Wolfe vertex mixture z of step 2 at the iterate x.

  Args:
    family: the reward family.
    x: [K] the iterate.
    mean: [K] the projected sample means (top their argmax).
    top: [] int, the empirical best arm.
    r: [] the subdifferential width r_t.

  Returns:
    [K] z on the simplex.
  """
  num_arms = x.shape[-1]
  is_top = jnp.arange(num_arms) == top
  cost = transport_cost(family, x[top], mean[top], x, mean)
  f = jnp.where(is_top, jnp.inf, cost.value)
  # The KLs are >= 0, but a family's formula may round a tiny one below 0 when
  # two means nearly tie (Bernoulli's, in float32, at a relative gap of 1e-4).
  a = jnp.where(is_top, 0.0, jnp.maximum(family.kl(mean[top], cost.x), 0.0))
  b = jnp.where(is_top, 0.0, jnp.maximum(family.kl(mean, cost.x), 0.0))
  # The minima up to rounding (see jbai.ties.maxima) are always active.
  active = (f < jnp.min(f) + r) | maxima(-f)
  z, _ = solve_bai_game(a, b, a * x[top] + b * x, active & ~is_top, top)
  return z


@cached
def fws() -> Rule:
  """Frank-Wolfe sampling (Wang et al. 2021): one Frank-Wolfe step on the lower-bound problem per round.

  Returns:
    The rule.
  """

  def init(num_arms):
    return FWSState(x=jnp.full(num_arms, 1.0 / num_arms, jnp.result_type(float)))

  def select(key, family, arm_stats, state):
    k_top, k_arm = jax.random.split(key)
    counts, t, mean = arm_stats.counts, arm_stats.t, arm_stats.mean
    num_arms = counts.shape[-1]
    x = state.x
    tf = jnp.maximum(t, 1).astype(x.dtype)
    top = leader(k_top, arm_stats)
    unique_best = jnp.sum(mean >= mean[top]) == 1
    z = fw_direction(family, x, mean, top, tf ** -0.9 / num_arms).astype(x.dtype)
    forced = is_square(t // num_arms) | ~unique_best | ~jnp.all(jnp.isfinite(z))
    z = jnp.where(forced, 1.0 / num_arms, z)
    initial = jnp.min(counts) == 0
    # x (t - 1) / t + z / t, as a sum of a quotient: no product for XLA to fuse
    # into a multiply-add in one program and not in another (docs/design/float32.md).
    x = jnp.where(initial, x, x + (z - x) / tf)
    tracked = argmax_random_ties(k_arm, x / jnp.maximum(counts, 1))
    arm = jnp.where(initial, least_sampled(counts), tracked).astype(jnp.int32)
    return arm, FWSState(x=x)

  return Rule("fws", init, select)
