"""Random numbers for jbai: the threefry PRNG and the exact posterior samplers.

- `prng`: threefry-2x32 as straight-line JAX code, bit-identical to jax.random's
  default implementation (`prng.THREEFRY`, `prng.wrap`, `prng.block_words`).
- `samplers`: exact samplers of the gamma, beta, truncated-normal and other laws
  that vectorise under vmap.
- `posteriors`: the posterior law of each family's arm mean, built on `samplers`
  (`posteriors.Posterior`).
"""

from jbai.random import posteriors, prng, samplers

__all__ = ["posteriors", "prng", "samplers"]
