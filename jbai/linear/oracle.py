"""The linear bandit's oracle: T*(theta), the optimal design w*, and their dual.

For features X [K, d], parameter theta and noise sigma_a (Soare, Lazaric & Munos
2014, Sec. 3; Jedra & Proutiere 2020, eq. (3); Degenne et al. 2020, Sec. 2):

  1 / T*(theta) = Gamma* = max_{w in simplex} min_{x != x*} f_x(w),
  f_x(w) = Delta_x^2 / (2 ||x* - x||^2_{A(w)^-1}),  A(w) = sum_a w_a x_a x_a^T / sigma_a^2,

with Delta_x = (x* - x)^T theta. With one sigma for every arm this is the
papers' Delta_x^2 / (2 sigma^2 ||x* - x||^2_{A(w)^-1}) with A(w) = sum_a w_a x_a x_a^T;
per-arm noise enters A(w) as the weights 1 / sigma_a^2 (the Fisher information of
one pull of arm a), our extension of their homoscedastic form.

Each f_x is concave in w (1 / y^T A^-1 y = min_{z^T y = 1} z^T A z, a minimum of
functions linear in A) and homogeneous of degree 1, so the problem is a concave
maximisation, and by Euler's identity sum_a w_a d f_x / d w_a = f_x. Hence:

  * d log f_x / d w_a = (x_a^T A^-1 y_x)^2 / (sigma_a^2 ||y_x||^2_{A^-1}), y_x = x* - x,
    and the shares s_a = w_a sum_x lambda_x d log f_x / d w_a lie on the simplex for
    any weights lambda on the simplex;
  * for any dual weights mu on the alternatives, Gamma* <= max_a sum_x mu_x d f_x / d w_a
    (concavity of sum_x mu_x f_x >= min_x f_x, and Euler): a certified upper bound, so
    that `gap` = upper / Gamma(w) - 1 bounds the relative error of Gamma(w) <= Gamma*.

Solver, in three stages (docs/design/linear.md):

  1. ascent: the annealed soft-min multiplicative ascent of `jbai.oracle.projected`
     on the log costs, lambda = softmax(-log f / T), w_a <- w_a g_a^eta with
     g_a = sum_x lambda_x d log f_x / d w_a, eta = min(3 T, 1/2), and T falling
     geometrically from 1 to `default_temperatures(dtype)[1]` over a fixed number of
     steps (so that it ends under vmap). It is the multiplicative algorithm of
     optimal design (Silvey, Titterington & Torsney 1978) with Fellman's exponent
     1/2, which solves a single direction (c-optimality) in one step where the
     plain exponent 1 oscillates. A step costs O(K^2 d + d^3) (the Gram matrix
     X A^-1 X^T).
  2. polish: an active-set Newton method (least squares) on the KKT system
     f_x(w) = Gamma on the active alternatives, sum_x mu_x d f_x / d w_a = Gamma on
     the support of w, from three readings of the support and the active set,
     vmapped; its Jacobian is [2K + 2, 2K + 1] (`polish=False` skips it for large K).
  3. certificate: the gap above, from the dual weights; the design with the larger
     Gamma(w) of the ascent and the polish is returned.

This departs from the papers' codes (FWS's `linear/`, LinBAI.jl), which solve
the same problem by Frank-Wolfe one instance at a time; here it is vmapped over
instances and certified.

Gradient (first order, in theta, the features and sigma): by the envelope theorem
at the saddle point (w*, mu*) of max_w min_mu sum_x mu_x f_x(w),

  d Gamma* / dp = sum_x mu*_x (d f_x / dp)(w*),

the gradient of the active costs weighted by the optimal dual weights, w* held
fixed. mu* comes from the solver's last soft-min weights: at a fixed point of the
ascent, sum_x lambda_x d log f_x / d w_a = 1 on the support of w, i.e.
mu_x proportional to lambda_x / f_x satisfies the KKT condition
sum_x mu_x d f_x / d w_a = const on the support. w* itself is returned without
derivatives (its derivative needs the KKT system's implicit solve: not done here),
and second derivatives of T* are not those of the solution.
"""

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.oracle.projected import default_temperatures

DEFAULT_STEPS = 2000
STEP_SCALE = 3.0
NEWTON_STEPS = 8
# (support, active) relative thresholds of the Newton polish's candidates
CANDIDATES = ((1e-2, 1e-3), (1e-3, 1e-2), (1e-5, 1e-1))
POLISH_ROUNDS = 5


