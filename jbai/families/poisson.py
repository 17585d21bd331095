"""Poisson rewards parameterised by their mean lambda."""

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, xlogy

from jbai.builders import cached
from jbai.families.base import Family, bregman_xlogx, exponential_family, tiny
from jbai.random import posteriors, prng, samplers


@cached
def poisson(lo: float = 0.0, hi: float = 1e3) -> Family:
  """Poisson(lambda) rewards.

  KL(l, l2) = l log(l / l2) - l + l2 = l2 phi((l - l2) / l2) with phi =
  `bregman_xlogx` (to a few units of roundoff where the direct form cancels as
  l -> l2), and l2 kept above a tiny positive number so that it is finite at
  lambda = 0. The posterior under the
  Gamma(1, 0) (flat) prior is Gamma(1 + S, n).

  Example:
    >>> fam = poisson()
    >>> round(float(fam.kl(2.0, 2.0)), 6)
    0.0
  """
  if not 0.0 <= lo < hi:
    raise ValueError(f"Theta = [{lo}, {hi}] must satisfy 0 <= lo < hi")

  def kl(m, m2):
    m = jnp.asarray(m) * 1.0
    m2 = jnp.maximum(jnp.asarray(m2) * 1.0, tiny(m2 * 1.0))
    return m2 * bregman_xlogx((m - m2) / m2, m / m2)

  def sample(key, means):
    means = jnp.asarray(means)
    # jax.random.poisson takes default-implementation keys only.
    return jax.random.poisson(prng.as_default(key), means, means.shape).astype(means.dtype)

  def fisher(m):
    return 1 / jnp.maximum(m, tiny(m * 1.0))

  def log_density(x, m):
    return xlogy(x, m) - m - gammaln(x + 1)

  def sample_posterior(key, n, stats):
    s = stats[..., 0]
    n = jnp.maximum(n, 1).astype(s.dtype)
    draw = samplers.gamma(key, 1 + s, at_least_one=True) / n
    return jnp.clip(draw, lo, hi)

  def posterior_law(n, stats):
    s = stats[..., 0]
    return posteriors.GammaLaw(shape=1 + s, rate=jnp.maximum(n, 1).astype(s.dtype),
                               sign=jnp.ones_like(s))

  posterior_sample = posteriors.Posterior(sample_posterior, posterior_law)

  # -d^2/dm^2 log pi(x|m) = x / m^2, which is 0 at x = 0: Assumption 7 fails.
  return exponential_family(
      name="poisson", lo=lo, hi=hi, kl=kl, sample=sample, fisher=fisher,
      log_density=log_density, posterior_sample=posterior_sample,
      curvature=None)
