"""The linear model's GLLR statistics: best arm, top m, and arms against a level.

With V_t the weighted design of `jbai.linear.statistics` (noise variances folded in),
the GLLR of an answer is the least-squares cost of the cheapest parameter that
contradicts it, inf_{lambda in Alt} (1/2) ||lambda - theta_hat||^2_{V_t}. Each
alternative below is a half-space {lambda: y^T lambda <= c}, whose cost has the
closed form (y^T theta_hat - c)_+^2 / (2 ||y||^2_{V_t^-1}) (Soare et al. 2014;
Jedra & Proutiere 2020, eq. (8); Degenne et al. 2020, Sec. 2); with one sigma for
every arm and V_t = sum x x^T it reads (y^T theta_hat)^2 / (2 sigma^2 ||y||^2_{V^-1}).

  * best arm: x_hat* = argmax X theta_hat, and min over x != x_hat* with
    y = x_hat* - x, c = 0; the argmin is the challenger;
  * top m: the m largest estimated means S_hat, and min over j in S_hat, i not in
    S_hat with y = x_j - x_i (the best arm is m = 1);
  * against a level tau: each arm's (x_a^T theta_hat - tau)^2 / (2 ||x_a||^2_{V^-1})
    (its sign against tau flipped), min over arms.

Every function takes V_t^-1 and theta_hat (a `LinearStats`' fields), costs
O(K d^2) (O(K^2 d) for top m's pairs), and works under jit and vmap.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


class LinearGLLR(NamedTuple):
  """A GLLR value, the answer it supports, and its cheapest alternative."""

  value: jax.Array       # [] float, the GLLR statistic
  answer: jax.Array      # [] int32: the estimated best arm (top m: the m-th best; level: -1)
  challenger: jax.Array  # [] int32: the arm of the cheapest alternative
  costs: jax.Array       # [K] float: each alternative's cost (+inf where none)


def half_space_costs(v_inv: jax.Array, theta: jax.Array, y: jax.Array,
                     level: ArrayLike = 0.0) -> jax.Array:
  """(y^T theta - level)_+^2 / (2 ||y||^2_{V^-1}) for each row y: the GLLR of the
  half-space {lambda: y^T lambda <= level}.

  Args:
    v_inv: [d, d] V_t^-1.
    theta: [d] theta_hat.
    y: [..., d] directions.
    level: the half-space's level, broadcast against y's rows.

  Returns:
    [...] costs; +inf where y = 0 and y^T theta > level, 0 where y = 0 otherwise.
  """
  margin = jnp.maximum(y @ theta - level, 0.0)
  norm = jnp.einsum("...i,ij,...j->...", y, v_inv, y)
  safe = jnp.where(norm > 0, norm, 1.0)
  return jnp.where(norm > 0, margin ** 2 / (2 * safe), jnp.where(margin > 0, jnp.inf, 0.0))


def best_arm_gllr(features: jax.Array, v_inv: jax.Array, theta: jax.Array) -> LinearGLLR:
  """The GLLR for the best arm: min_{x != x_hat*} (y^T theta_hat)^2 / (2 ||y||^2_{V^-1}).

  Args:
    features: [K, d] arm features.
    v_inv: [d, d] V_t^-1.
    theta: [d] theta_hat.

  Returns:
    A `LinearGLLR` (answer: x_hat*'s index; costs +inf at x_hat*).

  Example:
    >>> import jax.numpy as jnp
    >>> x = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    >>> g = best_arm_gllr(x, jnp.eye(2) / 10, jnp.array([1.0, 0.0]))
    >>> float(g.value), int(g.challenger)  # 1 / (2 * 0.2)
    (2.5, 1)
  """
  k = features.shape[0]
  best = jnp.argmax(features @ theta).astype(jnp.int32)
  costs = half_space_costs(v_inv, theta, features[best] - features)
  costs = jnp.where(jnp.arange(k) == best, jnp.inf, costs)
  return LinearGLLR(value=jnp.min(costs), answer=best,
                    challenger=jnp.argmin(costs).astype(jnp.int32), costs=costs)


def top_m_gllr(features: jax.Array, v_inv: jax.Array, theta: jax.Array, m: int) -> LinearGLLR:
  """The GLLR for the top m arms: min over j in S_hat, i not in S_hat of the cost of
  x_i^T lambda >= x_j^T lambda.

  Args:
    features: [K, d] arm features.
    v_inv: [d, d] V_t^-1.
    theta: [d] theta_hat.
    m: the number of arms asked for, 1 <= m < K (static).

  Returns:
    A `LinearGLLR` (answer: the m-th best arm; challenger: the arm i of the
    cheapest pair; costs: per arm i outside S_hat its cheapest pair, +inf inside).

  Raises:
    ValueError: for m outside [1, K).
  """
  k = features.shape[0]
  if not 1 <= m < k:
    raise ValueError(f"m must be in [1, K) = [1, {k}), got {m!r}")
  order = jnp.argsort(-(features @ theta))
  inside = jnp.zeros(k, bool).at[order[:m]].set(True)
  y = features[:, None, :] - features[None, :, :]  # [j, i, d]
  pair = half_space_costs(v_inv, theta, y)
  pair = jnp.where(inside[:, None] & ~inside[None, :], pair, jnp.inf)
  costs = jnp.min(pair, axis=0)
  return LinearGLLR(value=jnp.min(costs), answer=order[m - 1].astype(jnp.int32),
                    challenger=jnp.argmin(costs).astype(jnp.int32), costs=costs)


def level_gllr(features: jax.Array, v_inv: jax.Array, theta: jax.Array,
               level: ArrayLike) -> LinearGLLR:
  """The GLLR for the set of arms above a level tau: min over arms of
  (x_a^T theta_hat - tau)^2 / (2 ||x_a||^2_{V^-1}).

  Args:
    features: [K, d] arm features.
    v_inv: [d, d] V_t^-1.
    theta: [d] theta_hat.
    level: tau.

  Returns:
    A `LinearGLLR` (answer -1: the answer is the set X theta_hat > tau; challenger:
    the arm closest to flipping).
  """
  margin = features @ theta - level
  sign = jnp.where(margin >= 0, 1.0, -1.0)[:, None]
  costs = half_space_costs(v_inv, theta, sign * features, sign[:, 0] * level)
  return LinearGLLR(value=jnp.min(costs), answer=jnp.asarray(-1, jnp.int32),
                    challenger=jnp.argmin(costs).astype(jnp.int32), costs=costs)


__all__ = ["LinearGLLR", "best_arm_gllr", "half_space_costs", "level_gllr", "top_m_gllr"]
