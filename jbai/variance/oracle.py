"""The oracle of Gaussian arms with known per-arm variances: w*(nu), T*(nu) = 1 / Gamma(nu).

Gamma(nu) = max_{w in simplex} min_{b != a} C_ab(w), with a the best arm and
C_ab(w) = (mu_a - mu_b)^2 / (2 (sigma_a^2 / w_a + sigma_b^2 / w_b)) (`jbai.variance.costs`).

The reduction of Garivier & Kaufmann (2016, Theorem 5) holds with a divergence per
arm, d_i(m, l) = (m - l)^2 / (2 sigma_i^2): the optimum equalises the pair costs,
w_b = x_b w_a, where x_b solves g_b(x) = min_l d_a(mu_a, l) + x d_b(mu_b, l) = y,
and y solves F(y) = sum_b d_a(mu_a, l_b) / d_b(mu_b, l_b) = 1 at the minimisers
l_b. For Gaussian divergences every step is closed:

  g_b(x) = Delta_b^2 x / (2 (sigma_b^2 + x sigma_a^2)),
  x_b(y) = (sigma_b^2 / sigma_a^2) s / (Delta_b^2 - s),     s = 2 y sigma_a^2,
  d_a / d_b at l_b = x_b^2 sigma_a^2 / sigma_b^2,

so with r_b = sigma_b^2 / sigma_a^2 the last condition is one equation in
s in [0, min_b Delta_b^2):

  F(s) = sum_{b != a} r_b (s / (Delta_b^2 - s))^2 = 1,

increasing from 0 to +inf, solved by bisection to the dtype's precision
(`jbai.transport.bisect_root`). Then x_b = r_b s / (Delta_b^2 - s), x_a = 1,
w = x / sum x and Gamma = s w_a / (2 sigma_a^2). With equal variances F is
sum_b x_b^2 = 1, the known-variance Gaussian case of Garivier & Kaufmann.

Derivatives: implicit, not through the bisection. s* solves F(s, mu, sigma^2) = 1,
so ds* = -(dF/dmu dmu + dF/dsigma^2 dsigma^2) / (dF/ds) (a `jax.custom_jvp`);
w and Gamma are then closed forms of (s*, mu, sigma^2) that JAX differentiates.
The best arm's index is held fixed (w* is smooth where the best arm is unique).
A tie for the best arm gives Gamma = 0, T* = +inf and w spread evenly over the
tied arms, with zero derivatives.

The beta-optimal allocation (the best arm's weight fixed at beta, the asymptotic
allocation of a top-two rule with parameter beta) equalises the pair costs at a
common value beta y with sum_b x_b = (1 - beta) / beta (as `jbai.oracle.exact`'s):
G(s) = sum_b r_b s / (Delta_b^2 - s) - (1 - beta) / beta = 0, again one bisection,
with w = beta x and Gamma_beta = beta s / (2 sigma_a^2). `beta` = 0 asks for the
optimal allocation; on a tie the beta-optimal w is beta at the first best arm and
the rest spread evenly.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.oracle.common import batched
from jbai.transport import bisect_root


class Oracle(NamedTuple):
  """The solution of one or a batch of instances."""

  w: jax.Array       # [..., K] float, the optimal allocation w*(nu)
  gamma: jax.Array   # [...] float, Gamma(nu) = max_w min_b C_ab(w)
  t_star: jax.Array  # [...] float, T*(nu) = 1 / Gamma(nu) (+inf on a tie)


def _balance(s, means, var, a, beta):
  """F(s) - 1 (beta = 0) or G(s) (beta > 0) of the module docstring, for one
  instance with best arm a."""
  k = means.shape[-1]
  is_a = jnp.arange(k) == a
  gap2 = jnp.where(is_a, 1.0, (means[a] - means) ** 2)
  ratio = jnp.where(is_a, 0.0, var / var[a])
  q = s / jnp.where(is_a, 1.0, gap2 - s)
  safe_beta = jnp.where(beta > 0, beta, 1.0)
  return jnp.where(beta > 0, jnp.sum(ratio * q) - (1 - safe_beta) / safe_beta,
                   jnp.sum(ratio * q * q) - 1)


def _s_max(means, a):
  k = means.shape[-1]
  return jnp.min(jnp.where(jnp.arange(k) == a, jnp.inf, (means[a] - means) ** 2))


@jax.custom_jvp
def _root(means, var, beta):
  """s* of one instance ([K] means and variances, [] beta); 0 on a tie."""
  a = jnp.argmax(means)
  hi = _s_max(means, a)
  s = bisect_root(lambda s: _balance(s, means, var, a, beta), jnp.zeros_like(hi), hi)
  return jnp.where(hi > 0, s, 0.0)


@_root.defjvp
def _root_jvp(primals, tangents):
  means, var, beta = primals
  d_means, d_var, d_beta = tangents
  s = _root(means, var, beta)
  a = jnp.argmax(means)
  f = lambda s_, m_, v_, b_: _balance(s_, m_, v_, a, b_)
  df_ds, df_dm, df_dv, df_db = jax.grad(f, argnums=(0, 1, 2, 3))(s, means, var, beta)
  tie = _s_max(means, a) <= 0
  ok = jnp.isfinite(df_ds) & (df_ds > 0) & ~tie
  ds = -(df_dm @ d_means + df_dv @ d_var + df_db * d_beta) / jnp.where(ok, df_ds, 1.0)
  return s, jnp.where(ok, ds, 0.0)


def _solve_one(means, var, beta):
  """Oracle of one [K] instance (raw: no checks, safe on ties)."""
  k = means.shape[-1]
  a = jnp.argmax(means)
  is_a = jnp.arange(k) == a
  tied = means >= means[a]
  tie = jnp.sum(tied) > 1
  fixed = beta > 0
  s = _root(means, var, beta)
  gap2 = jnp.where(is_a | tie, 1.0, (means[a] - means) ** 2)
  x = jnp.where(is_a, 1.0, (var / var[a]) * s / jnp.where(tie, 1.0, gap2 - s))
  w = jnp.where(fixed, beta * x, x / jnp.sum(x))
  gamma = s * w[a] / (2 * var[a])
  w_tie = jnp.where(fixed, jnp.where(is_a, beta, (1 - beta) / (k - 1)), tied / jnp.sum(tied))
  w = jnp.where(tie, w_tie, w)
  gamma = jnp.where(tie, 0.0, gamma)
  t_star = jnp.where(gamma > 0, 1 / jnp.where(gamma > 0, gamma, 1.0), jnp.inf)
  return Oracle(w=w, gamma=gamma, t_star=t_star)


def solve(means: ArrayLike, sigma: ArrayLike, beta: ArrayLike = 0.0) -> Oracle:
  """The known-variance oracle, raw: no checks, for use inside traced code.

  Batched over leading axes, jit/vmap-able, and differentiable in the means, in
  sigma and in beta (implicit derivatives, module docstring).

  Args:
    means: [..., K] arm means.
    sigma: [..., K] (or broadcastable) standard deviations > 0.
    beta: 0 for the optimal allocation, or the best arm's weight in (0, 1) for the
      beta-optimal one; a scalar or one per instance ([...]).

  Returns:
    Oracle(w [..., K], gamma [...], t_star [...]).

  Example:
    >>> o = solve(jnp.array([1.0, 0.0]), jnp.array([1.0, 1.0]))
    >>> float(o.t_star), [float(v) for v in o.w]
    (8.0, [0.5, 0.5])
  """
  means = jnp.asarray(means)
  if not jnp.issubdtype(means.dtype, jnp.floating):
    means = means * 1.0
  sigma = jnp.broadcast_to(jnp.asarray(sigma, means.dtype), means.shape)
  beta = jnp.broadcast_to(jnp.asarray(beta, means.dtype), means.shape[:-1])
  return batched(_solve_one, means, sigma * sigma, beta)


def check_beta(beta) -> float:
  """beta as a float in (0, 1), or 0.0 for None; ValueError naming a bad one."""
  if beta is None:
    return 0.0
  value = float(beta)
  if not 0 < value < 1:
    raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
  return value


def check_instance(means: ArrayLike, sigma: ArrayLike) -> tuple:
  """Validates an instance at the Python boundary.

  Args:
    means: [K] or [I, K] means.
    sigma: a scalar, [K] or [I, K] standard deviations.

  Returns:
    (means, sigma) as float numpy arrays, sigma broadcast to the means' shape.

  Raises:
    ValueError: naming the bad value: fewer than two arms, a NaN or infinite
      mean, a sigma <= 0 or not finite, a sigma list of the wrong length, or a
      tie for the best arm.
  """
  arr = np.asarray(means, float)
  if arr.ndim not in (1, 2) or arr.shape[-1] < 2:
    raise ValueError(f"means must have shape [K] or [I, K] with K >= 2, got {arr.tolist()}")
  if not np.isfinite(arr).all():
    raise ValueError(f"means must be finite numbers, got {arr.tolist()}")
  sig = np.asarray(sigma, float)
  if sig.ndim and sig.shape[-1] != arr.shape[-1]:
    raise ValueError(f"sigma has {sig.shape[-1]} entries for {arr.shape[-1]} arms: "
                     f"{sig.tolist()}")
  bad = sig[~(np.isfinite(sig) & (sig > 0))]
  if bad.size:
    raise ValueError(f"sigma must be finite and > 0, got {float(bad.ravel()[0])!r} "
                     f"(sigma {sig.tolist()})")
  try:
    sig = np.broadcast_to(sig, arr.shape)
  except ValueError:
    raise ValueError(f"sigma of shape {sig.shape} does not fit means of shape "
                     f"{arr.shape}") from None
  for row in arr.reshape(-1, arr.shape[-1]):
    if np.sum(row == row.max()) > 1:
      raise ValueError(f"tie for the best arm at mean {float(row.max())!r} in "
                       f"{row.tolist()}; the best arm must be unique")
  return arr, np.array(sig)


@jax.jit
def _solve_jit(means, sigma, beta):
  return solve(means, sigma, beta)


def optimal_allocation(means: ArrayLike, sigma: ArrayLike, beta=None) -> Oracle:
  """The known-variance oracle of checked, concrete inputs (module docstring).

  Args:
    means: [K] or [I, K] arm means with a unique best arm.
    sigma: a scalar, [K] or [I, K] standard deviations > 0.
    beta: None for the optimal allocation, or the best arm's weight in (0, 1).

  Returns:
    Oracle(w, gamma, t_star) in JAX's default float dtype.

  Raises:
    ValueError: as `check_instance`, and for a beta outside (0, 1).

  Example:
    >>> o = optimal_allocation([1.0, 0.5, 0.0], [1.0, 2.0, 0.5])
    >>> round(float(o.t_star), 1)
    72.5
  """
  means, sigma = check_instance(means, sigma)
  beta = check_beta(beta)
  dtype = jnp.zeros(()).dtype
  return _solve_jit(jnp.asarray(means, dtype), jnp.asarray(sigma, dtype), jnp.asarray(beta, dtype))


__all__ = ["Oracle", "check_beta", "check_instance", "optimal_allocation", "solve"]