class LinearOracle(NamedTuple):
  """The oracle's solution at one or a batch of linear instances."""

  t_star: jax.Array     # [...] float, T*(theta) = 1 / gamma
  gamma: jax.Array      # [...] float, Gamma(w) = min_x f_x(w), a lower bound on Gamma*
  w: jax.Array          # [..., K] float, the design w* (no derivatives)
  dual: jax.Array       # [..., K] float, mu*: weights on the alternatives x (0 at x*)
  gap: jax.Array        # [...] float, certified relative gap upper / gamma - 1
  converged: jax.Array  # [...] bool, gap <= tol
  best: jax.Array       # [...] int32, the index of x*


def _costs(features, theta, inv_var, w, best):
  """f_x(w) [K] (+inf at x*), the Gram matrix G = X A^-1 X^T [K, K] and the
  squared norms n_x = ||x* - x||^2_{A^-1} [K]."""
  k = features.shape[0]
  a = (features * (w * inv_var)[:, None]).T @ features
  chol = jax.scipy.linalg.cho_factor(a, lower=True)
  g = features @ jax.scipy.linalg.cho_solve(chol, features.T)
  g = 0.5 * (g + g.T)
  n = g[best, best] - 2 * g[best] + jnp.diagonal(g)
  delta = features[best] @ theta - features @ theta
  is_best = jnp.arange(k) == best
  ok = (n > 0) & ~is_best
  f = jnp.where(ok, jnp.maximum(delta, 0) ** 2 / (2 * jnp.where(ok, n, 1)), 0.0)
  return jnp.where(is_best, jnp.inf, f), g, jnp.where(ok, n, 1.0)


def _log_grad(g, n, inv_var, best, weights):
  """[K]: sum_x weights_x d log f_x / d w_a, from the Gram matrix."""
  u = g[:, best][:, None] - g  # [K (a), K (x)]: x_a^T A^-1 y_x
  return inv_var * ((u * u) @ (weights / n))


def _ascent(features, theta, inv_var, best, steps, temperatures):
  """The annealed soft-min multiplicative ascent (module docstring): w [K]."""
  k = features.shape[0]
  dtype = features.dtype
  is_best = jnp.arange(k) == best
  t_first, t_last = temperatures
  decay = jnp.asarray((t_last / t_first) ** (1 / max(steps - 1, 1)), dtype)
  tiny = jnp.finfo(dtype).tiny
  # A weight's floor: eps^2 keeps 1/w and its square finite (a weight at `tiny`
  # overflows ||x* - x||^2_{A^-1} and the gradient to inf/inf = NaN in float32, on
  # Soare's instance at d = 3), far below any weight that moves Gamma in the dtype.
  floor = jnp.finfo(dtype).eps ** 2

  def body(i, w):
    temperature = t_first * decay ** i
    f, g, n = _costs(features, theta, inv_var, w, best)
    log_f = jnp.log(jnp.maximum(f, tiny))
    lam = jax.nn.softmax(jnp.where(is_best, -jnp.inf, -log_f / temperature))
    grad = _log_grad(g, n, inv_var, best, lam)  # sum_a w_a grad_a = 1
    w = w * grad ** jnp.minimum(STEP_SCALE * temperature, 0.5)
    return jnp.maximum(w / jnp.sum(w), floor)

  return jax.lax.fori_loop(0, steps, body, jnp.full((k,), 1.0 / k, dtype))


def _certify(features, theta, inv_var, best, w, mu):
  """(gamma, gap) of a design w and dual weights mu: Gamma(w) = min_x f_x(w) and
  the certified relative gap max_a sum_x mu_x d f_x / d w_a / Gamma(w) - 1."""
  f, g, n = _costs(features, theta, inv_var, w, best)
  gamma = jnp.min(f)
  upper = jnp.max(_log_grad(g, n, inv_var, best, mu * jnp.where(jnp.isfinite(f), f, 0.0)))
  return gamma, upper / gamma - 1


def _kkt(features, theta, inv_var, best, support, active, z):
  """The KKT residual [2K + 2] of z = (w [K], mu [K], gamma) for a support of w and
  an active set of alternatives: f_x = gamma on the active set, sum_x mu_x d f_x /
  d w_a = gamma on the support, zero weights elsewhere, sum w = sum mu = 1."""
  k = features.shape[0]
  w, mu, gamma = z[:k], z[k:2 * k], z[2 * k]
  f, g, n = _costs(features, theta, inv_var, w, best)
  grad = _log_grad(g, n, inv_var, best, mu * jnp.where(active, f, 0.0))
  return jnp.concatenate([jnp.where(active, f - gamma, mu), jnp.where(support, grad - gamma, w),
                          jnp.stack([jnp.sum(w) - 1, jnp.sum(mu) - 1])])


