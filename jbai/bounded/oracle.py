"""The characteristic time T* of a bounded instance, given its true laws.

For laws F_1 .. F_K on [0, 1] with a unique best mean at arm a (the lower bound of
Garivier & Kaufmann 2016, Theorem 1, over the non-parametric class of laws on
[0, 1]; Agrawal, Juneja & Koolen 2020 for KL_inf in it):

  1 / T* = max_{w in simplex} min_{b != a} C_b(w_a, w_b),
  C_b(w_a, w_b) = inf_{m in [mu_b, mu_a]} w_a KL_inf^-(F_a, m) + w_b KL_inf^+(F_b, m).

The solver is Garivier & Kaufmann's (2016, Theorem 5) with KL replaced by KL_inf:
with x_b = w_b / w_a, the optimum has C_b(1, x_b) = y for every b and
F(y) = sum_b KL_inf^-(F_a, m_b) / KL_inf^+(F_b, m_b) = 1 (the ratio of the partial
derivatives of C_b in w_a and w_b, by the envelope theorem), F increasing in y on
(0, min_b KL_inf^-(F_a, mu_b)). jbai parameterises each b by the common mean m
instead of x: at the inner infimum x = lambda_a(m) / lambda_b(m) (the dual optima,
`jbai.bounded.glr`), so C_b(1, x(m)) = KL_inf^-(F_a, m) + x(m) KL_inf^+(F_b, m),
decreasing in m, and solving it for y is one bisection in m, not a bisection in x
around another in m. Two nested bisections (`jbai.transport.bisect_root`, to the
dtype's precision), each step of the inner one two KL_inf solves per arm. Then
w_a = 1 / (1 + sum_b x_b), w_b = x_b w_a and T* = 1 / (w_a y).

Laws are weighted atoms ([..., K, P] values and weights): `jbai.bounded.laws.atoms`
gives discrete laws exactly and Beta laws by Gauss-Jacobi quadrature. For Bernoulli
laws (atoms {0, 1}) KL_inf is the Bernoulli KL and T* is jbai's Bernoulli oracle's.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.bounded import laws as laws_module
from jbai.bounded.kl_inf import kl_inf_pair
from jbai.transport import bisect_root


class Oracle(NamedTuple):
  """T* and w* of a bounded instance."""
  t_star: jax.Array     # [...] float, the characteristic time T*
  w: jax.Array          # [..., K] float, the optimal allocation w*
  best: jax.Array       # [...] int, the best arm
  converged: jax.Array  # [...] bool, every KL_inf solve at the solution converged


def _solve_one(values, weights):
  """Oracle of one instance: values and weights [K, P]."""
  means = jnp.sum(values * weights, axis=-1)
  best = jnp.argmax(means)
  others = jnp.arange(means.shape[0]) != best
  # Both arms' atoms side by side (zero weights on the other's): one set of values.
  atoms = jnp.concatenate([jnp.broadcast_to(values[best], values.shape), values], -1)
  pa = jnp.concatenate([jnp.broadcast_to(weights[best], weights.shape),
                        jnp.zeros_like(weights)], -1)
  pb = jnp.concatenate([jnp.zeros_like(weights), weights], -1)
  lo = jnp.where(others, means, means[best])  # [K]; the leader's bracket is empty
  hi = jnp.broadcast_to(means[best], means.shape)

  def pieces(m):
    down, up = kl_inf_pair(atoms, pa, pb, m)
    x = down.lam / jnp.where(up.lam > 0, up.lam, 1)
    x = jnp.where(up.lam > 0, x, jnp.inf)
    return down, up, x

  def level(m):  # C_b(1, x(m)), decreasing in m
    down, up, x = pieces(m)
    return jnp.where(x < jnp.inf, down.value + x * up.value, jnp.inf)

  def common_means(y):
    return bisect_root(lambda m: y - level(m), lo, hi)

  def excess(y):  # F(y) - 1, increasing in y
    down, up, _ = pieces(common_means(y))
    ratio = down.value / jnp.where(up.value > 0, up.value, 1)
    ratio = jnp.where(up.value > 0, ratio, jnp.inf)
    return jnp.sum(jnp.where(others, ratio, 0)) - 1

  top = jnp.min(jnp.where(others, pieces(means)[0].value, jnp.inf))
  y = bisect_root(excess, jnp.zeros_like(top), top)
  m = common_means(y)
  down, up, x = pieces(m)
  x = jnp.where(others, x, 0)
  w_best = 1 / (1 + jnp.sum(x))
  w = jnp.where(others, x * w_best, w_best)
  ok = jnp.all(jnp.where(others, down.converged & up.converged, True))
  return Oracle(1 / (w_best * y), w, best, ok)


def solve(values: ArrayLike, weights: ArrayLike) -> Oracle:
  """T* and w* of bounded instances given as weighted atoms (raw: no checks).

  Args:
    values: [..., K, P] each arm's atoms in [0, 1].
    weights: [..., K, P] their weights (summing to 1 per arm); the best mean must
      be unique (T* is infinite at a tie).

  Returns:
    Oracle over the leading shape.

  Example:
    >>> import jax.numpy as jnp
    >>> z = jnp.broadcast_to(jnp.array([0.0, 1.0]), (2, 2))
    >>> o = solve(z, jnp.array([[0.3, 0.7], [0.7, 0.3]]))   # Bernoulli 0.7 and 0.3
    >>> [round(float(v), 4) for v in o.w]   # mirror images: equal weights
    [0.5, 0.5]
  """
  values, weights = (jnp.asarray(v) * 1.0 for v in (values, weights))
  values, weights = jnp.broadcast_arrays(values, weights)
  fn = _solve_one
  for _ in range(values.ndim - 2):
    fn = jax.vmap(fn)
  return fn(values, weights)


def optimal(arms: laws_module.Laws, nodes: int = 64) -> Oracle:
  """T* and w* of an instance given by its arms' laws (checked on the host).

  Args:
    arms: the laws (`jbai.bounded.laws.arm_laws`), concrete.
    nodes: Gauss-Jacobi nodes of each Beta arm (`jbai.bounded.laws.atoms`).

  Returns:
    Oracle; ValueError if two arms share the best mean.

  Example:
    >>> from jbai.bounded import laws as L
    >>> o = optimal(L.arm_laws([L.beta(4, 2), L.bernoulli(0.5)]))
    >>> int(o.best)
    0
  """
  means = np.asarray(laws_module.means(arms))
  top = np.flatnonzero(means == means.max())
  if top.size > 1:
    raise ValueError(f"arms {top.tolist()} share the best mean {means.max()}: T* is infinite")
  values, weights = laws_module.atoms(arms, nodes)
  return jax.jit(solve)(values, weights)
