"""Bernoulli rewards parameterised by their mean p."""

import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy

from jbai.builders import cached
from jbai.families.base import Family, bregman_xlogx, exponential_family, tiny
from jbai.random import hypergeometric, posteriors, samplers


@cached
def bernoulli(lo: float = 0.0, hi: float = 1.0) -> Family:
  """Bernoulli(p) rewards.

  KL(p, q) = p log(p/q) + (1-p) log((1-p)/(1-q)), computed as
  q phi((p - q) / q) + (1 - q) phi((q - p) / (1 - q)) with phi = `bregman_xlogx`,
  two terms >= 0 each to a few units of roundoff (the direct form cancels to
  digits that every compiled program rounds its own way as q -> p), and q kept
  a hair inside (0, 1), so that it is finite at the edges of Theta = [0, 1].
  The posterior under a uniform prior is Beta(1 + S, 1 + n - S). A block of n
  rewards sums to Binomial(n, p); given that sum s, its first m rewards sum to
  Hypergeometric(n, s, m) (`jbai.random.hypergeometric`).

  Example:
    >>> fam = bernoulli()
    >>> round(float(fam.kl(0.5, 0.5)), 6)
    0.0
  """
  if not 0.0 <= lo < hi <= 1.0:
    raise ValueError(f"Theta = [{lo}, {hi}] must be inside [0, 1] with lo < hi")

  def kl(p, q):
    p = jnp.asarray(p) * 1.0
    q = jnp.asarray(q) * 1.0
    eps = tiny(q)
    q = jnp.clip(q, eps, 1 - jnp.finfo(q.dtype).eps)
    d = p - q
    return (q * bregman_xlogx(d / q, p / q)
            + (1 - q) * bregman_xlogx(-d / (1 - q), (1 - p) / (1 - q)))

  def sample(key, means):
    means = jnp.asarray(means)
    u = jax.random.uniform(key, means.shape, means.dtype)
    return (u < means).astype(means.dtype)

  def sample_block(key, mean, n):
    return jax.random.binomial(key, n.astype(mean.dtype), mean, dtype=mean.dtype)[None]

  def split_block(key, n, stats, m):
    # Given s ones among n rewards, the first m hold Hypergeometric(n, s, m).
    return hypergeometric.hypergeometric(key, n, stats[..., 0], m, dtype=stats.dtype)[None]

  def fisher(p):
    p = jnp.clip(p, tiny(p), 1 - jnp.finfo(jnp.asarray(p * 1.0).dtype).eps)
    return 1 / (p * (1 - p))

  def log_density(x, p):
    return xlogy(x, p) + xlogy(1 - x, 1 - p)

  def sample_posterior(key, n, stats):
    s = stats[..., 0]
    draw = samplers.beta(key, 1 + s, 1 + n.astype(s.dtype) - s, at_least_one=True)
    return jnp.clip(draw, lo, hi)

  def posterior_law(n, stats):
    s = stats[..., 0]
    return posteriors.BetaLaw(a=1 + s, b=1 + n.astype(s.dtype) - s)

  posterior_sample = posteriors.Posterior(sample_posterior, posterior_law)

  # -d^2/dp^2 log pi(x|p) = x/p^2 + (1-x)/(1-p)^2 >= 1 for p in [0, 1].
  return exponential_family(
      name="bernoulli", lo=lo, hi=hi, kl=kl, sample=sample, fisher=fisher,
      log_density=log_density, posterior_sample=posterior_sample, curvature=1.0,
      sample_block=sample_block, split_block=split_block)
