"""Exponential rewards parameterised by their mean m (rate 1/m)."""

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.families.base import Family, bregman_log, exponential_family
from jbai.random import posteriors, samplers


@cached
def exponential(lo: float = 1e-3, hi: float = 1e3) -> Family:
  """Exponential rewards with mean m.

  KL(m, m2) = m/m2 - 1 - log(m/m2) = `bregman_log`((m - m2) / m2), to a few
  units of roundoff where the direct form cancels as m -> m2; Fisher information 1/m^2. The posterior of
  the rate under a flat prior is Gamma(1 + n, S), and the mean is 1/rate.

  Example:
    >>> fam = exponential()
    >>> round(float(fam.kl(1.0, 1.0)), 6)
    0.0
  """
  if not 0.0 < lo < hi:
    raise ValueError(f"Theta = [{lo}, {hi}] must satisfy 0 < lo < hi")

  def kl(m, m2):
    m, m2 = jnp.asarray(m) * 1.0, jnp.asarray(m2) * 1.0
    return bregman_log((m - m2) / m2, m / m2)

  def sample(key, means):
    means = jnp.asarray(means)
    return means * jax.random.exponential(key, means.shape, means.dtype)

  def fisher(m):
    return 1 / (jnp.asarray(m) * 1.0) ** 2

  def log_density(x, m):
    return -jnp.log(m) - x / m

  def sample_posterior(key, n, stats):
    s = jnp.maximum(stats[..., 0], lo)
    rate = samplers.gamma(key, 1 + n.astype(s.dtype), at_least_one=True) / s
    return jnp.clip(1 / rate, lo, hi)

  def posterior_law(n, stats):  # of the rate; the mean decreases with it
    s = jnp.maximum(stats[..., 0], lo)
    return posteriors.GammaLaw(shape=1 + n.astype(s.dtype), rate=s, sign=-jnp.ones_like(s))

  posterior_sample = posteriors.Posterior(sample_posterior, posterior_law)

  # -d^2/dm^2 log pi(x|m) = 2x/m^3 - 1/m^2, negative for small x: Assumption 7
  # fails, as for every family whose support reaches 0.
  return exponential_family(
      name="exponential", lo=lo, hi=hi, kl=kl, sample=sample, fisher=fisher,
      log_density=log_density, posterior_sample=posterior_sample,
      curvature=None)
