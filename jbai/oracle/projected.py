"""Optimal allocation w(nu) by projected gradient ascent on the simplex, with optax.

The solver maximises a smoothed log Gamma(nu, w):

  f_T(w) = -T log sum_{i != a} exp(-log C_i(w) / T)   (soft-min of the log pair costs)

over the simplex, with the temperature T decreasing geometrically from
`temperatures[0]` to `temperatures[1]` (f_T <= log Gamma(nu, w) <= f_T + T log(K-1)).
Working with log costs makes the steps independent of the scale of the instance.

Each step is an optax gradient transformation followed by optax's Euclidean
projection on the simplex (`optax.projections.projection_simplex`):

  1. `scale_by_simplex_geometry()`: the gradient g of the loss -f_T becomes
     u_i = w_i (g_i - sum_j w_j g_j), the first-order exponentiated-gradient (mirror
     ascent) direction, tangent to the simplex;
  2. `optax.scale_by_learning_rate`: step eta = min(1, `step_scale` * T), stable for
     the soft-min, whose curvature grows as 1 / T;
  3. projection on the simplex.

Because f_T(c w) = f_T(w) + log c, the shares s_i = w_i df_T/dw_i lie on the
simplex, and the step is w <- (1 - eta) w + eta s: every weight moves in
proportion to its own size and its share, so weights far below 1/K (large K,
distant arms) converge as fast as the others, and no weight can become negative
(eta <= 1); the projection then only removes rounding. Plain Euclidean steps are
too coarse for small weights, and Adam's per-coordinate normalisation moves every
weight by the same amount on symmetric instances, which the projection cancels;
both are avoided here. The fixed point s(w) = w is the optimality condition.

The start is a Newton-free heuristic: w_i proportional to 1 / C_i(1, 1) for the arms
i != a (the weight that equalises the pair costs when the best arm's weight is
large) and w_a = sqrt(sum_i w_i^2) (exact for Gaussian arms with equal gaps).

Accuracy (float64, default settings, 1000 steps): on random instances of the
built-in families with K up to 20 and gaps down to 1% of Theta, max |w - w(nu)| is
about 1e-4 at worst and the relative error of Gamma about 2e-7 (tests/test_oracle.py).
The remaining error in w lies along the ridge where all pair costs are equal, in
the direction of the best arm's weight; Gamma is smooth (quadratic) there and falls
sharply (linearly) across the ridge, so Gamma is far more accurate than w. The
error in w falls as 1 / steps.

Derivatives in the means are implicit (those of the exact solution; see
`jbai.oracle.implicit`), not through the optimisation loop.
"""

import functools
from typing import Optional, Tuple

import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

from jbai.families.base import Family
from jbai.oracle.common import as_float, batched, safe_means
from jbai.oracle.implicit import allocation_of_z, implicit_solution
from jbai.transport import gamma as gamma_of_w
from jbai.transport import transport_cost

DEFAULT_STEPS = 1000


def scale_by_simplex_geometry() -> optax.GradientTransformation:
  """Turns a gradient g at w into the mirror-ascent direction w * (g - <w, g>).

  The update sums to zero (it is tangent to the simplex) and vanishes where the
  gradient is equal on the support of w, the optimality condition on the simplex.

  Returns:
    A stateless optax transformation that needs `params` (the weights w).
  """

  def update(updates, params):
    return params * (updates - jnp.sum(params * updates))

  return optax.stateless(update)


def _warm_start(family: Family, means: jax.Array, is_a: jax.Array) -> jax.Array:
  mu_a = jnp.sum(jnp.where(is_a, means, 0.0))
  unit = transport_cost(family, 1.0, mu_a, 1.0, means).value
  w = jnp.where(is_a, 0.0, 1 / jnp.where(is_a, 1.0, unit))
  w = jnp.where(is_a, jnp.sqrt(jnp.sum(w * w)), w)
  return w / jnp.sum(w)


