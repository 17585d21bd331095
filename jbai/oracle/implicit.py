"""Implicit derivatives of the exact oracle's solution, and w(nu) and Gamma(nu) from it.

`implicit_solution` wraps a solver of z = (x [K], m [K], y) (the nested bisection of
`jbai.oracle.bisection`, or `jbai.oracle.projected`'s ascent) in a `jax.custom_jvp`;
`allocation_of_z` turns z into (w, Gamma) with the tie convention of
`jbai.oracle.exact`, whose module docstring has the problem and the degenerate inputs.

Differentiation: implicit, not through the bisection loops. The solution
z = (x [K], m [K], y) solves R(z, mu) = 0 with, for i != a,

  KL(mu_a, m_i) + x_i KL(mu_i, m_i) - y = 0            (pair costs equal)
  d/dm [KL(mu_a, m) + x_i KL(mu_i, m)] at m_i = 0        (m_i is the minimiser)

x_a - 1 = 0 and m_a - mu_a = 0 for the best arm, and a last row F(y) - 1 = 0
(or sum_{i != a} x_i - (1 - beta) / beta = 0). A `jax.custom_jvp` returns
dz = -(dR/dz)^{-1} (dR/dmu) dmu, which JAX transposes for reverse mode, so
`jax.grad` and `jax.jacobian` work for every family, including those whose
transport minimiser has no closed form. The best arm's index is held fixed (w is
locally smooth in the means when the best arm is unique).
"""

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jbai.families.base import Family
from jbai.oracle.bisection import balance, nested_bisection
from jbai.oracle.common import default_iters, interior, safe_means


def _residual(family: Family, means, beta, a, z):
  """R(z, mu) of the module docstring: zero at the solution."""
  k = means.shape[-1]
  x, m, y = z[:k], z[k:2 * k], z[2 * k]
  is_a = jnp.arange(k) == a
  mu_a = means[a]

  def dkl(m1, m2):  # d/dm2 KL(m1, m2), elementwise
    return jax.jvp(lambda q: family.kl(m1, q), (m2,), (jnp.ones_like(m2),))[1]

  cost = family.kl(mu_a, m) + x * family.kl(means, m) - y
  stationary = dkl(mu_a, m) + x * dkl(means, m)
  last = balance(family, mu_a, means, is_a, x, m, beta)
  return jnp.concatenate([jnp.where(is_a, x - 1, cost),
                          jnp.where(is_a, m - mu_a, stationary), last[None]])


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def implicit_solution(family: Family, primal: Callable, means: jax.Array, beta) -> jax.Array:
  """(z, tie) for one instance, [2K+2]: z from `primal(means, beta)`, with
  implicit derivatives, and 1.0 where the best arm is tied in the precision z
  was solved in (`safe_means`), else 0.0."""
  return jax.lax.stop_gradient(_with_tie(family, means, primal(means, beta)))


def _with_tie(family: Family, means: jax.Array, z: jax.Array) -> jax.Array:
  return jnp.append(z, safe_means(family, means)[1].astype(z.dtype))



def _tangent_map(family: Family, means: jax.Array, beta, z: jax.Array):
  """dz/dmu [2K+1, K] and dz/dbeta [2K+1] (None for the optimal allocation) at
  the solution z of one instance: -(dR/dz)^{-1} dR/d(mu, beta), from primal
  values only. Zero on a tie for the best arm (`jbai.oracle.exact`'s
  convention); NaN, never a silent zero, where the system is not finite."""
  safe, tie, _ = safe_means(family, means)
  a = jnp.argmax(safe)
  safe = interior(family, safe)  # finite derivatives at the ends of Theta
  res = lambda z_, m_, b_: _residual(family, m_, b_, a, z_)
  # A beta of None (the optimal allocation) is an empty pytree: no column.
  jac, rhs_means, rhs_beta = jax.jacfwd(res, argnums=(0, 1, 2))(z, safe, beta)
  finite = jnp.all(jnp.isfinite(jac))
  jac = jnp.where(finite & ~tie, jac, jnp.eye(z.shape[0], dtype=z.dtype))
  # A system that is singular in the working precision is solved by the
  # pseudo-inverse (the least-squares solution), finite, instead of giving NaN
  # for every arm.
  inverse = jnp.linalg.inv(jac)
  inverse = jnp.where(jnp.all(jnp.isfinite(inverse)), inverse, jnp.linalg.pinv(jac))

  def solved(rhs):
    dz = -inverse @ rhs
    return jnp.where(tie, 0.0, jnp.where(finite, dz, jnp.nan))

  return solved(rhs_means), None if beta is None else solved(rhs_beta)


