"""The oracle of Gaussian arms whose variances are unknown, and the cost of not knowing them.

When the variances are nuisance parameters, the divergence from arm i to an
alternative of mean l is minimised over the alternative's variance:

  KL_i(l) = inf_{s^2} KL(N(mu_i, sigma_i^2), N(l, s^2)) = (1/2) log(1 + (mu_i - l)^2 / sigma_i^2)

(Jourdan, Degenne & Kaufmann, ALT 2023, arXiv 2210.00974: the characteristic time
of the model with unknown variances), and

  1 / T*_uv(nu) = Gamma_uv(nu) = max_w min_{b != a} inf_l w_a KL_a(l) + w_b KL_b(l).

Solver: the reduction of Garivier & Kaufmann (2016, Theorem 5) with a divergence
per arm (as `jbai.variance.oracle`), by nested bisection. For y in
[0, min_b KL_a(mu_b)), x_b(y) solves g_b(x) = inf_l KL_a(l) + x KL_b(l) = y
(bisection on u = x / (1 + x); g_b is the unknown-variance pair cost with weights
(1, x), `jbai.variance.costs.uv_cost`, whose inner problem is not convex and is
solved globally there), and y solves F(y) = sum_b KL_a(l_b) / KL_b(l_b) = 1 at the
minimisers l_b (bisection; F is nondecreasing, since l_b moves towards mu_b as x_b
grows). g_b is concave in x (an infimum of affine functions), so the optimum is the
crossing of F through 1 even where l_b jumps between the inner problem's two
minima. Then w = x / sum x (x_a = 1) and Gamma = y w_a. The beta-optimal
allocation (w_a = beta) solves sum_b x_b(y) = (1 - beta) / beta instead, with
w = beta x and Gamma_beta = beta y.

Derivatives: of Gamma and T* only, by Danskin's theorem. At the optimum the pair
costs are equal, and the multipliers of the max-min are
pi_b = (1 / KL_b(l_b)) / sum_c (1 / KL_c(l_c)) (the stationarity in w_b gives
pi_b KL_b(l_b) = nu, and in w_a gives F = 1 back), so
dGamma = sum_b pi_b dC_b(w*, l_b) with w* and l_b held fixed; the same multipliers
serve the beta-optimal allocation (no stationarity in the fixed w_a). w* is returned
without derivatives (stop_gradient).

`ratio_two_arms` is the closed form of T*_uv / T*_known for two arms of equal
variance (derived in its docstring); `cost_of_not_knowing` is the ratio for any
instance from the two oracles.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.oracle.bisection import ratio_root
from jbai.oracle.common import batched, default_iters
from jbai.variance.costs import uv_cost
from jbai.variance.oracle import Oracle, check_beta, check_instance, solve


def divergence(m: ArrayLike, var: ArrayLike, l: ArrayLike) -> jax.Array:
  """KL_i(l) = (1/2) log(1 + (m - l)^2 / var), elementwise."""
  return 0.5 * jnp.log1p((jnp.asarray(m) - l) ** 2 / var)


class _Solution(NamedTuple):
  x: jax.Array  # [K] float, w / w_a (1 at the best arm)
  l: jax.Array  # [K] float, the alternative's common mean of each pair
  y: jax.Array  # [] float, the equalised pair cost with w_a = 1


def _inner_x(mu_a, v_a, means, var, y, iters):
  """x_b(y) for every arm: g_b(x) = y (`jbai.oracle.bisection.ratio_root`)."""
  return ratio_root(lambda x: uv_cost(1.0, mu_a, v_a, x, means, var).value, y, means, iters)


def _nested(means, var, beta) -> _Solution:
  """The nested bisection of the module docstring, for one instance (no tie);
  beta = 0 for the optimal allocation, else the best arm's weight."""
  k = means.shape[-1]
  iters = default_iters(means.dtype)
  a = jnp.argmax(means)
  is_a = jnp.arange(k) == a
  mu_a, v_a = means[a], var[a]
  y_max = jnp.min(jnp.where(is_a, jnp.inf, divergence(mu_a, v_a, means)))

  def pieces(y):
    x = jnp.where(is_a, 1.0, _inner_x(mu_a, v_a, means, var, y, iters))
    l = uv_cost(1.0, mu_a, v_a, x, means, var).x
    return x, l

  safe_beta = jnp.where(beta > 0, beta, 1.0)

  def balance(y):
    x, l = pieces(y)
    kl_b = jnp.maximum(divergence(means, var, l), jnp.finfo(means.dtype).tiny)
    f = jnp.sum(jnp.where(is_a, 0.0, divergence(mu_a, v_a, l) / kl_b)) - 1
    g = jnp.sum(jnp.where(is_a, 0.0, x)) - (1 - safe_beta) / safe_beta
    return jnp.where(beta > 0, g, f)

  def body(_, bracket):
    lo, hi = bracket
    mid = 0.5 * (lo + hi)
    above = balance(mid) >= 0
    return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

  lo, hi = jax.lax.fori_loop(0, iters, body, (jnp.zeros_like(y_max), y_max))
  y = 0.5 * (lo + hi)
  x, l = pieces(y)
  return _Solution(x=x, l=jnp.where(is_a, mu_a, l), y=y)


