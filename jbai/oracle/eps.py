"""The eps-good oracle: T*_eps(nu), its optimal allocation w*_eps(nu) and its answer.

For an additive eps >= 0, an arm i is eps-good when mu_i >= max_j mu_j - eps,
and the alternative to answering i is Alt_eps(i) = {lambda : some j != i has
lambda_j > lambda_i + eps}. The characteristic time of eps-best-arm
identification (Garivier & Kaufmann 2021, "Non-asymptotic sequential tests for
overlapping hypotheses applied to near-optimal arm identification in bandit
models", and their code EmilieKaufmann/BAI_epsBAI_code, `OptimalWeightsEpsilon`)
is

  T*_eps(nu)^{-1} = max_{i eps-good} max_{w in simplex} min_{j != i} C_ij(w),
  C_ij(w) = inf_x w_i d(mu_i, x) + w_j d(mu_j, x + eps),

the inner infimum over x in [mu_j - eps, mu_i] intersected with [lo, hi - eps]
(both alternative means in Theta): the transport cost of the eps-GLLR stop
(`jbai.eps_transport.eps_transport`), so that T*_eps is the complexity of that
stop. Gamma_eps(nu) = 1 / T*_eps(nu).

The answer. C_ij is nondecreasing in mu_i and nonincreasing in mu_j (it is an
infimum over (x, x') with x' >= x + eps of w_i d+(mu_i, x) + w_j d-(mu_j, x'),
where d+ and d- are the one-sided divergences). For an eps-good i other than a
best arm a, the allocation w' that swaps w_i and w_a gives answer a costs at least
answer i's under w, pair by pair (the pair (a, i) against (i, a) since mu_a >= mu_i).
So the maximum over i is attained at a best arm: the answer reported is
argmax(mu) (the lowest index among tied best arms, as `jnp.argmax` and the
eps-GLLR stop pick), and the solver solves for that answer alone, where
Garivier & Kaufmann's code solves for every eps-good arm and keeps the smallest
time (tests/test_eps_oracle.py checks the two agree).

Construction (Garivier & Kaufmann 2021, `aOpt`, the eps version of Garivier &
Kaufmann 2016, Theorem 5). With a the answer and, for every other arm i and
x >= 0, g_i(x) = min_m d(mu_a, m) + x d(mu_i, m + eps) (weights (1, x)), the
optimum equalises the pair costs, w_i = x_i(y) w_a with g_i(x_i(y)) = y, and y
is the root of

  F(y) = sum_{i != a} d(mu_a, m_i) / d(mu_i, m_i + eps) = 1,

m_i the minimiser of g_i(x_i(y)) (envelope theorem: g_i'(x) = d(mu_i, m_i + eps)).
Then w_a = 1 / (1 + sum_i x_i) and Gamma_eps = y w_a. The search runs over y in
[y_min, y_max): y_min = d(mu_a, min(mu_a, hi - eps)) (positive for Bernoulli arms
with mu_a > 1 - eps: lambda_a must drop to 1 - eps whatever w_i), and
y_max = min_i d(mu_a, mu_i - eps), infinite where some mu_i - eps < lo (the code's
AdmissibleAux; there y is searched on y_min + s y_scale / (1 - s), s in [0, 1)).

Each g_i is solved through its minimiser m instead of x: on m in
(max(mu_i - eps, lo), min(mu_a, hi - eps)), stationarity gives
x(m) = -d_m d(mu_a, m) / d_m d(mu_i, m + eps) in closed form and g_i(m) =
d(mu_a, m) + x(m) d(mu_i, m + eps) decreases in m, so one bisection in m finds
x_i(y) (two nested bisections in all, each with a fixed number of steps, so
that the solver ends under vmap; the code nests a third, in x, around its
bisection for the minimiser). Gaussian arms have the closed-form pieces
g_i(x) = x / (1 + x) D_i with D_i = (mu_a - mu_i + eps)^2 / (2 sigma^2): x_i(y) =
y / (D_i - y), and no inner search (the Gaussian eps problem is the exact one at
the means mu_i - eps for i != a). Where mu_i - eps < lo and the divergence has
a finite slope at lo (the exponential and Weibull families' lo > 0), the
minimiser stops at lo for large x ("corner": x = (y - d(mu_a, lo)) / d(mu_i,
lo + eps)); a minimiser stopped at hi - eps (mu_a > hi - eps for a family with
a finite slope at hi) is not handled (it needs means within eps of hi = 1e3 or
1e4; Bernoulli arms have an infinite slope at 1).

Differentiation: implicit, as `jbai.oracle.exact`. z = (x [K], m [K], y) solves
R(z; mu, eps) = 0: for i != a the pair cost d(mu_a, m_i) + x_i d(mu_i, m_i + eps)
- y and the stationarity d_m [d(mu_a, m) + x_i d(mu_i, m + eps)] at m_i (m_i -
lo at a corner), x_a - 1, m_a - mu_a, and F(y) - 1. A `jax.custom_jvp` returns
dz = -(dR/dz)^{-1} dR/d(mu, eps) (dmu, deps), so `jax.grad` works in the means
and in eps, for every family. The answer's index is held fixed (at a tie for the
best arm with eps > 0, T*_eps is the smallest of the tied answers' times, a kink:
the derivative is the first tied answer's).

At eps = 0 this is the exact problem: the solution equals `exact_solve`'s to
rounding, with its tie convention (a tie for the best arm gives Gamma = 0, w
uniform over the tied arms, zero derivatives). With eps > 0 a tie for the best
arm is no degeneracy: any tied arm is eps-good, and the answer is the first.
An arm i != a with an empty bracket (mu_i = mu_a = hi, Bernoulli arms at 1; the
code's special case) has the pair cost w_a y_min whatever w_i: then Gamma_eps =
y_min = d(mu_a, hi - eps) at w = the answer's vertex.

Sources checked: the definitions and the construction against the authors' code
(EpsilonBAIalgos.jl: `gb`, `lambdaX`, `AdmissibleAux`, `auxEps`, `aOpt`,
`OptimalWeightsEpsilon`); the paper's text was not (the stored copies here give
only its abstract).
"""

