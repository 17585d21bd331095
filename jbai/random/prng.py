"""Threefry-2x32 as a JAX PRNG implementation written as straight-line code.

`THREEFRY` is bit-identical to jax.random's default implementation (threefry2x32
with `jax_threefry_partitionable`, the default since JAX 0.5): a key's data
gives the same keys, bits, uniforms and normals under either. The engine wraps
every trial's key with it. It differs in the lowering only: the 20 rounds are
written as jnp operations, which XLA fuses into one kernel, where JAX lowers the
hash on CPU as a rolled loop (docs/design/samplers.md).

Threefry-2x32 with 20 rounds (Salmon et al. 2011): for a key (k0, k1) and a
counter (x0, x1), with k2 = k0 ^ k1 ^ 0x1BD11BDA, add (k0, k1) to the counter,
then 5 times: 4 rounds of (x0 += x1; x1 = rotl(x1, r) ^ x0) with the rotations
(13, 15, 26, 6) or (17, 29, 16, 24), alternately, followed by the injection of
(k_{i+1}, k_{i+2} + i + 1) (indices mod 3) after group i.

`block_words` gives samplers two 32-bit words per entry from one hash: the
counters (block, index) with block >= 1, which no fold_in, split or
random_bits of the same key (counters (0, index)) ever hashes.
"""

import math

import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def threefry2x32(k0, k1, x0, x1):
  """The threefry-2x32 hash of the counters (x0, x1) under the key (k0, k1).

  Args:
    k0, k1: uint32 key words (scalars or broadcastable arrays).
    x0, x1: uint32 counter words, of one shape.

  Returns:
    The two uint32 output words, of the counters' shape.
  """
  ks = (k0, k1, k0 ^ k1 ^ _PARITY)
  x0, x1 = x0 + ks[0], x1 + ks[1]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x0 = x0 + x1
      x1 = ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))) ^ x0
    x0 = x0 + ks[(i + 1) % 3]
    x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
  return x0, x1


def _counters(shape):
  """The flat index of every entry of `shape`, as 64-bit (high, low) uint32 words."""
  n = math.prod(shape)
  if n > 2**32:
    raise NotImplementedError(f"more than 2^32 random words requested: {shape}")
  low = jax.lax.iota(np.uint32, n).reshape(shape)
  return jnp.zeros(shape, np.uint32), low


def _seed(seed):
  return jax.random.key_data(jax.random.key(seed))


def _split(key, shape):
  hi, lo = _counters(tuple(shape))
  y0, y1 = threefry2x32(key[0], key[1], hi, lo)
  return jnp.stack([y0, y1], axis=-1)


def _fold_in(key, data):
  y0, y1 = threefry2x32(key[0], key[1], np.uint32(0), jnp.asarray(data).astype(np.uint32))
  return jnp.stack([y0, y1])


def _random_bits(key, bit_width, shape):
  hi, lo = _counters(tuple(shape))
  y0, y1 = threefry2x32(key[0], key[1], hi, lo)
  if bit_width == 64:
    return (y0.astype(np.uint64) << np.uint64(32)) | y1.astype(np.uint64)
  dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bit_width]
  return (y0 ^ y1).astype(dtype)


THREEFRY = jax.extend.random.define_prng_impl(
    key_shape=(2,), seed=_seed, split=_split, random_bits=_random_bits,
    fold_in=_fold_in, name="jbai_threefry2x32", tag="jfry")


def _threefry_data(key):
  """The uint32[2] key data of a threefry-2x32 key (jax's default implementation
  or THREEFRY, typed or raw), or None for a key of another implementation."""
  if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    return key if key.dtype == jnp.uint32 and key.shape == (2,) else None
  impl = jax.random.key_impl(key)
  if impl == "threefry2x32" or impl == THREEFRY:
    return jax.random.key_data(key)
  return None


def block_words(key: jax.Array, block, shape) -> tuple:
  """Two independent uint32 arrays of `shape`, from one hash per entry.

  For a threefry-2x32 key, the two output words of the hash of the counters
  (block, flat index of the entry): half the hashes of two random_bits calls,
  and no key derivation per block. `block` (an int >= 1 or a traced uint32)
  keeps these counters apart from those of every fold_in, split and
  random_bits of the same key (block 0). For a key of another implementation,
  the bits of fold_in(key, block).

  Args:
    key: a PRNG key (not batched: vmap for many keys).
    block: the block number, >= 1.
    shape: the shape of each array.

  Returns:
    (words, words), two uint32 arrays of `shape`.
  """
  shape = tuple(shape)
  data = _threefry_data(key)
  if data is None:
    bits = jax.random.bits(jax.random.fold_in(key, block), (2,) + shape, np.uint32)
    return bits[0], bits[1]
  _, low = _counters(shape)
  high = jnp.full(shape, block, np.uint32)
  return threefry2x32(data[0], data[1], high, low)


def wrap(data: jax.Array) -> jax.Array:
  """A typed key of `THREEFRY` from raw uint32[..., 2] key data."""
  return jax.random.wrap_key_data(data, impl=THREEFRY)


def as_default(key: jax.Array) -> jax.Array:
  """The same key under jax.random's default threefry implementation.

  For the few jax.random samplers that accept the default implementation only
  (jax.random.poisson); raw uint32 keys pass through.
  """
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    return jax.random.wrap_key_data(jax.random.key_data(key), impl="threefry2x32")
  return key
