"""Conjugate posteriors of the built-in families, for the Thompson-sampling rules.

A built-in family's `posterior_sample` is a `Posterior`. It is called as any
posterior_sample, posterior_sample(key, n, stats) -> one draw of every arm's
mean (projected on Theta), and it also carries `law(n, stats)`: every arm's
posterior as a law object. TTTS's exact challenger (jbai.rules.ttts) needs it;
the other rules only draw.

Each law works in two scales, both strictly increasing functions of the mean:

  * the rank scale r, where draws are cheap and compare (the mean; the odds
    p / (1 - p); sign rho): `sample` draws in it, and a point of the law is
    given by its r in every method;
  * the comparison scale z, where the posterior's log-density l is strongly
    concave, -l'' >= kappa with kappa known (`curvature`), so that a Gaussian
    in z bounds it: TTTS's envelopes and proposals live there. `z(r)` and
    `rank(z)` map between the two (NaN outside the support).

  family              posterior (flat prior)       r          z                  kappa
  gaussian            mean ~ N(S/n, sigma^2/n)     the mean   the mean           n / sigma^2 (= -l'')
  bernoulli           p ~ Beta(a, b),              p/(1-p)    arcsin(sqrt(p))    (sqrt(2a-1) + sqrt(2b-1))^2
                      a = 1 + S, b = 1 + n - S
  poisson             lambda ~ Gamma(1 + S, n)     lambda     lambda^(1/3)       3 (3 alpha - 1)^(1/3) (3 beta)^(2/3)
  exponential         rate ~ Gamma(1 + n, S)       -rate      -rate^(1/3)        as poisson
  weibull (shape k)   rate of lam^-k ~ Gamma(1 + n, sum x^k)  -rate   -rate^(1/3)   as poisson

(alpha and beta are the Gamma's shape and rate; the mean of the exponential and
Weibull families decreases with the rate, hence the minus sign.)

The z scales are those where kappa is the curvature at (or within a factor 2 of)
the mode, so that the envelopes of TTTS fit closely; the rank scales keep the
per-arm work to rational functions and logarithms, and the odds keep full
relative precision near p = 0 and 1 (docs/design/ttts.md, "Why these comparison
scales").

Each law gives its log-density as log_norm() + log_kernel(r): the per-arm
normalising constant (needed only for the envelopes' masses) and the part that
varies with the point (all the acceptance test needs). Both stay accurate in
float32 for counts up to 1e6 and beyond: the constant in Stirling's form with
the remainder omega(x) = lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2)
(`stirling_remainder`), and the kernel with its large term, the large-deviation
exponent s KL (Beta) or alpha D(r) (Gamma), written as a sum of
phi(x) = x - log(1 + x) terms that do not cancel.
"""

import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from jbai.random import samplers

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Posterior(NamedTuple):
  """A family's conjugate posterior: draws of the means, and every arm's law.

  Attributes:
    sample: sample(key, n, stats) -> [K] one posterior draw of each arm's mean,
      projected on Theta (what `Family.posterior_sample` returns).
    law: law(n, stats) -> the posterior of every arm (`NormalLaw`, `BetaLaw`
      or `GammaLaw`, with [K] parameters).
  """

  sample: Callable
  law: Callable

  def __call__(self, key, n, stats):
    return self.sample(key, n, stats)


def stirling_remainder(x: jax.Array) -> jax.Array:
  """omega(x) = lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2), for x >= 1.

  Its asymptotic series (four terms, error < 1e-12) for x >= 8; below, the
  recurrence lgamma(x) = lgamma(x + 8) - log(x (x+1) ... (x+7)). Vectorised on
  CPU, unlike lax.lgamma, and free of the cancellation of lgamma(a) + lgamma(b)
  - lgamma(a + b) at large arguments.
  """

  def series(y):
    r = 1 / y
    r2 = r * r
    return r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 / 1680)))

  def stirling(y):
    return (y - 0.5) * jnp.log(y) - y

  small = x < 8
  y = jnp.where(small, x + 8, x)
  shift = jnp.log(x * (x + 1) * (x + 2) * (x + 3) * (x + 4) * (x + 5) * (x + 6) * (x + 7))
  below = series(y) + stirling(y) - stirling(x) - shift
  return jnp.where(small, below, series(x))


class NormalLaw(NamedTuple):
  """N(mean, var) posteriors; the rank and comparison scales are the mean itself."""

  mean: jax.Array  # [K] float
  var: jax.Array   # [K] float

  quadratic = True  # the log-density is its own quadratic bound (-l'' = kappa)

  def sample(self, key, batch=()):
    """Draws (rank scale) of shape batch + [K]."""
    shape = tuple(batch) + self.mean.shape
    return self.mean + jnp.sqrt(self.var) * samplers.normal(key, shape, self.mean.dtype)

  def z(self, r):
    return r

  def rank(self, z):
    return z

  def log_norm(self):
    return -0.5 * jnp.log(self.var) - _HALF_LOG_2PI

  def log_kernel(self, r):
    return -((r - self.mean) ** 2) / (2 * self.var)

  def grad(self, r):
    return (self.mean - r) / self.var

  def curvature(self):
    return 1 / self.var

  def centre(self):
    return self.mean

  def pair_centre(self, other):
    """The maximiser of the sum of the two log-densities."""
    return (self.mean / self.var + other.mean / other.var) / (1 / self.var + 1 / other.var)