import functools
from typing import NamedTuple, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai import families
from jbai.families.base import Family, check_means
from jbai.oracle.common import as_float, batched, default_iters, interior, kl_slope, safe_means
from jbai.oracle.eps_problem import (EpsProblem, eps_problem, g_of, is_gaussian, is_saturated,
                                     x_of_m)
from jbai.eps_transport import check_slack, eps_transport


class EpsOracle(NamedTuple):
  """What `eps_solve` returns (one entry per instance in a batch)."""

  w: jax.Array       # [..., K] float, the optimal allocation w*_eps(nu)
  gamma: jax.Array   # [...] float, Gamma_eps(nu) = 1 / T*_eps(nu)
  answer: jax.Array  # [...] int32, the eps-good answer attaining the maximum


def _inner(p: EpsProblem, y, iters: int):
  """(x_i(y), m_i(y)) for every arm: g_i(x_i) = y (the answer's entries are
  overwritten by callers)."""
  family = p.family
  if is_gaussian(family):
    sigma = dict(family.params)["sigma"]
    gap = p.mu_a - p.means + p.eps
    d = gap * gap / (2.0 * sigma * sigma)
    x = y / jnp.where(p.is_a, 1.0, d - y)
    return x, (p.mu_a + x * (p.means - p.eps)) / (1.0 + x)

  def body(_, bracket):
    lo, hi = bracket
    mid = 0.5 * (lo + hi)
    above = g_of(p, x_of_m(p, mid), mid) >= y  # g_i decreases in m: the root is above
    return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

  lo, hi = jax.lax.fori_loop(0, iters, body,
                             (p.m_lo, jnp.broadcast_to(p.m_hi, p.m_lo.shape)))
  m = 0.5 * (lo + hi)
  x = x_of_m(p, m)
  # The corner: mu_i - eps < lo and g_i(lo) < y (finite slope at lo), m_i = lo.
  lo_end = jnp.asarray(family.lo, m.dtype)
  x_lo = x_of_m(p, lo_end)
  corner = (p.means - p.eps < lo_end) & (g_of(p, x_lo, lo_end) < y)
  kl_lo = family.kl(p.means, lo_end + p.eps)
  x_corner = (y - family.kl(p.mu_a, lo_end)) / jnp.where(corner, kl_lo, 1.0)
  return jnp.where(corner, x_corner, x), jnp.where(corner, lo_end, m)