@functools.partial(jax.jit, static_argnums=0)
def _solve_and_map(family: Family, means: jax.Array, beta):
  """(z, `_tangent_map`) of a batch [B, K] (beta [B] or None), z solved in the
  means' dtype (float64 on the host: `_host_solve_and_map`)."""
  def one(mu, b):
    z = nested_bisection(family, default_iters(mu.dtype), mu, b)
    return (_with_tie(family, mu, z),) + _tangent_map(family, mu, b, z)
  return jax.vmap(one)(means, beta)


def _host_solve_and_map(family: Family, means, beta):
  """`_solve_and_map` computed in float64 on the host CPU, returned in the means'
  dtype; means [..., K] and beta [...] (or None) with any leading axes."""
  dtype = np.asarray(means).dtype
  lead, k = np.shape(means)[:-1], np.shape(means)[-1]
  flat_means = np.asarray(means, np.float64).reshape(-1, k)
  flat_beta = None if beta is None else np.asarray(beta, np.float64).reshape(-1)
  with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
    out = _solve_and_map(family, flat_means, flat_beta)
  shapes = (2 * k + 2,), (2 * k + 1, k), (2 * k + 1,)
  return tuple(np.asarray(v, dtype).reshape(lead + shape)
               for v, shape in zip(out, shapes) if v is not None)


def _solve_and_map_in_float64(family: Family, means: jax.Array, beta):
  """(z, dz/dmu, dz/dbeta) solved in float64 for means of a narrower dtype
  (float32), by a host callback, and rounded to that dtype.

  Near a tie the float32 solution and its implicit system lose their digits
  (Bernoulli [1, 0.999999, 0.2]: a transport point rounds onto the end of Theta;
  the float32 derivative of Gamma came out 1e-14 where float64 gives 12.5),
  while the float64 solve at the same float32 inputs keeps them. Only the
  differentiated path pays for it (undifferentiated solves stay in float32, as
  inside simulation loops). Works under jit and vmap; a second derivative raises
  (callbacks have none) rather than being silently wrong.
  """
  k = means.shape[-1]
  lead = means.shape[:-1]
  shapes = [jax.ShapeDtypeStruct(lead + shape, means.dtype)
            for shape in ((2 * k + 2,), (2 * k + 1, k), (2 * k + 1,))]
  if beta is None:
    z, d_means = jax.pure_callback(functools.partial(_host_solve_and_map, family, beta=None),
                                   tuple(shapes[:2]), means, vmap_method="broadcast_all")
    return z, d_means, None
  return jax.pure_callback(functools.partial(_host_solve_and_map, family), tuple(shapes),
                           means, beta, vmap_method="broadcast_all")


@implicit_solution.defjvp
def _implicit_jvp(family, primal, primals, tangents):
  means, beta = primals
  d_means, d_beta = tangents
  if jnp.finfo(means.dtype).bits < 64:
    z, map_means, map_beta = _solve_and_map_in_float64(family, means, beta)
  else:
    z = jax.lax.stop_gradient(primal(means, beta))
    map_means, map_beta = _tangent_map(family, means, beta, z)
    z = _with_tie(family, means, z)
  dz = map_means @ d_means
  if beta is not None:
    dz = dz + map_beta * d_beta
  return z, jnp.append(dz, jnp.zeros((), dz.dtype))  # the tie flag: no tangent


def allocation_of_z(family: Family, means: jax.Array, z: jax.Array, beta):
  """(w, gamma) from (z, tie) of `implicit_solution`, with the tie convention of
  `jbai.oracle.exact`'s module docstring."""
  k = means.shape[-1]
  x, y, tie = z[:k], z[2 * k], z[2 * k + 1] > 0
  _, _, tied = safe_means(family, means)
  if beta is None:
    total = jnp.sum(x)
    w, gamma = x / total, y / total
    w_tie = (tied / jnp.sum(tied)).astype(w.dtype)
  else:
    w, gamma = beta * x, beta * y
    is_a = jnp.arange(k) == jnp.argmax(means)
    w_tie = jnp.where(is_a, beta, (1 - beta) / (k - 1))
  return jnp.where(tie, w_tie, w), jnp.where(tie, 0.0, gamma)



__all__ = ["allocation_of_z", "implicit_solution"]
