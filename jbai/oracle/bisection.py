"""The nested bisection that solves the exact oracle's problem for one instance.

`nested_bisection` returns z = (x [K], m [K], y) of the construction below, from
which `jbai.oracle.implicit` takes w(nu), Gamma(nu) and their derivatives
(`jbai.oracle.exact` has the problem, the tie convention and the certificate).

Construction (Garivier & Kaufmann, 2016, Theorem 5). Let a be the best arm and,
for every other arm i and x >= 0,

  g_i(x) = min_m KL(mu_a, m) + x KL(mu_i, m) = KL(mu_a, m_i(x)) + x KL(mu_i, m_i(x)),

the transport cost with weights (1, x) (m_i(x) is the family's transport minimiser,
the weighted mean (mu_a + x mu_i) / (1 + x) for exponential families). g_i rises
from 0 to KL(mu_a, mu_i), so for y in [0, min_i KL(mu_a, mu_i)) it has an inverse
x_i(y). The optimum equalises the pair costs: w_i = x_i(y) w_a, with y the root of

  F(y) = sum_{i != a} KL(mu_a, m_i) / KL(mu_i, m_i) = 1,

which is increasing in y from 0 to infinity. Then w_a = 1 / (1 + sum_i x_i(y)) and
Gamma(nu) = y w_a. Both x_i(y) (on u = x / (1 + x) in [0, 1]) and y are found by
bisection with a fixed number of iterations, so the solver ends under vmap.

The beta-optimal allocation fixes w_a = beta; the pair costs C_i(beta, w_i) =
beta g_i(w_i / beta) are increasing in w_i, so the optimum equalises them at a
common value beta y with sum_{i != a} x_i(y) = (1 - beta) / beta, again by nested
bisection. Gamma_beta(nu) = beta y and T*_beta(nu) = 1 / Gamma_beta(nu).
"""

import jax
import jax.numpy as jnp

from jbai.families.base import Family
from jbai.oracle.common import safe_means
from jbai.transport import transport_cost


def ratio_root(cost, y: jax.Array, like: jax.Array, iters: int) -> jax.Array:
  """x with cost(x) = y elementwise, for a cost increasing in x from 0: bisection
  on u = x / (1 + x) in [0, 1], `iters` halvings (the shape and dtype of `like`).

  Args:
    cost: x [...] -> [...], increasing in x.
    y: the level to reach.
    like: an array of the shape and dtype of x.
    iters: number of halvings.

  Returns:
    x [...]: the midpoint of the last bracket, mapped back from u.
  """
  one_ulp = jnp.finfo(like.dtype).eps

  def ratio(u):
    return u / jnp.maximum(1 - u, one_ulp)

  def body(_, bracket):
    lo, hi = bracket
    mid = 0.5 * (lo + hi)
    above = cost(ratio(mid)) >= y
    return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

  lo, hi = jax.lax.fori_loop(0, iters, body, (jnp.zeros_like(like), jnp.ones_like(like)))
  return ratio(0.5 * (lo + hi))


def _inner_x(family: Family, mu_a: jax.Array, means: jax.Array, y: jax.Array,
             iters: int) -> jax.Array:
  """x_i(y): the root of g_i(x) = y for every arm (`ratio_root`).

  The best arm's own entry is meaningless (its g is 0) and is overwritten by callers.
  """
  return ratio_root(lambda x: transport_cost(family, 1.0, mu_a, x, means).value, y, means,
                    iters)


def _transport_points(family: Family, mu_a, x, means):
  """m_i(x): the minimisers of KL(mu_a, m) + x_i KL(mu_i, m)."""
  return transport_cost(family, 1.0, mu_a, x, means).x


def balance(family: Family, mu_a, means, is_a, x, m, beta):
  """The last optimality condition, zero at the solution and increasing in y.

  F(y) - 1 = sum_{i != a} KL(mu_a, m_i) / KL(mu_i, m_i) - 1 for the optimal
  allocation, sum_{i != a} x_i - (1 - beta) / beta for the beta-optimal one.
  """
  if beta is not None:
    return jnp.sum(jnp.where(is_a, 0.0, x)) - (1 - beta) / beta
  kl_i = jnp.where(is_a, 1.0, family.kl(means, m))
  kl_i = jnp.maximum(kl_i, jnp.finfo(kl_i.dtype).tiny)  # KL(mu_i, m_i) = 0: F = inf
  return jnp.sum(jnp.where(is_a, 0.0, family.kl(mu_a, m) / kl_i)) - 1


def nested_bisection(family: Family, iters: int, means: jax.Array, beta) -> jax.Array:
  """Nested bisection for one instance; returns z = (x [K], m [K], y)."""
  k = means.shape[-1]
  means, _, _ = safe_means(family, means)
  a = jnp.argmax(means)
  is_a = jnp.arange(k) == a
  mu_a = means[a]
  y_max = jnp.min(jnp.where(is_a, jnp.inf, family.kl(mu_a, means)))

  def solve_x(y):
    return jnp.where(is_a, 1.0, _inner_x(family, mu_a, means, y, iters))

  def body(_, bracket):
    lo, hi = bracket
    mid = 0.5 * (lo + hi)
    x = solve_x(mid)
    m = _transport_points(family, mu_a, x, means)
    above = balance(family, mu_a, means, is_a, x, m, beta) >= 0
    return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

  lo, hi = jax.lax.fori_loop(0, iters, body, (jnp.zeros_like(y_max), y_max))
  y = 0.5 * (lo + hi)
  x = solve_x(y)
  m = jnp.where(is_a, mu_a, _transport_points(family, mu_a, x, means))
  return jnp.concatenate([x, m, y[None]])



__all__ = ["balance", "nested_bisection"]
