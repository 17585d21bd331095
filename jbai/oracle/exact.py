"""Exact optimal allocation w(nu), problem complexity Gamma(nu), and beta-optimal w.

Gamma(nu) = max_{w in simplex} Gamma(nu, w) (paper eq. problem complexity), with
Gamma(nu, w) of Lemma 1, and w(nu) its maximiser (eq. optimal_proportions).

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

Degenerate inputs (used inside simulation loops on empirical means): when another
arm has the best arm's mean (KL(mu_a, mu_i) = 0, a tie), Gamma(nu, w) = 0 for every
w; the solvers then return Gamma = 0, w uniform over the tied arms (w_a = beta and
the rest uniform for the beta-optimal one), and zero derivatives, never NaN. At an
end of Theta (a Bernoulli arm at 0 or 1) the KL's partial derivatives are infinite:
the implicit derivatives are those 4 ulp inside (`_interior`), finite (they grow
like log(1/distance)). Means narrower than float64 (float32) are differentiated
in float64: z and the implicit system are solved again in float64 on the host
(a `jax.pure_callback`) at the same inputs and rounded back, since near a tie
the float32 system has lost its digits (Bernoulli [1, 0.999999, 0.2]). Under
differentiation the values are then those of the float64 solve too (a best arm
that float32 judged tied, its KL rounding to 0, is told apart); the
undifferentiated solve stays in the means' dtype. A system that is not finite
gives NaN derivatives, never a silent zero.

Certificate: for any w and any p in the simplex over the arms i != a,
Gamma(nu) <= max_j d/dw_j sum_i p_i C_i(w) (concavity and 1-homogeneity of the pair
costs C_i). `gamma_bounds` evaluates it with p_i proportional to 1 / KL(mu_i, m_i),
which is tight at w(nu); the oracles report the relative gap it leaves.
"""

import functools
import math
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.families.base import Family
from jbai.transport import gamma as gamma_of_w
from jbai.transport import transport_cost


class OracleInfo(NamedTuple):
  """Diagnostics of an oracle solve (one entry per instance in a batch)."""

  iterations: jax.Array  # [] int32, steps run (of each bisection, or of ascent)
  converged: jax.Array   # [] bool, gap <= tol
  gap: jax.Array         # [] float, certified relative gap (upper - Gamma) / Gamma


def default_iters(dtype) -> int:
  """Bisection steps: one bit of the mantissa per step, and 12 to spare."""
  return int(jnp.finfo(dtype).nmant) + 12


def _float(means: ArrayLike) -> jax.Array:
  means = jnp.asarray(means)
  if not jnp.issubdtype(means.dtype, jnp.floating):
    means = means.astype(jnp.zeros(()).dtype)
  return means


def _batched(fn: Callable, means: jax.Array, *args):
  """Applies fn, written for one [K] instance, over the leading axes of means.

  Each extra argument has shape lead + (its per-instance shape), where lead =
  means.shape[:-1].
  """
  lead = means.shape[:-1]
  size = math.prod(lead)
  flat = [v.reshape((size,) + v.shape[len(lead):]) for v in (means, *args)]
  out = jax.vmap(fn)(*flat)
  return jax.tree.map(lambda v: v.reshape(lead + v.shape[1:]), out)


def _safe_means(family: Family, means: jax.Array):
  """Replaces an instance with a tie for the best arm by a well-posed one.

  Returns:
    (means to compute with, tie flag [] bool, tied-with-best mask [K] bool).
  """
  k = means.shape[-1]
  a = jnp.argmax(means)
  tied = (means >= means[a]) | (family.kl(means[a], means) <= 0)
  tie = jnp.sum(tied) > 1
  spread = jnp.linspace(0.75, 0.25, k, dtype=means.dtype)
  fallback = family.lo + (family.hi - family.lo) * spread
  return jnp.where(tie, fallback, means), tie, tied


def _inner_x(family: Family, mu_a: jax.Array, means: jax.Array, y: jax.Array,
             iters: int) -> jax.Array:
  """x_i(y): the root of g_i(x) = y for every arm, by bisection on u = x / (1 + x).

  The best arm's own entry is meaningless (its g is 0) and is overwritten by callers.
  """
  one_ulp = jnp.finfo(means.dtype).eps

  def ratio(u):
    return u / jnp.maximum(1 - u, one_ulp)

  def body(_, bracket):
    lo, hi = bracket
    mid = 0.5 * (lo + hi)
    above = transport_cost(family, 1.0, mu_a, ratio(mid), means).value >= y
    return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

  lo, hi = jax.lax.fori_loop(0, iters, body,
                             (jnp.zeros_like(means), jnp.ones_like(means)))
  return ratio(0.5 * (lo + hi))


def _transport_points(family: Family, mu_a, x, means):
  """m_i(x): the minimisers of KL(mu_a, m) + x_i KL(mu_i, m)."""
  return transport_cost(family, 1.0, mu_a, x, means).x


