"""KL_inf of a law on [0, 1] (Honda & Takemura 2010, 2015), through its dual.

For a law F on [0, 1] and a level mu in (0, 1),

  KL_inf^-(F, mu) = inf {KL(F, G) : G a law on [0, 1], E_G[X] <= mu},
  KL_inf^+(F, mu) = inf {KL(F, G) : G a law on [0, 1], E_G[X] >= mu}

(the mean pushed down to mu, resp. up; 0 when F's mean is already on that side).
Honda & Takemura (2010, Theorem 8; 2015, Theorem 2) give the dual for the upper
end B = 1 of the support,

  KL_inf^+(F, mu) = max_{lambda in [0, 1/(1 - mu)]} E_F[log(1 - lambda (X - mu))],

and the reflection X -> 1 - X (lower end 0) gives

  KL_inf^-(F, mu) = max_{lambda in [0, 1/mu]} E_F[log(1 + lambda (X - mu))].

Both are concave maximisations in one variable. jbai solves them in the scaled
variable t = lambda c in [0, 1] (c = mu for KL_inf^-, 1 - mu for KL_inf^+), as

  max_{t in [0, 1]} f(t),  f(t) = sum_j p_j log((1 - t) + t r_j),
  r_j = z_j / mu (down) or (1 - z_j) / (1 - mu) (up), r_j >= 0,

(1 + t y_j with y_j = r_j - 1: the wealth of a portfolio of cash and an asset of
return r_j; an atom at the end of the support has r_j = 0 exactly, where 1 + t y_j
would round, and one compiled program found t* = 1 there instead of the root),

so the interval no longer depends on mu and the envelope theorem makes the value
differentiable in mu, the atoms and the weights with t held fixed (t is held by
`stop_gradient`). f'(t) = sum_j p_j y_j / (1 + t y_j) decreases. Where f'(0) <= 0
(the mean on the other side) t* = 0 and KL_inf = 0; where f'(1) >= 0 (an atom-free
end: F puts no mass where r = 0) t* = 1, the boundary case in which the
minimising G puts mass on the end of the support; otherwise t* is the root of f',
found by Newton's method safeguarded by bisection on the bracket [lo, hi] that
every step shrinks (Numerical Recipes' rtsafe), from the Newton step of t = 0,
until Newton's decrement f'(t)^2 / |f''(t)| (the value the next step gains, to
second order) is below eps of the dtype, or the bracket is 2 eps wide; that last
step is taken (Newton converges quadratically, so the value is then within about
eps^2 of the maximum, relative to the curvature). At most `NEWTON_ITERS` steps,
under a while loop, with a flag. A step size criterion would not do: near t = 1,
where an atom close to the end of the support makes the curvature large, a step of
sqrt(eps) still leaves an error of 1e-9 in the value. mu is clipped to [eps, 1 - eps] of the dtype: at mu = 0 (KL_inf^-)
or 1 (KL_inf^+) KL_inf is infinite for every F but a point mass at that end.

The law is given as weighted atoms (values [..., P], weights [..., P] summing to
1, zero weights allowed): a trial's histogram (`jbai.bounded.histogram`), or a true
law's atoms (`jbai.bounded.laws.atoms`). Everything broadcasts over leading axes
(arms, lanes), jit-compiles and vmaps, in float32 or float64.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

NEWTON_ITERS = 64  # cap on the safeguarded Newton steps (bisection alone needs 53 in float64)


class KLInf(NamedTuple):
  """KL_inf and its dual optimum."""
  value: jax.Array      # [...] float, KL_inf(F, mu) >= 0
  lam: jax.Array        # [...] float >= 0, |lambda*|: d value / d mu = -lam (down), +lam (up)
  t: jax.Array          # [...] float in [0, 1], t* = lam * c
  converged: jax.Array  # [...] bool, False where NEWTON_ITERS steps did not converge


def returns(values: jax.Array, mu: jax.Array, up: bool):
  """(r [..., P], c [...]): r_j = z_j / mu (down) or (1 - z_j) / (1 - mu) (up), mu
  clipped to [eps, 1 - eps], so that 1 + t y_j = (1 - t) + t r_j with r_j >= 0,
  exactly 0 at the end of the support (z_j = 0 down, 1 up): the wealth factor of a
  portfolio of cash and an asset of return r_j (Cover 1991), which keeps that end
  exact where 1 + t y_j would round."""
  eps = jnp.finfo(values.dtype).eps
  mu = jnp.clip(mu, eps, 1 - eps)
  c = 1 - mu if up else mu
  return ((1 - values) if up else values) / c[..., None], c


def dual_root(r: jax.Array, p: jax.Array, iters: int = NEWTON_ITERS):
  """t* = argmax_{t in [0, 1]} sum_j p_j log((1 - t) + t r_j) (r_j >= 0, p_j >= 0)
  and whether it converged, elementwise over the leading axes."""
  live = p > 0
  y = r - 1

  def slope(t):
    d = jnp.where(live, (1 - t[..., None]) + t[..., None] * r, 1)
    g = jnp.sum(jnp.where(live, p * y / d, 0), axis=-1)
    gp = -jnp.sum(jnp.where(live, p * (y / d) ** 2, 0), axis=-1)
    return g, gp

  g0 = jnp.sum(p * y, axis=-1)
  at_end = jnp.any(live & (r <= 0), axis=-1)
  g1 = jnp.where(at_end, -jnp.inf,
                 jnp.sum(jnp.where(live & (r > 0), p * y / jnp.where(r > 0, r, 1), 0),
                         axis=-1))
  interior = (g0 > 0) & (g1 < 0)
  second = jnp.sum(p * y**2, axis=-1)
  x0 = g0 / jnp.where(second > 0, second, 1)
  x0 = jnp.where((x0 > 0) & (x0 < 1), x0, 0.5)
  eps = jnp.finfo(y.dtype).eps
  zero = jnp.zeros_like(g0)

  def body(carry):
    k, x, lo, hi, done = carry
    g, gp = slope(x)
    lo, hi = jnp.where(g > 0, x, lo), jnp.where(g > 0, hi, x)
    step = jnp.where(gp < 0, g / jnp.where(gp < 0, gp, -1), 0)
    newton = x - step
    # Newton's decrement g^2 / |f''|: the value the step gains (to second order).
    small = -g * step <= eps
    inside = (newton > lo) & (newton < hi)
    xn = jnp.where(small, jnp.clip(newton, lo, hi),
                   jnp.where(inside, newton, 0.5 * (lo + hi)))
    newly = small | (hi - lo <= 2 * eps)
    return k + 1, jnp.where(done, x, xn), lo, hi, done | newly

  _, x, _, _, done = jax.lax.while_loop(
      lambda c: (c[0] < iters) & jnp.any(~c[4]), body,
      (jnp.zeros((), jnp.int32), x0, zero, zero + 1, ~interior))
  # An atom at the end of the support makes f = -inf at t = 1: stay below it.
  x = jnp.where(at_end, jnp.minimum(x, 1 - eps), x)
  t = jnp.where(g0 <= 0, 0, jnp.where(g1 >= 0, 1, x))
  return t, done


def _broadcast(values, probs, mu):
  values, probs = jnp.asarray(values), jnp.asarray(probs)
  dtype = jnp.result_type(values, probs, float)
  batch = jnp.broadcast_shapes(values.shape[:-1], probs.shape[:-1], jnp.shape(mu))
  shape = batch + (max(values.shape[-1], probs.shape[-1]),)
  return (jnp.broadcast_to(values.astype(dtype), shape),
          jnp.broadcast_to(probs.astype(dtype), shape),
          jnp.broadcast_to(jnp.asarray(mu, dtype), batch))


def _solved(r, c, probs, iters):
  t, done = dual_root(jax.lax.stop_gradient(r), jax.lax.stop_gradient(probs), iters)
  t = jax.lax.stop_gradient(t)
  d = jnp.where(probs > 0, (1 - t[..., None]) + t[..., None] * r, 1)
  value = jnp.sum(jnp.where(probs > 0, probs * jnp.log(d), 0), axis=-1)
  return KLInf(jnp.maximum(value, 0), t / c, t, done)


def kl_inf(values: ArrayLike, probs: ArrayLike, mu: ArrayLike, up: bool,
           iters: int = NEWTON_ITERS) -> KLInf:
  """KL_inf^+(F, mu) (up) or KL_inf^-(F, mu) of F = sum_j probs_j delta_{values_j}.

  Args:
    values: [..., P] atoms in [0, 1].
    probs: [..., P] their weights (>= 0, summing to 1; a histogram's F~).
    mu: [...] the level, clipped to [eps, 1 - eps].
    up: True for KL_inf^+ (the mean pushed up to mu), False for KL_inf^-.
    iters: cap on Newton steps.

  Returns:
    KLInf over the broadcast leading shape.

  Example:
    >>> import jax.numpy as jnp
    >>> r = kl_inf(jnp.array([0.0, 1.0]), jnp.array([0.5, 0.5]), 0.2, up=False)
    >>> round(float(r.value), 6)   # the Bernoulli KL(0.5, 0.2)
    0.223144
  """
  values, probs, mu = _broadcast(values, probs, mu)
  r, c = returns(values, mu, up)
  return _solved(r, c, probs, iters)


def kl_inf_pair(values: ArrayLike, probs_a: ArrayLike, probs_b: ArrayLike, mu: ArrayLike,
                iters: int = NEWTON_ITERS):
  """(KL_inf^-(F_a, mu), KL_inf^+(F_b, mu)) with one Newton loop for both (the GLR's
  and the oracle's pair of arms; half the compiled loops of two `kl_inf` calls).

  Args:
    values: [..., P] atoms of both laws.
    probs_a: [..., P] arm a's weights (pushed down).
    probs_b: [..., P] arm b's weights (pushed up).
    mu: [...] the common level.
    iters: cap on Newton steps.

  Returns:
    (KLInf of a, KLInf of b) over the broadcast leading shape.
  """
  probs_a, probs_b = jnp.broadcast_arrays(jnp.asarray(probs_a), jnp.asarray(probs_b))
  values, probs, mu = _broadcast(values, jnp.stack([probs_a, probs_b]), mu)
  r_a, c_a = returns(values[0], mu[0], False)
  r_b, c_b = returns(values[1], mu[1], True)
  both = _solved(jnp.stack([r_a, r_b]), jnp.stack([c_a, c_b]), probs, iters)
  return (jax.tree.map(lambda x: x[0], both), jax.tree.map(lambda x: x[1], both))


def kl_inf_down(values: ArrayLike, probs: ArrayLike, mu: ArrayLike,
                iters: int = NEWTON_ITERS) -> KLInf:
  """KL_inf^-(F, mu): the least KL(F, G) over laws G on [0, 1] of mean <= mu
  (`kl_inf` with up=False)."""
  return kl_inf(values, probs, mu, False, iters)


def kl_inf_up(values: ArrayLike, probs: ArrayLike, mu: ArrayLike,
              iters: int = NEWTON_ITERS) -> KLInf:
  """KL_inf^+(F, mu): the least KL(F, G) over laws G on [0, 1] of mean >= mu
  (`kl_inf` with up=True)."""
  return kl_inf(values, probs, mu, True, iters)