def _balance(p: EpsProblem, m):
  """F(y) - 1 = sum_{i != a} d(mu_a, m_i) / d(mu_i, m_i + eps) - 1."""
  kl_i = jnp.where(p.is_a, 1.0, p.family.kl(p.means, m + p.eps))
  kl_i = jnp.maximum(kl_i, jnp.finfo(kl_i.dtype).tiny)
  return jnp.sum(jnp.where(p.is_a, 0.0, p.family.kl(p.mu_a, m) / kl_i)) - 1


def _y_map(p: EpsProblem, y_scale_fallback):
  """(y(s), s_hi): y = y_min + scale s / (1 - s) on [0, s_hi], s_hi = 1/2 (scale =
  y_max - y_min) where y_max is finite, else 1 (scale = the fallback)."""
  finite = jnp.isfinite(p.y_max)
  scale = jnp.where(finite, p.y_max - p.y_min, y_scale_fallback)
  s_hi = jnp.where(finite, 0.5, 1.0)
  return (lambda s: p.y_min + scale * s / (1 - s)), s_hi


def _primal(family: Family, iters: int, means: jax.Array, eps: jax.Array) -> jax.Array:
  """Nested bisection for one instance; returns z = (x [K], m [K], y)."""
  safe, tie, _ = safe_means(family, means)
  means = jnp.where(tie & (eps <= 0), safe, means)
  p = eps_problem(family, means, eps)
  # The fallback scale of y: the pair costs at x = 1 (mid-way in m for the search).
  m_mid = 0.5 * (p.m_lo + p.m_hi)
  g_mid = jnp.where(p.is_a, jnp.inf, g_of(p, x_of_m(p, m_mid), m_mid))
  y_of, s_hi = _y_map(p, jnp.maximum(jnp.min(g_mid) - p.y_min, jnp.finfo(means.dtype).tiny))

  def solve(y):
    x, m = _inner(p, y, iters)
    return jnp.where(p.is_a, 1.0, x), jnp.where(p.is_a, p.mu_a, m)

  def body(_, bracket):
    lo, hi = bracket
    mid = 0.5 * (lo + hi)
    _, m = solve(y_of(mid))
    above = _balance(p, m) >= 0
    return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

  lo, hi = jax.lax.fori_loop(0, iters, body, (jnp.zeros_like(s_hi), s_hi))
  y = y_of(0.5 * (lo + hi))
  x, m = solve(y)
  saturated = is_saturated(p)
  x = jnp.where(saturated, p.is_a.astype(x.dtype), x)
  m = jnp.where(saturated, jnp.where(p.is_a, p.mu_a, p.m_hi), m)
  y = jnp.where(saturated, p.y_min, y)
  return jnp.concatenate([x, m, y[None]])


def _residual(family: Family, means, eps, a, saturated, z):
  """R(z; mu, eps) of the module docstring: zero at the solution. A saturated
  instance (`is_saturated`, held fixed) has x_i = 0, m_i = m_hi and y = y_min."""
  k = means.shape[-1]
  x, m, y = z[:k], z[k:2 * k], z[2 * k]
  is_a = jnp.arange(k) == a
  mu_a = means[a]
  p = EpsProblem(family, means, eps, is_a, mu_a, None, None, None, None)
  cost = family.kl(mu_a, m) + x * family.kl(means, m + eps) - y
  stationary = kl_slope(family, mu_a, m) + x * kl_slope(family, means, m + eps)
  last = _balance(p, m)
  if not is_gaussian(family):
    lo = jnp.asarray(family.lo, m.dtype)
    corner = jax.lax.stop_gradient((means - eps < lo) & (m <= lo))
    stationary = jnp.where(corner, m - lo, stationary)
    m_hi = jnp.minimum(mu_a, family.hi - eps)
    cost = jnp.where(saturated, x, cost)
    stationary = jnp.where(saturated, m - m_hi, stationary)
    last = jnp.where(saturated, y - family.kl(mu_a, m_hi), last)
  return jnp.concatenate([jnp.where(is_a, x - 1, cost),
                          jnp.where(is_a, m - mu_a, stationary), last[None]])


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _implicit(family: Family, iters: int, means: jax.Array, eps: jax.Array) -> jax.Array:
  """z for one instance, with implicit derivatives in the means and eps."""
  return jax.lax.stop_gradient(_primal(family, iters, means, eps))