def _balance(family: Family, mu_a, means, is_a, x, m, beta):
  """The last optimality condition, zero at the solution and increasing in y.

  F(y) - 1 = sum_{i != a} KL(mu_a, m_i) / KL(mu_i, m_i) - 1 for the optimal
  allocation, sum_{i != a} x_i - (1 - beta) / beta for the beta-optimal one.
  """
  if beta is not None:
    return jnp.sum(jnp.where(is_a, 0.0, x)) - (1 - beta) / beta
  kl_i = jnp.where(is_a, 1.0, family.kl(means, m))
  kl_i = jnp.maximum(kl_i, jnp.finfo(kl_i.dtype).tiny)  # KL(mu_i, m_i) = 0: F = inf
  return jnp.sum(jnp.where(is_a, 0.0, family.kl(mu_a, m) / kl_i)) - 1


def _primal(family: Family, iters: int, means: jax.Array, beta) -> jax.Array:
  """Nested bisection for one instance; returns z = (x [K], m [K], y)."""
  k = means.shape[-1]
  means, _, _ = _safe_means(family, means)
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
    above = _balance(family, mu_a, means, is_a, x, m, beta) >= 0
    return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

  lo, hi = jax.lax.fori_loop(0, iters, body, (jnp.zeros_like(y_max), y_max))
  y = 0.5 * (lo + hi)
  x = solve_x(y)
  m = jnp.where(is_a, mu_a, _transport_points(family, mu_a, x, means))
  return jnp.concatenate([x, m, y[None]])


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
  last = _balance(family, mu_a, means, is_a, x, m, beta)
  return jnp.concatenate([jnp.where(is_a, x - 1, cost),
                          jnp.where(is_a, m - mu_a, stationary), last[None]])


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _implicit(family: Family, primal: Callable, means: jax.Array, beta) -> jax.Array:
  """(z, tie) for one instance, [2K+2]: z from `primal(means, beta)`, with
  implicit derivatives, and 1.0 where the best arm is tied in the precision z
  was solved in (`_safe_means`), else 0.0."""
  return jax.lax.stop_gradient(_with_tie(family, means, primal(means, beta)))


def _with_tie(family: Family, means: jax.Array, z: jax.Array) -> jax.Array:
  return jnp.append(z, _safe_means(family, means)[1].astype(z.dtype))


def _interior(family: Family, means: jax.Array) -> jax.Array:
  """The means moved 4 ulp inside the finite ends of Theta.

  At an end of Theta the partial derivatives of the KL in its arguments are
  infinite (Bernoulli: d/dmu KL(mu, m) = log(mu (1 - m) / (m (1 - mu))) at mu = 1),
  and an infinite entry of the implicit system makes every arm's derivative NaN.
  The derivatives are those 4 ulp inside instead: finite, and since the KL's
  derivatives grow like log(1/distance) they differ from the one-sided limit only
  by that (an infinite one-sided derivative is reported as a large finite one).
  """
  eps = 4 * jnp.finfo(means.dtype).eps
  lo, hi = float(family.lo), float(family.hi)
  if math.isfinite(lo):
    means = jnp.maximum(means, lo + eps * max(1.0, abs(lo)))
  if math.isfinite(hi):
    means = jnp.minimum(means, hi - eps * max(1.0, abs(hi)))
  return means


def _tangent_map(family: Family, means: jax.Array, beta, z: jax.Array):
  """dz/dmu [2K+1, K] and dz/dbeta [2K+1] (None for the optimal allocation) at
  the solution z of one instance: -(dR/dz)^{-1} dR/d(mu, beta), from primal
  values only. Zero on a tie for the best arm (the module docstring's
  convention); NaN, never a silent zero, where the system is not finite."""
  safe, tie, _ = _safe_means(family, means)
  a = jnp.argmax(safe)
  safe = _interior(family, safe)  # finite derivatives at the ends of Theta
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
    z = _primal(family, default_iters(mu.dtype), mu, b)
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


@_implicit.defjvp
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


def _allocation(family: Family, means: jax.Array, z: jax.Array, beta):
  """(w, gamma) from (z, tie) of `_implicit`, with the tie convention of the
  module docstring."""
  k = means.shape[-1]
  x, y, tie = z[:k], z[2 * k], z[2 * k + 1] > 0
  _, _, tied = _safe_means(family, means)
  if beta is None:
    total = jnp.sum(x)
    w, gamma = x / total, y / total
    w_tie = (tied / jnp.sum(tied)).astype(w.dtype)
  else:
    w, gamma = beta * x, beta * y
    is_a = jnp.arange(k) == jnp.argmax(means)
    w_tie = jnp.where(is_a, beta, (1 - beta) / (k - 1))
  return jnp.where(tie, w_tie, w), jnp.where(tie, 0.0, gamma)


