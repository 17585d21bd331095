"""A linear bandit: arms as feature vectors, means X theta, Gaussian noise of known sigma.

Arm a has features x_a in R^d (row a of X, [K, d]); its rewards are Gaussian with
mean x_a^T theta and standard deviation sigma_a (one sigma for every arm, or one
per arm). This is the model of Soare, Lazaric & Munos (2014), Jedra & Proutiere
(2020) and Degenne, Menard, Shang & Valko (2020), with per-arm noise added.

`LinearBandit` holds an instance; `linear_bandit` builds one and checks it on the
host (`check_linear`), with a ValueError that names the bad value:

  * fewer than two arms, or features that are not a [K, d] matrix;
  * a theta whose length is not d, or a sigma that is not a scalar or [K];
  * NaN or infinite entries, or a sigma <= 0;
  * features that do not span R^d (then theta is not identifiable and
    V_t = sum x x^T never becomes invertible without a ridge);
  * a duplicate best arm: another row equal to the best arm's features
    (within `tol`), which no amount of sampling tells apart;
  * a tied best arm: another arm whose mean is within `tol` * max_a |x_a| |theta|
    of the best mean.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

DEFAULT_TOL = 1e-9


class LinearBandit(NamedTuple):
  """A linear bandit instance (Soare et al. 2014): means = features @ theta."""

  features: jax.Array  # [K, d] float, x_a in row a
  theta: jax.Array     # [d] float
  sigma: jax.Array     # [K] float, the noise's standard deviation per arm


def means(model: LinearBandit) -> jax.Array:
  """The arms' means X theta.

  Args:
    model: a `LinearBandit` (leading batch axes allowed).

  Returns:
    [..., K] array of x_a^T theta.

  Example:
    >>> m = linear_bandit([[1.0, 0.0], [0.0, 1.0]], [1.0, 0.5])
    >>> [float(v) for v in means(m)]
    [1.0, 0.5]
  """
  return jnp.einsum("...kd,...d->...k", model.features, model.theta)


def check_linear(features: ArrayLike, theta: ArrayLike, sigma: ArrayLike = 1.0,
                 tol: float = DEFAULT_TOL) -> tuple:
  """Checks a linear bandit on the host and returns its arrays as numpy float64.

  Args:
    features: [K, d] arm features.
    theta: [d] parameter.
    sigma: the noise's standard deviation, a scalar or [K] (one per arm).
    tol: relative tolerance of the tie and duplicate checks (module docstring).

  Returns:
    (features [K, d], theta [d], sigma [K]) as numpy float64 arrays.

  Raises:
    ValueError: for each of the defects in the module docstring, naming the bad
      value.

  Example:
    >>> x, th, s = check_linear([[1, 0], [0, 1], [0.7, 0.7]], [1, 0], 0.5)
    >>> s.tolist()
    [0.5, 0.5, 0.5]
  """
  x = np.asarray(features, dtype=float)
  th = np.asarray(theta, dtype=float)
  if x.ndim != 2:
    raise ValueError(f"features must be a [K, d] matrix, got shape {x.shape}")
  k, d = x.shape
  if k < 2:
    raise ValueError(f"a linear bandit needs at least two arms, got {k} feature row(s)")
  if th.ndim != 1 or th.shape[0] != d:
    raise ValueError(f"theta must have d = {d} entries (the features' columns), "
                     f"got shape {th.shape}")
  s = np.asarray(sigma, dtype=float)
  if s.ndim > 1 or (s.ndim == 1 and s.shape[0] != k):
    raise ValueError(f"sigma must be a scalar or have one entry per arm (K = {k}), "
                     f"got shape {s.shape}")
  s = np.broadcast_to(s, (k,)).copy()
  for name, v in (("features", x), ("theta", th), ("sigma", s)):
    if not np.all(np.isfinite(v)):
      raise ValueError(f"{name} must be finite, got {v.tolist()}")
  if np.any(s <= 0):
    raise ValueError(f"sigma must be > 0, got {float(s[np.argmax(s <= 0)])!r}")
  rank = np.linalg.matrix_rank(x)
  if rank < d:
    raise ValueError(f"the features do not span R^{d}: their rank is {rank}; drop the "
                     "dimensions they do not reach or add arms that do")
  mu = x @ th
  best = int(np.argmax(mu))
  scale = max(float(np.max(np.linalg.norm(x, axis=1)) * np.linalg.norm(th)), 1e-300)
  others = np.arange(k) != best
  same = others & np.all(np.abs(x - x[best]) <= tol * max(1.0, np.abs(x).max()), axis=1)
  if np.any(same):
    raise ValueError(f"duplicate best arm: arms {best} and {int(np.argmax(same))} have the "
                     f"same features {x[best].tolist()}")
  tied = others & (mu >= mu[best] - tol * scale)
  if np.any(tied):
    raise ValueError(f"the best arm is tied: arms {best} and {int(np.argmax(tied))} have "
                     f"means {float(mu[best])!r} and {float(mu[np.argmax(tied)])!r} under theta = "
                     f"{th.tolist()}")
  return x, th, s


def linear_bandit(features: ArrayLike, theta: ArrayLike, sigma: ArrayLike = 1.0,
                  tol: float = DEFAULT_TOL, dtype=None) -> LinearBandit:
  """A checked `LinearBandit` (see `check_linear` for what is refused).

  Args:
    features: [K, d] arm features.
    theta: [d] parameter.
    sigma: a scalar or [K] noise standard deviations.
    tol: relative tolerance of the tie and duplicate checks.
    dtype: the arrays' float dtype; default JAX's default float dtype.

  Returns:
    A `LinearBandit` with sigma broadcast to [K].

  Raises:
    ValueError: as `check_linear`.

  Example:
    >>> m = linear_bandit([[1, 0], [0, 1], [0.995, 0.0998]], [1, 0])
    >>> m.features.shape, m.sigma.shape
    ((3, 2), (3,))
  """
  x, th, s = check_linear(features, theta, sigma, tol)
  dtype = dtype or jnp.zeros(()).dtype
  return LinearBandit(jnp.asarray(x, dtype), jnp.asarray(th, dtype), jnp.asarray(s, dtype))


def soare(omega: float = 0.1, d: int = 2) -> tuple:
  """Soare, Lazaric & Munos (2014, Sec. 6)'s hard instance: the d unit vectors
  e_1, ..., e_d and x_{d+1} = (cos omega, sin omega, 0, ..., 0), theta = e_1 (the
  first experiment of Degenne et al. 2020 too). x_{d+1} is nearly best, and the
  arm that tells it from e_1 is e_2: T* = 2 (1 + cot(omega / 2))^2 / sigma^2, w*
  proportional to (1 - cos omega, sin omega) on e_1, e_2 and 0 elsewhere.

  Args:
    omega: the angle in (0, pi/2) between x_{d+1} and e_1.
    d: the dimension, >= 2.

  Returns:
    (features [d + 1, d], theta [d]) as numpy float64 arrays.

  Raises:
    ValueError: for omega outside (0, pi/2) or d < 2.

  Example:
    >>> x, th = soare(0.5, 3)
    >>> x.shape, th.tolist()
    ((4, 3), [1.0, 0.0, 0.0])
  """
  if not 0 < omega < np.pi / 2:
    raise ValueError(f"omega must be in (0, pi/2), got {omega!r}")
  if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
    raise ValueError(f"d must be an integer >= 2, got {d!r}")
  x = np.vstack([np.eye(d), np.zeros(d)])
  x[d, :2] = np.cos(omega), np.sin(omega)
  return x, np.eye(d)[0]


__all__ = ["DEFAULT_TOL", "LinearBandit", "check_linear", "linear_bandit", "means", "soare"]
