"""jbai.random.prng.THREEFRY reproduces jax.random's default threefry bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jbai.random import prng

DRAWS = {
    "fold_in": lambda k: jax.random.key_data(jax.random.fold_in(k, 7)),
    "fold_in_high": lambda k: jax.random.key_data(jax.random.fold_in(k, 2**31 + 5)),
    "split": lambda k: jax.random.key_data(jax.random.split(k, 3)),
    "split_2d": lambda k: jax.random.key_data(jax.random.split(k, (2, 3))),
    "bits32": lambda k: jax.random.bits(k, (5,)),
    "bits8": lambda k: jax.random.bits(k, (2, 3), jnp.uint8),
    "bits64": lambda k: jax.random.bits(k, (3,), jnp.uint64),
    "uniform": lambda k: jax.random.uniform(k, (4,)),
    "uniform_scalar": lambda k: jax.random.uniform(k),
    "normal": lambda k: jax.random.normal(k, (3,)),
    "randint": lambda k: jax.random.randint(k, (6,), 0, 10),
    "gamma": lambda k: jax.random.gamma(k, 2.0, (3,)),
    "poisson": lambda k: jax.random.poisson(prng.as_default(k), 3.0, (3,)),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_same_numbers_as_default_threefry(name, seed):
  ref = jax.random.key(seed)
  ours = prng.wrap(jax.random.key_data(ref))
  a, b = np.asarray(DRAWS[name](ref)), np.asarray(DRAWS[name](ours))
  assert a.dtype == b.dtype
  np.testing.assert_array_equal(a, b)


def test_seed_and_vmapped_jitted_use():
  data = jax.random.key_data(jax.random.key(3))
  np.testing.assert_array_equal(jax.random.key_data(jax.random.key(3, impl=prng.THREEFRY)),
                                data)
  keys = jax.random.key_data(jax.random.split(jax.random.key(3), 4))

  def draw(wrap):
    return jax.jit(jax.vmap(lambda k: jax.random.normal(jax.random.fold_in(wrap(k), 3))))(keys)

  np.testing.assert_array_equal(draw(jax.random.wrap_key_data), draw(prng.wrap))


def test_hash_known_answer():
  # Random123's known-answer vector for threefry2x32 with 20 rounds.
  y0, y1 = prng.threefry2x32(np.uint32(0x13198A2E), np.uint32(0x03707344),
                             jnp.uint32(0x243F6A88), jnp.uint32(0x85A308D3))
  assert (int(y0), int(y1)) == (0xC4923A9C, 0x483DF7A0)


def test_block_words_are_the_hash_of_the_block_counters():
  """Both words of the hash of (block, index), for jax's threefry keys and
  THREEFRY's alike; counters apart from random_bits' (block 0)."""
  ref = jax.random.key(4)
  data = jax.random.key_data(ref)
  y0, y1 = prng.threefry2x32(data[0], data[1], jnp.full((2, 3), 5, jnp.uint32),
                             jnp.arange(6, dtype=jnp.uint32).reshape(2, 3))
  for key in (ref, prng.wrap(data), data):
    w0, w1 = jax.jit(prng.block_words, static_argnums=2)(key, 5, (2, 3))
    np.testing.assert_array_equal(w0, y0)
    np.testing.assert_array_equal(w1, y1)
  w0, _ = prng.block_words(ref, 1, (4,))
  assert not np.isin(np.asarray(w0), np.asarray(jax.random.bits(ref, (64,)))).any()


def test_block_words_of_another_implementation():
  key = jax.random.key(4, impl="rbg")
  w0, w1 = prng.block_words(key, 1, (3,))
  assert w0.dtype == w1.dtype == jnp.uint32 and w0.shape == (3,)
  assert (np.asarray(w0) != np.asarray(w1)).any()
  np.testing.assert_array_equal(prng.block_words(key, 1, (3,))[0], w0)
