"""Weibull rewards with a known shape k, parameterised by their mean m.

pi(x | m) = (k / lam) (x / lam)^(k - 1) exp(-(x / lam)^k), x > 0, with scale
lam = m / c and c = Gamma(1 + 1/k). Since X^k is exponential with mean lam^k, the
family is an exponential family in the statistic x^k (not in x), so:

  * sufficient statistics [x, x^k]; the MLE is m_hat = c (mean of x^k)^(1/k),
    which differs from the sample mean (for k = 1 they coincide);
  * KL(m, m2) = r^k - 1 - k log r with r = m / m2 (c cancels): `bregman_log`(r^k - 1),
    r^k - 1 = expm1(k log1p((m - m2) / m2)), to a few units of roundoff as m -> m2;
  * Fisher information k^2 / m^2;
  * transport minimiser: the power mean ((w_a m_a^k + w_b m_b^k) / (w_a + w_b))^(1/k);
  * posterior of the rate 1/lam^k under a flat prior: Gamma(1 + n, sum x^k).

Assumption 7 fails. -d^2/dm^2 log pi(x | m) = (k / m^2) ((k + 1)(x / lam)^k - 1)
tends to -k / m^2 < 0 as x -> 0, for every m: no sigma^2 > 0 bounds it below on
the support (0, inf), however small Theta is; log pi is not even concave in m
for (x / lam)^k < 1 / (k + 1) (Assumption 2 fails pointwise, though the
log-likelihood has a unique maximiser: it is concave in lam^-k). So `weibull()`
has curvature None and the `paper` threshold refuses it by default.

What the `paper` threshold needs from sigma^2 is the lower bound
V_t(i) >= T_t(i) sigma^2 on the observed information in its Gaussian-mass term
(Lemma "Taylor" of the paper). Two facts make sigma^2 = k^2 / hi^2 usable:
  * at an MLE in (lo, hi] the observed information is exactly
    T k^2 / m_hat^2 >= T k^2 / hi^2 (at an MLE clipped to hi it is larger);
  * more generally, the lemma's inequality holds with any v > 0 in place of V_t:
    the integral of exp(sum_s g_s) over [mu - eps, mu + eps] is at least its
    minimum times 2 eps, and 2 eps exceeds the Gaussian integral
    sqrt(2 pi / v)(1 - 2 Q(eps sqrt v)) for every v; with v = T sigma^2 and
    sigma^2 <= I(mu_t) = k^2 / mu_t^2 the term (1/2) log(T I(mu_t)) that the
    threshold keeps is at least (1/2) log v.
So `weibull(..., curvature=shape**2 / hi**2)` (the smallest Fisher information
on Theta) gives a `paper` threshold that does not rely on Assumption 7; this is
an argument about the paper's proof, not a result stated in it.
"""

import math
from typing import Optional

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.families.base import Family, bregman_log
from jbai.families.general import general_family
from jbai.random import posteriors, samplers


def weibull(shape: float = 2.0, lo: float = 1e-3, hi: float = 1e3,
            curvature: Optional[float] = None) -> Family:
  """Weibull rewards with known shape k and mean m (scale m / Gamma(1 + 1/k)).

  Args:
    shape: the known shape k > 0 (k = 1: exponential rewards).
    lo: lower end of Theta (> 0).
    hi: upper end of Theta.
    curvature: sigma^2 for the `paper` threshold. Assumption 7 fails for every
      Weibull family (see the module docstring), so the default is None; pass
      shape**2 / hi**2 to use the `paper` threshold with the bound on the
      observed information that the module docstring derives.

  Returns:
    The Family.

  Raises:
    ValueError: naming shape, Theta or curvature when invalid.

  Example:
    >>> fam = weibull(shape=2.0)
    >>> round(float(fam.kl(2.0, 1.0)), 4)  # 2^2 - 1 - 2 log 2
    1.6137
  """
  k = float(shape)
  if not (math.isfinite(k) and k > 0):
    raise ValueError(f"shape must be a positive number, got {shape!r}")
  lo, hi = float(lo), float(hi)
  if not 0.0 < lo < hi:
    raise ValueError(f"Theta = [{lo}, {hi}] must satisfy 0 < lo < hi")
  params = (("shape", k),)
  if curvature is not None:
    params += (("curvature", float(curvature)),)
  return _build(k, lo, hi, curvature, params)


