"""Random numbers for jbai: the threefry PRNG and the exact posterior samplers.

- `prng`: threefry-2x32 as straight-line JAX code, bit-identical to jax.random's
  default implementation (`prng.THREEFRY`, `prng.wrap`, `prng.block_words`).
- `samplers`: exact samplers of the gamma, beta, truncated-normal and other laws
  that vectorise under vmap.
- `hypergeometric`: an exact hypergeometric sampler in that style (the split of a
  block of Bernoulli rewards, `jbai.core.blocks`).
- `posteriors`: the posterior law of each family's arm mean, built on `samplers`
  (`posteriors.Posterior`).
"""

from jbai.random import hypergeometric, posteriors, prng, samplers

__all__ = ["hypergeometric", "posteriors", "prng", "samplers"]
