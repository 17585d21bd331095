"""Gaussian rewards with known standard deviation sigma, parameterised by the mean."""

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.families.base import Family, exponential_family
from jbai.random import posteriors, samplers


@cached
def gaussian(sigma: float = 1.0, lo: float = -1e4, hi: float = 1e4) -> Family:
  """Gaussian N(m, sigma^2) rewards.

  KL(m, m2) = (m - m2)^2 / (2 sigma^2); Fisher information 1 / sigma^2; the
  posterior under a flat prior is N(mean, sigma^2 / n). A block of n rewards sums
  to N(n m, n sigma^2); given that sum s, its first m rewards sum to
  N(s m / n, sigma^2 m (n - m) / n) (a Brownian bridge).

  Example:
    >>> fam = gaussian(sigma=1.0)
    >>> float(fam.kl(1.0, 0.0))
    0.5
  """
  if not sigma > 0:
    raise ValueError(f"sigma must be > 0, got {sigma!r}")
  if not lo < hi:
    raise ValueError(f"need lo < hi for Theta, got [{lo}, {hi}]")
  var = sigma * sigma

  def kl(m, m2):
    return (m - m2) ** 2 / (2 * var)

  def sample(key, means):
    means = jnp.asarray(means)
    return means + sigma * jax.random.normal(key, means.shape, means.dtype)

  def sample_block(key, mean, n):
    n = n.astype(mean.dtype)
    return (n * mean + sigma * jnp.sqrt(n) * jax.random.normal(key, (), mean.dtype))[None]

  def split_block(key, n, stats, m):
    # Brownian bridge: given S_n = s, S_m ~ N(s m / n, sigma^2 m (n - m) / n).
    n, m = n.astype(stats.dtype), m.astype(stats.dtype)
    frac = m / n
    z = samplers.normal(key, (), stats.dtype)
    return (frac * stats[..., 0] + sigma * jnp.sqrt(m * (1 - frac)) * z)[None]

  def fisher(m):
    return jnp.full_like(jnp.asarray(m, float), 1 / var)

  def log_density(x, m):
    return -((x - m) ** 2) / (2 * var) - 0.5 * jnp.log(2 * jnp.pi * var)

  def sample_posterior(key, n, stats):
    n = jnp.maximum(n, 1).astype(stats.dtype)
    m = stats[..., 0] / n
    draw = m + sigma / jnp.sqrt(n) * samplers.normal(key, m.shape, m.dtype)
    return jnp.clip(draw, lo, hi)

  def posterior_law(n, stats):
    n = jnp.maximum(n, 1).astype(stats.dtype)
    return posteriors.NormalLaw(mean=stats[..., 0] / n, var=var / n)

  posterior_sample = posteriors.Posterior(sample_posterior, posterior_law)

  return exponential_family(
      name="gaussian", lo=lo, hi=hi, kl=kl, sample=sample, fisher=fisher,
      log_density=log_density, posterior_sample=posterior_sample,
      curvature=1 / var, params=(("sigma", float(sigma)),), sample_block=sample_block,
      split_block=split_block)