class BetaLaw(NamedTuple):
  """Beta(a, b) posteriors (a, b >= 1): rank scale the odds r = p / (1 - p),
  comparison scale z = arcsin(sqrt(p)) = arctan(sqrt(r)), 0 < z < pi/2.

  The density of z is proportional to sin(z)^(2a-1) cos(z)^(2b-1): its mode is
  inside (0, pi/2) even when a or b is 1 (no success, or no failure, yet),
  where the density of p peaks at 0 or 1 and no Gaussian bounds it closely.
  """

  a: jax.Array  # [K] float
  b: jax.Array  # [K] float

  quadratic = False

  def sample(self, key, batch=()):
    """Draws of the odds, of shape batch + [K]."""
    shape = tuple(batch) + self.a.shape
    return samplers.beta_odds(key, jnp.broadcast_to(self.a, shape),
                              jnp.broadcast_to(self.b, shape), at_least_one=True)

  def z(self, r):
    return jnp.arctan(jnp.sqrt(r))

  def rank(self, z):
    inside = (z > 0) & (z < math.pi / 2)
    return jnp.where(inside, jnp.tan(z) ** 2, jnp.nan)

  def log_norm(self):
    a, b = self.a, self.b
    s = a + b
    return (math.log(2) - _HALF_LOG_2PI + 0.5 * jnp.log(a * b / s)
            - stirling_remainder(a) - stirling_remainder(b) + stirling_remainder(s))

  def log_kernel(self, r):
    """log density of z - log_norm = -log(p (1-p)) / 2 - s KL(mean, p), with
    s KL = a phi(d / mean) + b phi(-d / (1 - mean)), d = p - mean, at the odds r."""
    a, b = self.a, self.b
    s = a + b
    log_one_r = jnp.log(1 + r)
    p, q = r / (1 + r), 1 / (1 + r)  # p and 1 - p, each accurate near its own 0
    d = jnp.where(a < b, p - a / s, b / s - q)
    log_p, log_q = jnp.log(r) - log_one_r, -log_one_r
    skl = (a * _x_minus_log1p(d * s / a, log_p - jnp.log(a / s))
           + b * _x_minus_log1p(-d * s / b, log_q - jnp.log(b / s)))
    value = -0.5 * (log_p + log_q) - skl
    return jnp.where((r > 0) & (r < jnp.inf), value, -jnp.inf)

  def grad(self, r):
    """l'(z) at the odds r: (2a - 1) / tan z - (2b - 1) tan z, tan z = sqrt(r)."""
    tan = jnp.sqrt(r)
    return (2 * self.a - 1) / tan - (2 * self.b - 1) * tan

  def curvature(self):
    return (jnp.sqrt(2 * self.a - 1) + jnp.sqrt(2 * self.b - 1)) ** 2

  def centre(self):
    """The mode of z: odds (a - 1/2) / (b - 1/2)."""
    return (self.a - 0.5) / (self.b - 0.5)

  def pair_centre(self, other):
    """The maximiser of the sum of the two log-densities: tan(z)^2 =
    (a + a' - 1) / (b + b' - 1)."""
    return (self.a + other.a - 1) / (self.b + other.b - 1)


def _x_minus_log1p(x, log1p_x):
  """phi(x) = x - log(1 + x) >= 0 for x > -1, given x and log(1 + x) computed
  separately: its series near 0, where the difference cancels, and
  x - log1p_x beyond (where x = -1 + tiny has lost the tiny, log1p_x has not)."""
  small = jnp.abs(x) < 0.2
  xs = jnp.where(small, x, 0)
  return jnp.where(small, xs**2 / 2 - xs**3 / 3 - samplers.log1p_remainder(xs), x - log1p_x)


class GammaLaw(NamedTuple):
  """Gamma(shape, rate) posteriors of a parameter rho (shape >= 1): rank scale
  r = sign rho, comparison scale z = sign rho^(1/3); sign = -1 when the mean
  decreases with rho.

  The density of y = rho^(1/3) is proportional to y^(3 shape - 1) exp(-rate y^3).
  """

  shape: jax.Array  # [K] float
  rate: jax.Array   # [K] float
  sign: jax.Array   # [K] float, +1 or -1

  quadratic = False

  def sample(self, key, batch=()):
    """Draws (rank scale) of shape batch + [K]."""
    shape = tuple(batch) + self.shape.shape
    rho = samplers.gamma(key, jnp.broadcast_to(self.shape, shape), at_least_one=True) / self.rate
    return self.sign * rho

  def z(self, r):
    return self.sign * _cube_root(self.sign * r)

  def rank(self, z):
    y = self.sign * z
    return jnp.where(y > 0, self.sign * y**3, jnp.nan)

  def log_norm(self):
    return (math.log(3) + 0.5 * jnp.log(self.shape) - _HALF_LOG_2PI
            - stirling_remainder(self.shape))

  def log_kernel(self, r):
    """log density of z - log_norm: -log y - shape D(x), D(x) = x - 1 - log x =
    phi(x - 1), x = rate rho / shape, rho = y^3 = sign r."""
    rho = self.sign * r
    log_rho = jnp.log(rho)
    value = -log_rho / 3 - self.shape * _x_minus_log1p(
        self.rate * rho / self.shape - 1, jnp.log(self.rate / self.shape) + log_rho)
    return jnp.where((rho > 0) & (rho < jnp.inf), value, -jnp.inf)

  def grad(self, r):
    y = _cube_root(self.sign * r)
    return self.sign * ((3 * self.shape - 1) / y - 3 * self.rate * y**2)

  def curvature(self):
    return 3 * _cube_root(3 * self.shape - 1) * _cube_root(3 * self.rate) ** 2

  def centre(self):
    """The mode of z."""
    return self.sign * (self.shape - 1 / 3) / self.rate

  def pair_centre(self, other):
    """The maximiser of the sum of the two log-densities."""
    return self.sign * (self.shape + other.shape - 2 / 3) / (self.rate + other.rate)


def _cube_root(x):
  """x^(1/3) for x >= 0 (exp and log: vectorised on CPU, unlike cbrt)."""
  return jnp.exp(jnp.log(x) / 3)