@functools.partial(jax.jit, static_argnames="family")
def gamma_bounds(family: Family, means: ArrayLike, w: ArrayLike):
  """Certified bounds Gamma(nu, w) <= Gamma(nu) <= upper for any allocation w.

  The upper bound is max_j d/dw_j sum_{i != a} p_i C_i(w) with p_i proportional to
  1 / KL(mu_i, m_i): valid for any w because each pair cost C_i is concave and
  1-homogeneous in w, and equal to Gamma(nu) at w = w(nu).

  Args:
    family: the reward family.
    means: [..., K] means.
    w: [..., K] allocations on the simplex (broadcast against means).

  Returns:
    (lower, upper), each [...]; both 0 when the best arm is tied.
  """
  means = _float(means)
  w = jnp.asarray(w, means.dtype)
  shape = jnp.broadcast_shapes(means.shape, w.shape)
  means, w = jnp.broadcast_to(means, shape), jnp.broadcast_to(w, shape)

  def one(mu, w):
    safe, tie, _ = _safe_means(family, mu)
    a = jnp.argmax(safe)
    is_a = jnp.arange(mu.shape[-1]) == a
    mu_a, w_a = safe[a], w[a]
    m = transport_cost(family, w_a, mu_a, w, safe).x
    kl_a = family.kl(mu_a, m)
    kl_i = jnp.where(is_a, 1.0, family.kl(safe, m))
    positive = jnp.all(kl_i > 0)
    kl_i = jnp.where(kl_i > 0, kl_i, 1.0)
    t = 1 / jnp.sum(jnp.where(is_a, 0.0, 1 / kl_i))
    f = jnp.sum(jnp.where(is_a, 0.0, kl_a / kl_i))
    upper = jnp.where(positive, t * jnp.maximum(1.0, f), jnp.inf)
    lower = gamma_of_w(family, safe, w)
    return jnp.where(tie, 0.0, lower), jnp.where(tie, 0.0, upper)

  return _batched(one, means, w)


@functools.partial(jax.jit, static_argnames="family")
def relative_gap(family: Family, means: ArrayLike, w: ArrayLike) -> jax.Array:
  """(upper - Gamma(nu, w)) / Gamma(nu, w) from `gamma_bounds` (0 on ties)."""
  lower, upper = gamma_bounds(family, means, w)
  return jnp.where(lower > 0, (upper - lower) / jnp.where(lower > 0, lower, 1.0),
                   jnp.where(upper > 0, jnp.inf, 0.0))


@functools.partial(jax.jit, static_argnames=("family", "iters"))
def exact_solve(family: Family, means: ArrayLike, iters: Optional[int] = None):
  """Optimal allocation w(nu) and Gamma(nu) by nested bisection (no validation).

  Pure and jit-compiled (`family` and `iters` static), vmappable; safe on ties (see the module
  docstring), so it can run on empirical means inside a simulation loop.
  Differentiable in the means by implicit differentiation.

  Args:
    family: the reward family.
    means: [..., K] arm means.
    iters: bisection steps of each of the two nested loops; default from the
      dtype (64 in float64, 35 in float32).

  Returns:
    (w [..., K], gamma [...]): w(nu) and Gamma(nu) = 1 / T*(nu).

  Example:
    >>> import jax, jbai
    >>> w, g = jbai.oracle.exact_solve(jbai.families.gaussian(), jax.numpy.array([1.2, 1.0, 1.0]))
    >>> [round(float(v), 4) for v in w]
    [0.4142, 0.2929, 0.2929]
  """
  means = _float(means)
  iters = iters or default_iters(means.dtype)
  primal = functools.partial(_primal, family, iters)

  def one(mu):
    z = _implicit(family, primal, mu, None)
    return _allocation(family, mu, z, None)

  return _batched(one, means)


@functools.partial(jax.jit, static_argnames=("family", "iters"))
def exact_beta_solve(family: Family, means: ArrayLike, beta: ArrayLike,
                     iters: Optional[int] = None):
  """Beta-optimal allocation and Gamma_beta(nu) by nested bisection (no validation).

  Args:
    family: the reward family.
    means: [..., K] arm means.
    beta: weight of the best arm, in (0, 1); broadcast against means[..., 0].
    iters: bisection steps of each of the two nested loops.

  Returns:
    (w [..., K], gamma_beta [...]): the maximiser of Gamma(nu, w) over the simplex
    with w_a = beta, and its value (T*_beta(nu) = 1 / gamma_beta).
  """
  means = _float(means)
  beta = jnp.broadcast_to(jnp.asarray(beta, means.dtype), means.shape[:-1])
  iters = iters or default_iters(means.dtype)
  primal = functools.partial(_primal, family, iters)

  def one(mu, b):
    z = _implicit(family, primal, mu, b)
    return _allocation(family, mu, z, b)

  return _batched(one, means, beta)