def _polish(features, theta, inv_var, best, w, mu, support_tol, active_tol):
  """Newton (least-squares) steps on the KKT system of the support and active set
  read from an approximate (w, mu), in `POLISH_ROUNDS` rounds of an active-set
  method (drop the arms whose weight, and the alternatives whose dual weight, came
  out negative; add those that violate the KKT conditions); returns the (w, mu) of
  the round with the largest Gamma(w), which `_certify` then judges."""
  k = features.shape[0]
  tiny = jnp.finfo(w.dtype).tiny
  f = _costs(features, theta, inv_var, w, best)[0]
  gamma = jnp.min(f)

  def newton(support, active):
    z = jnp.concatenate([jnp.where(support, w, 0.0), jnp.where(active, mu, 0.0), gamma[None]])
    z = z.at[:k].divide(jnp.sum(z[:k]))
    z = z.at[k:2 * k].divide(jnp.maximum(jnp.sum(z[k:2 * k]), tiny))
    residual = functools.partial(_kkt, features, theta, inv_var, best, support, active)

    def step(_, z):  # least squares: one of the 2K + 2 rows is redundant (Euler)
      return z - jnp.linalg.lstsq(jax.jacfwd(residual)(z), residual(z))[0]

    return jax.lax.fori_loop(0, NEWTON_STEPS, step, z)

  def round_(_, carry):
    support, active, best_z, best_gamma = carry
    z = newton(support, active)
    w2, mu2, gamma2 = jnp.maximum(z[:k], 0.0), jnp.maximum(z[k:2 * k], 0.0), z[2 * k]
    w2 = w2 / jnp.sum(w2)  # Gamma(w) is homogeneous: compare designs on the simplex
    f2, g2, n2 = _costs(features, theta, inv_var, w2, best)
    grad2 = _log_grad(g2, n2, inv_var, best, mu2 * jnp.where(active, f2, 0.0))
    found = jnp.nan_to_num(jnp.min(f2), nan=-1.0)
    keep = found > best_gamma
    best_z, best_gamma = jnp.where(keep, z, best_z), jnp.where(keep, found, best_gamma)
    support = jnp.where(support, z[:k] > 0, grad2 > gamma2 * (1 + 1e-9))
    active = jnp.where(active, z[k:2 * k] > 0, f2 < gamma2 * (1 - 1e-9))
    return support, active, best_z, best_gamma

  start = (w >= support_tol * jnp.max(w), f <= gamma * (1 + active_tol),
           jnp.concatenate([w, mu, gamma[None]]), jnp.asarray(-1.0, w.dtype))
  best_z = jax.lax.fori_loop(0, POLISH_ROUNDS, round_, start)[2]
  return best_z[:k], best_z[k:2 * k]


def _solve_one(features, theta, sigma, steps, temperatures, polish):
  """(w [K], dual [K], gamma [], gap [], best []) for one instance."""
  k = features.shape[0]
  dtype = features.dtype
  inv_var = 1 / sigma ** 2
  best = jnp.argmax(features @ theta).astype(jnp.int32)
  is_best = jnp.arange(k) == best
  tiny = jnp.finfo(dtype).tiny
  w = _ascent(features, theta, inv_var, best, steps, temperatures)
  f = _costs(features, theta, inv_var, w, best)[0]
  lam = jax.nn.softmax(jnp.where(is_best, -jnp.inf,
                                 -jnp.log(jnp.maximum(f, tiny)) / temperatures[1]))
  mu = jnp.where(is_best, 0.0, lam / jnp.where(is_best, 1.0, jnp.maximum(f, tiny)))
  mu = mu / jnp.sum(mu)
  gamma, gap = _certify(features, theta, inv_var, best, w, mu)
  if polish:
    tols = jnp.asarray(CANDIDATES, dtype)
    w2, mu2 = jax.vmap(functools.partial(_polish, features, theta, inv_var, best, w, mu))(
        tols[:, 0], tols[:, 1])
    w2, mu2 = jnp.maximum(w2, 0.0), jnp.maximum(mu2, 0.0)
    w2 = w2 / jnp.sum(w2, axis=-1, keepdims=True)
    mu2 = mu2 / jnp.maximum(jnp.sum(mu2, axis=-1, keepdims=True), tiny)
    gamma2, gap2 = jax.vmap(functools.partial(_certify, features, theta, inv_var, best))(w2, mu2)
    score = jnp.where((gap2 >= 0) & (gamma2 > gamma), gamma2, -jnp.inf)
    i = jnp.argmax(score)
    better = score[i] > -jnp.inf
    w, mu = jnp.where(better, w2[i], w), jnp.where(better, mu2[i], mu)
    gamma, gap = jnp.where(better, gamma2[i], gamma), jnp.where(better, gap2[i], gap)
  tie = ~(gamma > 0)
  w = jnp.where(tie, 1.0 / k, w)
  return w, mu, jnp.where(tie, 0.0, gamma), jnp.where(tie, jnp.inf, gap), best


