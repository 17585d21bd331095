"""Exact optimal allocation w(nu), problem complexity Gamma(nu), and beta-optimal w.

Gamma(nu) = max_{w in simplex} Gamma(nu, w) (paper eq. problem complexity), with
Gamma(nu, w) of Lemma 1, and w(nu) its maximiser (eq. optimal_proportions).

The optimum equalises the pair costs C_i(w) = min_m w_a KL(mu_a, m) + w_i KL(mu_i, m)
over the arms i != a (a the best arm); its variables z = (x [K], m [K], y) (x_i =
w_i / w_a, m_i the transport points, y the common pair cost at w_a = 1) are found
by the nested bisection of `jbai.oracle.bisection` (Garivier & Kaufmann, 2016,
Theorem 5; the beta-optimal allocation, w_a = beta, alike) and differentiated
implicitly by `jbai.oracle.implicit`.

Degenerate inputs (used inside simulation loops on empirical means): when another
arm has the best arm's mean (KL(mu_a, mu_i) = 0, a tie), Gamma(nu, w) = 0 for every
w; the solvers then return Gamma = 0, w uniform over the tied arms (w_a = beta and
the rest uniform for the beta-optimal one), and zero derivatives, never NaN. At an
end of Theta (a Bernoulli arm at 0 or 1) the KL's partial derivatives are infinite:
the implicit derivatives are those 4 ulp inside (`jbai.oracle.common.interior`),
finite (they grow like log(1/distance)). Means narrower than float64 (float32) are differentiated
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
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.families.base import Family
from jbai.oracle.bisection import nested_bisection
from jbai.oracle.common import as_float, batched, default_iters, safe_means
from jbai.oracle.implicit import allocation_of_z, implicit_solution
from jbai.transport import gamma as gamma_of_w
from jbai.transport import transport_cost


class OracleInfo(NamedTuple):
  """Diagnostics of an oracle solve (one entry per instance in a batch)."""

  iterations: jax.Array  # [] int32, steps run (of each bisection, or of ascent)
  converged: jax.Array   # [] bool, gap <= tol
  gap: jax.Array         # [] float, certified relative gap (upper - Gamma) / Gamma


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
  means = as_float(means)
  w = jnp.asarray(w, means.dtype)
  shape = jnp.broadcast_shapes(means.shape, w.shape)
  means, w = jnp.broadcast_to(means, shape), jnp.broadcast_to(w, shape)

  def one(mu, w):
    safe, tie, _ = safe_means(family, mu)
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

  return batched(one, means, w)


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
  means = as_float(means)
  if family.solve is not None:  # a model with its own oracle (Family.solve)
    return batched(family.solve, means)
  iters = iters or default_iters(means.dtype)
  primal = functools.partial(nested_bisection, family, iters)

  def one(mu):
    z = implicit_solution(family, primal, mu, None)
    return allocation_of_z(family, mu, z, None)

  return batched(one, means)


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
  means = as_float(means)
  beta = jnp.broadcast_to(jnp.asarray(beta, means.dtype), means.shape[:-1])
  iters = iters or default_iters(means.dtype)
  primal = functools.partial(nested_bisection, family, iters)

  def one(mu, b):
    z = implicit_solution(family, primal, mu, b)
    return allocation_of_z(family, mu, z, b)

  return batched(one, means, beta)