@_implicit.defjvp
def _implicit_jvp(family, iters, primals, tangents):
  means, eps = primals
  d_means, d_eps = tangents
  z = _implicit(family, iters, means, eps)
  safe, tie, _ = safe_means(family, means)
  tie = tie & (eps <= 0)
  a = jnp.argmax(jnp.where(tie, safe, means))
  saturated = is_saturated(eps_problem(family, jnp.where(tie, safe, means), eps))
  inner = interior(family, jnp.where(tie, safe, means))  # finite at the ends of Theta
  res = lambda z_, m_, e_: _residual(family, m_, e_, a, saturated, z_)
  jac = jax.jacfwd(res, argnums=0)(z, inner, eps)
  _, rhs = jax.jvp(lambda m_, e_: res(z, m_, e_), (inner, eps), (d_means, d_eps))
  finite = jnp.all(jnp.isfinite(jac))
  jac = jnp.where(finite & ~tie, jac, jnp.eye(z.shape[0], dtype=z.dtype))
  inverse = jnp.linalg.inv(jac)
  inverse = jnp.where(jnp.all(jnp.isfinite(inverse)), inverse, jnp.linalg.pinv(jac))
  dz = -inverse @ rhs
  return z, jnp.where(tie, 0.0, jnp.where(finite, dz, jnp.nan))


def _allocation(family: Family, means: jax.Array, eps: jax.Array, z: jax.Array):
  """(w, gamma, answer) from z, with exact_solve's tie convention at eps = 0."""
  k = means.shape[-1]
  x, y = z[:k], z[2 * k]
  _, tie, tied = safe_means(family, means)
  tie = tie & (eps <= 0)
  total = jnp.sum(x)
  w, gamma = x / total, y / total
  w_tie = (tied / jnp.sum(tied)).astype(w.dtype)
  return (jnp.where(tie, w_tie, w), jnp.where(tie, 0.0, gamma),
          jnp.argmax(means).astype(jnp.int32))


@functools.partial(jax.jit, static_argnames=("family", "iters"))
def eps_solve(family: Family, means: ArrayLike, eps: ArrayLike,
              iters: Optional[int] = None) -> EpsOracle:
  """w*_eps(nu), Gamma_eps(nu) = 1 / T*_eps(nu) and the answer, by nested bisection.

  Pure and jit-compiled (`family` and `iters` static), vmappable, no validation;
  differentiable in the means and in eps by implicit differentiation. At eps = 0
  it is `exact_solve` (to rounding, ties included).

  Args:
    family: the reward family.
    means: [..., K] arm means.
    eps: the additive slack >= 0, broadcast against means[..., 0].
    iters: bisection steps of each of the two nested loops; default from the
      dtype (64 in float64, 35 in float32).

  Returns:
    EpsOracle(w [..., K], gamma [...], answer [...] int32).

  Example:
    >>> import jax.numpy as jnp, jbai
    >>> sol = jbai.oracle.eps_solve(jbai.families.gaussian(),
    ...                             jnp.array([1.0, 0.97, 0.95, 0.5, 0.3]), 0.1)
    >>> round(float(1 / sol.gamma), 2), int(sol.answer)
    (621.08, 0)
  """
  means = as_float(means)
  eps = jnp.broadcast_to(jnp.asarray(eps, means.dtype), means.shape[:-1])
  iters = iters or default_iters(means.dtype)

  def one(mu, e):
    return _allocation(family, mu, e, _implicit(family, iters, mu, e))

  return EpsOracle(*batched(one, means, eps))