@cached
def _build(k: float, lo: float, hi: float, curvature, params: tuple) -> Family:
  """The Weibull family of shape k on Theta = [lo, hi] (arguments checked)."""
  c = math.gamma(1 + 1 / k)  # mean / scale
  log_density, sample, kl, fisher, score = _likelihood(k, c)
  stat, mle, transport_x = _statistics(k, c, lo, hi)
  return general_family(
      name="weibull", lo=lo, hi=hi, log_density=log_density, sample=sample,
      kl=kl, fisher=fisher, stat=stat, stat_dim=2, mle=mle,
      transport_x=transport_x, posterior_sample=_posterior(k, c, lo, hi),
      curvature=curvature, params=params, exponential=True, score=score)


def _likelihood(k: float, c: float):
  """(log_density, sample, kl, fisher, score) of shape k, c = Gamma(1 + 1/k)."""

  def log_density(x, m):
    x = jnp.asarray(x) * 1.0
    lam = jnp.asarray(m) / c
    y = x / lam
    return jnp.log(k) - jnp.log(lam) + (k - 1) * jnp.log(y) - y ** k

  def sample(key, means):
    means = jnp.asarray(means) * 1.0
    e = jax.random.exponential(key, means.shape, means.dtype)
    return means / c * e ** (1 / k)

  def kl(m, m2):
    m, m2 = jnp.asarray(m) * 1.0, jnp.asarray(m2) * 1.0
    return bregman_log(jnp.expm1(k * jnp.log1p((m - m2) / m2)), (m / m2) ** k)

  def fisher(m):
    return k * k / (jnp.asarray(m) * 1.0) ** 2

  def score(n, stats, m):  # d/dm log pi = (k / m) ((x / lam)^k - 1)
    m = jnp.asarray(m) * 1.0
    return k / m * (stats[..., 1] / (m / c) ** k - n)

  return log_density, sample, kl, fisher, score


def _statistics(k: float, c: float, lo: float, hi: float):
  """(stat, mle, transport_x): the statistics [x, x^k], their MLE and the power mean."""

  def stat(x):
    x = jnp.asarray(x) * 1.0
    return jnp.stack([x, x ** k], axis=-1)

  def mle(n, stats):
    n = jnp.asarray(n)
    mean_k = stats[..., 1] / jnp.maximum(n, 1).astype(stats.dtype)
    m = c * jnp.maximum(mean_k, 0.0) ** (1 / k)
    return jnp.clip(jnp.where(n > 0, m, lo), lo, hi)

  def transport_x(w_a, m_a, w_b, m_b):
    total = w_a + w_b
    safe = jnp.where(total > 0, total, 1)
    power = (w_a * m_a ** k + w_b * m_b ** k) / safe
    return jnp.where(total > 0, power ** (1 / k), 0.5 * (m_a + m_b))

  return stat, mle, transport_x


def _posterior(k: float, c: float, lo: float, hi: float) -> posteriors.Posterior:
  """The posterior of the rate lam^-k, Gamma(1 + n, sum x^k), and its mean draws."""

  def sample_posterior(key, n, stats):
    s = jnp.maximum(stats[..., 1], (lo / c) ** k)
    rate = samplers.gamma(key, 1 + n.astype(s.dtype), at_least_one=True) / s  # of lam^-k
    return jnp.clip(c * rate ** (-1 / k), lo, hi)

  def posterior_law(n, stats):  # of the rate of lam^-k; the mean decreases with it
    s = jnp.maximum(stats[..., 1], (lo / c) ** k)
    return posteriors.GammaLaw(shape=1 + n.astype(s.dtype), rate=s, sign=-jnp.ones_like(s))

  return posteriors.Posterior(sample_posterior, posterior_law)