def _solve_w(family: Family, means: jax.Array, steps: int, step_scale: float,
             temperatures: Tuple[float, float]) -> jax.Array:
  """Projected soft-min ascent for one well-posed instance (unique best arm)."""
  k = means.shape[-1]
  a = jnp.argmax(means)
  is_a = jnp.arange(k) == a
  mu_a = means[a]
  t_first, t_last = temperatures
  decay = (t_last / t_first) ** (1 / max(steps - 1, 1))

  def loss_grad(w, temperature):
    """Gradient of -f_T, from the envelope theorem for each pair cost C_i:
    dC_i/dw_a = KL(mu_a, m_i) and dC_i/dw_i = KL(mu_i, m_i) at its minimiser m_i."""
    x = transport_cost(family, w[a], mu_a, w, means).x
    kl_a, kl_i = family.kl(mu_a, x), family.kl(means, x)
    c = jnp.where(is_a, 1.0, w[a] * kl_a + w * kl_i)  # C_i(w); the leader's is unused
    share = jax.nn.softmax(jnp.where(is_a, -jnp.inf, -jnp.log(c) / temperature))
    return -jnp.where(is_a, jnp.sum(share * kl_a / c), share * kl_i / c)

  dtype = means.dtype
  decay = jnp.asarray(decay, dtype)
  temperature = lambda count: jnp.asarray(t_first, dtype) * decay ** count
  step = lambda count: jnp.minimum(step_scale * temperature(count), 1.0)
  optimizer = optax.chain(scale_by_simplex_geometry(), optax.scale_by_learning_rate(step))

  def body(i, carry):
    w, state = carry
    grad = loss_grad(w, temperature(i))
    updates, state = optimizer.update(grad, state, w)
    w = optax.projections.projection_simplex(optax.apply_updates(w, updates)).astype(dtype)
    return w, state

  w0 = _warm_start(family, means, is_a)
  w, _ = jax.lax.fori_loop(0, steps, body, (w0, optimizer.init(w0)))
  return w


def _z_from_w(family: Family, means: jax.Array, w: jax.Array) -> jax.Array:
  """The exact solver's variables z = (x, m, y) at an allocation w."""
  k = means.shape[-1]
  a = jnp.argmax(means)
  is_a = jnp.arange(k) == a
  x = w / w[a]
  m = jnp.where(is_a, means[a], transport_cost(family, 1.0, means[a], x, means).x)
  y = gamma_of_w(family, means, w) / w[a]
  return jnp.concatenate([x, m, y[None]])


def _primal(family, steps, step_scale, temperatures, means, beta):
  del beta  # the optimal allocation only
  safe, _, _ = safe_means(family, means)
  return _z_from_w(family, safe, _solve_w(family, safe, steps, step_scale, temperatures))


def default_temperatures(dtype) -> Tuple[float, float]:
  """Soft-min temperatures (first, last): the last sets the bias, T log(K - 1)."""
  return 1.0, max(1e-7, 100 * float(jnp.finfo(dtype).eps))


@functools.partial(jax.jit, static_argnames=("family", "steps", "step_scale", "temperatures"))
def projected_solve(family: Family, means: ArrayLike, steps: int = DEFAULT_STEPS,
                    step_scale: float = 1.0,
                    temperatures: Optional[Tuple[float, float]] = None):
  """Optimal allocation w(nu) and Gamma(nu) by optax projected ascent (no validation).

  Pure and jit-compiled (`family` and the settings static), vmappable; safe on ties
  (Gamma = 0, w uniform over the tied best arms). Differentiable in the means by
  implicit differentiation of the optimality conditions.

  Args:
    family: the reward family.
    means: [..., K] arm means.
    steps: number of projected ascent steps (fixed, so it ends under vmap).
    step_scale: step size as a multiple of the current temperature (capped at 1).
    temperatures: (first, last) soft-min temperatures; default from the dtype.

  Returns:
    (w [..., K], gamma [...]) with gamma = Gamma(nu, w), a lower bound on Gamma(nu).

  Example:
    >>> import jax, jbai
    >>> w, g = jbai.oracle.projected_solve(jbai.families.gaussian(), jax.numpy.array([1.2, 1.0, 1.0]))
    >>> [round(float(v), 4) for v in w]
    [0.4142, 0.2929, 0.2929]
  """
  means = as_float(means)
  temperatures = tuple(temperatures or default_temperatures(means.dtype))
  primal = functools.partial(_primal, family, steps, step_scale, temperatures)

  def one(mu):
    z = implicit_solution(family, primal, mu, None)
    return allocation_of_z(family, mu, z, None)

  return batched(one, means)