def _solve_one(means, var, beta):
  k = means.shape[-1]
  a = jnp.argmax(means)
  is_a = jnp.arange(k) == a
  tied = means >= means[a]
  tie = jnp.sum(tied) > 1
  fixed = beta > 0
  spread = jnp.linspace(1.0, 0.0, k, dtype=means.dtype)  # a well-posed stand-in on a tie
  beta = jax.lax.stop_gradient(beta)
  sol = jax.lax.stop_gradient(_nested(jnp.where(tie, spread, means), var, beta))
  w = jnp.where(fixed, beta * sol.x, sol.x / jnp.sum(sol.x))
  gamma = sol.y * w[a]
  # Danskin: dGamma = sum_b pi_b dC_b(w*, l_b), w* and l_b held fixed.
  kl_a = divergence(means[a], var[a], sol.l)
  kl_b = divergence(means, var, sol.l)
  inv = jnp.where(is_a, 0.0, 1 / jnp.maximum(jax.lax.stop_gradient(kl_b),
                                             jnp.finfo(means.dtype).tiny))
  pi = inv / jnp.sum(inv)
  pair = w[a] * kl_a + w * kl_b
  gamma = gamma + jnp.sum(pi * (pair - jax.lax.stop_gradient(pair)))
  w_tie = jnp.where(fixed, jnp.where(is_a, beta, (1 - beta) / (k - 1)), tied / jnp.sum(tied))
  w = jnp.where(tie, w_tie, w)
  gamma = jnp.where(tie, 0.0, gamma)
  t_star = jnp.where(gamma > 0, 1 / jnp.where(gamma > 0, gamma, 1.0), jnp.inf)
  return Oracle(w=w, gamma=gamma, t_star=t_star)


def solve_uv(means: ArrayLike, sigma: ArrayLike, beta: ArrayLike = 0.0) -> Oracle:
  """The unknown-variance oracle, raw: no checks, for use inside traced code.

  Batched over leading axes, jit/vmap-able; Gamma and T* are differentiable in
  the means and sigma (Danskin, module docstring), w* and beta are not.

  Args:
    means: [..., K] arm means.
    sigma: [..., K] (or broadcastable) true standard deviations > 0.
    beta: 0 for the optimal allocation, or the best arm's weight in (0, 1) for the
      beta-optimal one; a scalar or one per instance ([...]).

  Returns:
    Oracle(w [..., K], gamma [...], t_star [...]) of the unknown-variance model.

  Example:
    >>> o = solve_uv(jnp.array([1.0, 0.0]), jnp.array([1.0, 1.0]))
    >>> round(float(o.t_star), 4)  # 1 / ((1/2) log(1 + 1/4))
    8.9628
  """
  means = jnp.asarray(means)
  if not jnp.issubdtype(means.dtype, jnp.floating):
    means = means * 1.0
  sigma = jnp.broadcast_to(jnp.asarray(sigma, means.dtype), means.shape)
  beta = jnp.broadcast_to(jnp.asarray(beta, means.dtype), means.shape[:-1])
  return batched(_solve_one, means, sigma * sigma, beta)


@jax.jit
def _both(means, sigma, beta):
  return solve_uv(means, sigma, beta), solve(means, sigma, beta)


def cost_of_not_knowing(means: ArrayLike, sigma: ArrayLike, beta=None) -> tuple:
  """T*_uv(nu) / T*_known(nu) of checked, concrete inputs, with both oracles.

  The asymptotic ratio of the expected sample complexities of an optimal rule
  that estimates the variances to one that is told them (as delta -> 0); with
  beta, T*_beta,uv / T*_beta,known, the ratio for top-two rules of parameter beta.

  Args:
    means: [K] or [I, K] means with a unique best arm.
    sigma: a scalar, [K] or [I, K] standard deviations > 0.
    beta: None, or the best arm's weight in (0, 1).

  Returns:
    (ratio [...], uv Oracle, known Oracle).

  Raises:
    ValueError: as `jbai.variance.oracle.check_instance`, and for a beta outside
      (0, 1).
  """
  means, sigma = check_instance(means, sigma)
  beta = check_beta(beta)
  dtype = jnp.zeros(()).dtype
  uv, known = _both(jnp.asarray(means, dtype), jnp.asarray(sigma, dtype),
                    jnp.asarray(beta, dtype))
  return uv.t_star / known.t_star, uv, known


def ratio_two_arms(gap_over_sigma: ArrayLike) -> jax.Array:
  """T*_uv / T*_known for two arms of one variance sigma^2 and gap Delta, in closed form.

  By symmetry (each pair cost is concave in w and the problem is symmetric under
  swapping the arms and reflecting l about the midpoint) w* = (1/2, 1/2) in both
  models. With a = Delta / (2 sigma) and l = midpoint + x sigma, the
  unknown-variance cost is (1/4) log h with
  h = (1 + (a - x)^2)(1 + (a + x)^2) = (1 + a^2 + x^2)^2 - 4 a^2 x^2, minimal at
  x^2 = max(a^2 - 1, 0): h = (1 + a^2)^2 for a <= 1 (the midpoint) and h = 4 a^2
  for a > 1 (two minima off the midpoint). The known cost is a^2 / 2, so

    T*_uv / T*_known = a^2 / log(1 + a^2)   (a <= 1),
                       a^2 / log(2 a)       (a > 1),

  which tends to 1 as the gap shrinks and grows as a^2 / log a for large gaps.
  (Derived here, a check of the oracles; the large-gap regime is where the
  unknown-variance GLR needs its nonconvex inner solve.)

  Args:
    gap_over_sigma: [...] Delta / sigma > 0.

  Returns:
    [...] the ratio.

  Example:
    >>> round(float(ratio_two_arms(1.0)), 6)  # a = 1/2
    1.120355
  """
  a = 0.5 * jnp.asarray(gap_over_sigma) * 1.0
  return jnp.where(a <= 1, a * a / jnp.log1p(a * a),
                   a * a / jnp.log(2 * jnp.maximum(a, 1.0)))


__all__ = ["cost_of_not_knowing", "divergence", "ratio_two_arms", "solve_uv"]