def dual_gamma(features: ArrayLike, theta: ArrayLike, sigma: ArrayLike, w: ArrayLike,
               dual: ArrayLike, best: ArrayLike) -> jax.Array:
  """sum_x mu_x f_x(w) at one instance: the function whose derivatives in theta,
  the features and sigma (w, mu and x* held fixed) are the envelope theorem's.

  Args:
    features: [K, d] arm features.
    theta: [d] parameter.
    sigma: [K] noise standard deviations.
    w: [K] design.
    dual: [K] dual weights mu on the alternatives (0 at x*).
    best: [] index of x*.

  Returns:
    [] float.
  """
  a = (features * (w / sigma ** 2)[:, None]).T @ features
  y = features[best] - features  # [K, d]
  z = jnp.linalg.solve(a, y.T)  # [d, K]
  n = jnp.sum(y.T * z, axis=0)
  mask = (dual > 0) & (n > 0)
  f = jnp.where(mask, (y @ theta) ** 2 / (2 * jnp.where(mask, n, 1)), 0.0)
  return jnp.sum(dual * f)


def _one(steps, temperatures, tol, polish, features, theta, sigma):
  w, mu, gamma, gap, best = _solve_one(jax.lax.stop_gradient(features),
                                       jax.lax.stop_gradient(theta),
                                       jax.lax.stop_gradient(sigma), steps, temperatures,
                                       polish)
  w, mu = jax.lax.stop_gradient(w), jax.lax.stop_gradient(mu)
  h = jnp.where(gamma > 0, dual_gamma(features, theta, sigma, w, mu, best), 0.0)
  gamma = jax.lax.stop_gradient(gamma) + (h - jax.lax.stop_gradient(h))
  return LinearOracle(t_star=1 / gamma, gamma=gamma, w=w, dual=mu, gap=gap,
                      converged=gap <= tol, best=best)


@functools.partial(jax.jit, static_argnames=("steps", "temperatures", "tol", "polish"))
def linear_solve(features: ArrayLike, theta: ArrayLike, sigma: ArrayLike = 1.0,
                 steps: int = DEFAULT_STEPS, temperatures=None,
                 tol: float = None, polish: bool = True) -> LinearOracle:
  """T*(theta), w* and the dual weights of linear best-arm identification (no checks).

  Pure, jit-compiled, batched over leading axes; float32 or float64 (the
  features' dtype). First-order differentiable in theta, the features and sigma by
  the envelope theorem (module docstring); w* carries no derivatives. A tied or
  duplicate best arm gives gamma = 0, T* = inf, w uniform (check instances with
  `jbai.linear.check_linear` first).

  Args:
    features: [..., K, d] arm features.
    theta: [..., d] parameters.
    sigma: the noise's standard deviation: a scalar, or broadcastable to [..., K].
    steps: ascent steps (fixed, so that the loop ends under vmap).
    temperatures: (first, last) soft-min temperatures; default
      (1, max(1e-7, 100 float eps)).
    tol: `converged` is `gap <= tol`; default max(1e-6, 1000 float eps).
    polish: run the active-set Newton polish after the ascent (module docstring);
      its cost grows as K^3 d, so large K may want the ascent alone.

  Returns:
    A `LinearOracle` with leading axes those of the broadcast inputs.

  Example:
    >>> import jax.numpy as jnp
    >>> x = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    >>> sol = linear_solve(x, jnp.array([1.0, 0.0]))
    >>> round(float(sol.t_star), 2)  # 2 (1 + cot(w / 2))^2, cos w = 0.6
    18.0
  """
  features = jnp.asarray(features)
  if not jnp.issubdtype(features.dtype, jnp.floating):
    features = features.astype(jnp.zeros(()).dtype)
  dtype = features.dtype
  theta = jnp.asarray(theta, dtype)
  k = features.shape[-2]
  sigma = jnp.asarray(sigma, dtype)
  sigma = sigma[..., None] if sigma.ndim == 0 else sigma
  lead = jnp.broadcast_shapes(features.shape[:-2], theta.shape[:-1], sigma.shape[:-1])
  features = jnp.broadcast_to(features, lead + features.shape[-2:])
  theta = jnp.broadcast_to(theta, lead + theta.shape[-1:])
  sigma = jnp.broadcast_to(sigma, lead + (k,))
  temperatures = tuple(temperatures or default_temperatures(dtype))
  if tol is None:
    tol = max(1e-6, 1000 * float(jnp.finfo(dtype).eps))
  size = math.prod(lead)
  flat = [v.reshape((size,) + v.shape[len(lead):]) for v in (features, theta, sigma)]
  out = jax.vmap(functools.partial(_one, steps, temperatures, tol, polish))(*flat)
  return jax.tree.map(lambda v: v.reshape(lead + v.shape[1:]), out)


__all__ = ["DEFAULT_STEPS", "LinearOracle", "dual_gamma", "linear_solve"]
