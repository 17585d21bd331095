"""A linear trial's sufficient statistics, kept with rank-one (Sherman-Morrison) updates.

After t pulls a_1, ..., a_t with rewards r_1, ..., r_t, weighted least squares with a
ridge lambda (the penalised likelihood of Gaussian noise of variance sigma_a^2 and a
N(0, I / lambda) prior) keeps

  V_t = lambda I + sum_s x_{a_s} x_{a_s}^T / sigma_{a_s}^2      [d, d]
  b_t = sum_s x_{a_s} r_s / sigma_{a_s}^2                      [d]
  theta_hat_t = V_t^-1 b_t.

With one sigma for every arm, V_t is the papers' sum x x^T divided by sigma^2 (and
lambda I by the same): the GLLR's (y^T theta)^2 / (2 sigma^2 ||y||^2_{V^-1}) is then
(y^T theta)^2 / (2 ||y||^2_{V_t^-1}) here (`jbai.linear.gllr`). FWS's code
(rctzeng/NeurIPS2021-FWS, `linear/`) and LinBAI.jl use sigma = 1 and lambda = 1
after a first pull of each arm; lambda = 0 is allowed here once the pulled arms span
R^d, by building the state from those pulls (`from_counts`) and updating it from
there.

The state keeps V_t^-1, not V_t: one pull costs a Sherman-Morrison update, O(d^2),
and theta_hat and the arms' estimated means X theta_hat cost O(d^2 + K d); no
d x d solve per step.

For fixed arms, V_t = lambda I + X^T diag(N_t / sigma^2) X and b_t = X^T (S_t / sigma^2)
with N_t the per-arm counts and S_t the per-arm reward sums: `jbai.state.ArmStats`
of the Gaussian family already determines the state, and `from_counts` rebuilds it
from them (O(K d^2 + d^3)), the reference for the rank-one updates' rounding
(docs/design/linear.md).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.state import add_to_arm, count_dtype


class LinearStats(NamedTuple):
  """What a linear trial knows after t rewards (module docstring)."""

  v_inv: jax.Array   # [d, d] float, V_t^-1
  b: jax.Array       # [d] float, b_t
  theta: jax.Array   # [d] float, theta_hat_t = V_t^-1 b_t
  counts: jax.Array  # [K] count_dtype(), pulls per arm
  t: jax.Array       # [] count_dtype(), rewards so far


def empty_linear_stats(num_arms: int, dim: int, ridge: float, dtype=None) -> LinearStats:
  """The state of a trial that has seen nothing: V_0 = lambda I.

  Args:
    num_arms: K.
    dim: d.
    ridge: lambda > 0 (with lambda = 0, start from pulls: `from_counts`).
    dtype: float dtype; default JAX's default float dtype.

  Returns:
    A `LinearStats` with V^-1 = I / lambda and theta_hat = 0.

  Raises:
    ValueError: for a ridge <= 0 (V_0 = 0 has no inverse).

  Example:
    >>> s = empty_linear_stats(3, 2, 1.0)
    >>> s.v_inv.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
  """
  if not ridge > 0:
    raise ValueError(f"an empty linear state needs a ridge > 0, got {ridge!r}; with "
                     "ridge = 0 build it from a first pull of a spanning set (from_counts)")
  dtype = dtype or jnp.zeros(()).dtype
  return LinearStats(v_inv=jnp.eye(dim, dtype=dtype) / ridge, b=jnp.zeros(dim, dtype),
                     theta=jnp.zeros(dim, dtype), counts=jnp.zeros(num_arms, count_dtype()),
                     t=jnp.zeros((), count_dtype()))


def observe_linear(stats: LinearStats, features: jax.Array, sigma: jax.Array,
                   arm: jax.Array, reward: jax.Array) -> LinearStats:
  """Adds one reward of `arm`: a Sherman-Morrison update of V^-1, O(d^2).

  (V + x x^T / s^2)^-1 = V^-1 - u u^T / (s^2 + x^T u), u = V^-1 x.

  Args:
    stats: the state.
    features: [K, d] arm features.
    sigma: [K] noise standard deviations.
    arm: [] int, the arm pulled.
    reward: [] float, its reward.

  Returns:
    The updated `LinearStats`.

  Example:
    >>> import jax.numpy as jnp
    >>> x = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    >>> s = observe_linear(empty_linear_stats(2, 2, 1.0), x, jnp.ones(2), 0, 3.0)
    >>> [float(v) for v in s.theta]  # the ridge halves the estimate
    [1.5, 0.0]
  """
  x = features[arm]
  var = sigma[arm] ** 2
  u = stats.v_inv @ x
  v_inv = stats.v_inv - jnp.outer(u, u) / (var + x @ u)
  b = stats.b + x * (reward / var)
  one = jnp.ones((), stats.t.dtype)
  return LinearStats(v_inv=v_inv, b=b, theta=v_inv @ b,
                     counts=add_to_arm(stats.counts, arm, one), t=stats.t + one)


def from_counts(features: ArrayLike, sigma: ArrayLike, counts: ArrayLike,
                sums: ArrayLike, ridge: float = 0.0) -> LinearStats:
  """The state from per-arm counts N and reward sums S, by one d x d inverse.

  V = lambda I + X^T diag(N / sigma^2) X, b = X^T (S / sigma^2). With lambda = 0
  the pulled arms must span R^d (else V is singular and the result is not finite).

  Args:
    features: [K, d] arm features.
    sigma: [K] noise standard deviations.
    counts: [K] pulls per arm.
    sums: [K] summed rewards per arm.
    ridge: lambda >= 0.

  Returns:
    A `LinearStats`.

  Example:
    >>> import jax.numpy as jnp
    >>> x = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> s = from_counts(x, jnp.ones(3), jnp.array([1, 1, 0]), jnp.array([2.0, 1.0, 0.0]))
    >>> [float(v) for v in s.theta]
    [2.0, 1.0]
  """
  features = jnp.asarray(features)
  dtype = features.dtype
  counts = jnp.asarray(counts)
  weights = counts.astype(dtype) / jnp.asarray(sigma, dtype) ** 2
  v = ridge * jnp.eye(features.shape[1], dtype=dtype) + (features * weights[:, None]).T @ features
  b = features.T @ (jnp.asarray(sums, dtype) / jnp.asarray(sigma, dtype) ** 2)
  v_inv = jnp.linalg.inv(v)
  v_inv = 0.5 * (v_inv + v_inv.T)
  return LinearStats(v_inv=v_inv, b=b, theta=v_inv @ b,
                     counts=counts.astype(count_dtype()),
                     t=jnp.sum(counts).astype(count_dtype()))


def log_det_ratio(stats: LinearStats, ridge: float) -> jax.Array:
  """log det(V_t) - d log(lambda), the information gain in the linear thresholds
  (`jbai.linear.thresholds`), from V_t^-1 (O(d^3)).

  Args:
    stats: the state.
    ridge: lambda > 0.

  Returns:
    [] float.
  """
  d = stats.v_inv.shape[0]
  return -jnp.linalg.slogdet(stats.v_inv)[1] - d * jnp.log(jnp.asarray(ridge, stats.b.dtype))


__all__ = ["LinearStats", "empty_linear_stats", "from_counts", "log_det_ratio",
           "observe_linear"]