@functools.partial(jax.jit, static_argnames="family")
def eps_gamma(family: Family, means: ArrayLike, w: ArrayLike, eps: ArrayLike) -> jax.Array:
  """Gamma_eps(nu, w) = min_{j != a} C_aj(w) for the answer a = argmax(mu): the
  eps-GLLR's transport costs (`jbai.eps_transport.eps_transport`) at the
  weights w; at w = w*_eps(nu) it is Gamma_eps(nu).

  Args:
    family: the reward family.
    means: [..., K] means.
    w: [..., K] allocations (broadcast against means).
    eps: the slack >= 0, broadcast against means[..., 0].

  Returns:
    [...] Gamma_eps(nu, w).
  """
  means = as_float(means)
  w = jnp.asarray(w, means.dtype)
  shape = jnp.broadcast_shapes(means.shape, w.shape)
  means, w = jnp.broadcast_to(means, shape), jnp.broadcast_to(w, shape)
  eps = jnp.broadcast_to(jnp.asarray(eps, means.dtype), shape[:-1])

  def one(mu, w, e):
    a = jnp.argmax(mu)
    is_a = jnp.arange(mu.shape[-1]) == a
    costs = eps_transport(family, w[a], mu[a], w, mu, e).value
    return jnp.min(jnp.where(is_a, jnp.inf, costs))

  return batched(one, means, w, eps)


def check_eps_means(family: Family, means, eps: float) -> np.ndarray:
  """Validates means for the eps oracle: `check_means` at eps = 0; with eps > 0
  a tie for the best arm is allowed (every tied arm is eps-good), the rest is
  checked alike (shape, NaN, finite, inside Theta)."""
  if eps == 0:
    return check_means(family, means)
  try:
    arr = np.asarray(means, dtype=float)
  except (TypeError, ValueError):
    raise TypeError(f"means must be a [K] or [I, K] array of numbers, got {means!r}"[:200]) \
        from None
  if arr.ndim not in (1, 2) or arr.shape[-1] < 2 or arr.size == 0:
    raise ValueError(f"means must have shape [K] or [I, K] with K >= 2 and at least one "
                     f"instance, got shape {arr.shape}")
  if not np.isfinite(arr).all():
    raise ValueError(f"means must be finite numbers (no NaN), got {arr.tolist()}")
  bad = arr[(arr < family.lo) | (arr > family.hi)]
  if bad.size:
    raise ValueError(f"mean {float(bad[0])!r} is outside Theta = [{family.lo}, {family.hi}] "
                     f"of the {family.name} family (means {arr.tolist()})")
  return arr


def eps_optimal_allocation(family: Union[Family, str], means: ArrayLike,
                           eps: float) -> EpsOracle:
  """w*_eps(nu), Gamma_eps(nu) = 1 / T*_eps(nu) and the answer, validated.

  Args:
    family: a `Family` or the name of a built-in one.
    means: [K] or [I, K] arm means in Theta (with eps > 0 the best arm may be tied).
    eps: the additive slack, a number in [0, hi - lo).

  Returns:
    `EpsOracle(w, gamma, answer)` from `eps_solve`, in the means' dtype.

  Raises:
    ValueError: for an unknown family, a bad eps, means outside Theta, NaN,
      fewer than two arms, or (eps = 0) a tie for the best arm.

  Example:
    >>> import jbai
    >>> sol = jbai.oracle.eps_optimal_allocation("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0], 0.0)
    >>> round(float(1 / sol.gamma), 2)
    450.0
  """
  if isinstance(family, str):
    family = families.get(family)
  eps = check_slack(eps, family)
  arr = check_eps_means(family, means, eps)
  return eps_solve(family, jnp.asarray(arr, jnp.result_type(float)), eps)


__all__ = ["EpsOracle", "check_eps_means", "eps_gamma",
           "eps_optimal_allocation", "eps_solve"]
