"""Exact Gamma, Beta, normal and truncated-normal samplers that vectorise under vmap.

Every element draws a fixed number of rejection rounds at once (straight-line
code), and only the rare elements that all these rounds reject go on in a
`lax.while_loop`, whose body runs only when some element needs it (jax.random's
samplers run a loop per element instead; docs/design/samplers.md says why).

Exactness and determinism. Round r = 1, 2, ... of every element takes its two
uniforms from the two words of one threefry hash of the counters (r, the
element's position) under the key (`prng.block_words`; two hashes in float64),
and an element keeps its first accepted round. So an element's value is a
function of the key, its position and its own parameter only: not of the other
elements, nor of how many rounds they needed, nor of `rounds`
(tests/test_samplers.py checks all three). The law is exactly that of the
rejection sampler (no cap, no fallback).

Gamma(a), a >= 1: Marsaglia & Tsang (2000). With d = a - 1/3, c = 1/sqrt(9d),
x ~ N(0, 1), y = c x and v = (1 + y)^3, accept d v when y > -1 and
log u < x^2/2 + d - d v + d log v. The right-hand side is a difference of terms
of size d that cancel to O(1); using 9 d c^2 = 1 it is rewritten exactly as
3 d g(y), g(y) = log1p(y) - y + y^2/2 - y^3/3 = -y^4/4 + y^5/5 - ..., summed as
its series for |y| < 0.2 and directly beyond (`log1p_remainder`).

Gamma(a), a < 1: Gamma(a + 1) U^(1/a), U uniform from the key's own random_bits
(counters (0, position), apart from every round's). Beta(a, b) = G_a / (G_a + G_b),
the U^(1/a) factors of shapes below 1 divided by the larger of the two so that
the ratio neither underflows nor becomes 0/0.

Normal: the inverse CDF (ndtri) of one uniform. Truncated normal N(0, 1) given
X > lower: the inverse CDF in log space, with no rejection, accurate however deep
the tail (lower = 40 has P(X > 40) = 4e-350, below float64's range).
"""

import jax
import jax.numpy as jnp
from jax.scipy.special import log_ndtr, ndtri
from jax.typing import ArrayLike

from jbai.random import prng

ROUNDS = 2  # rejection rounds drawn for every element before the loop
_SERIES = 0.2  # |y| below which g(y) is summed as its series
NEWTON_STEPS = 3  # Newton steps of the truncated normal's inverse CDF deep in the tail


def float_dtype(*xs):
  dtype = jnp.result_type(*xs)
  return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.result_type(float)


def log1p_remainder(y: jax.Array) -> jax.Array:
  """g(y) = log1p(y) - y + y^2/2 - y^3/3 for y > -1, accurate near 0.

  For |y| < 0.2 the series -y^4/4 + y^5/5 - ... up to y^16 in float32 and y^28 in
  float64 (truncation below 1e-9, resp. 1e-18, of the value); beyond, the direct
  form, whose cancellation there costs at most about 1e-4 (float32), 1e-13 (float64) of
  the value.
  """
  last = 16 if jnp.finfo(y.dtype).bits <= 32 else 28
  series = jnp.zeros_like(y)
  for n in range(last, 3, -1):  # Horner: sum_{n >= 4} (-1)^(n+1) y^n / n
    series = y * series + (-1) ** (n + 1) / n
  series = series * y**4
  # log(1 + y) rather than log1p: as accurate for |y| >= _SERIES, and vectorised on CPU.
  direct = jnp.log(jnp.maximum(1 + y, jnp.finfo(y.dtype).tiny)) - y + y**2 / 2 - y**3 / 3
  return jnp.where(jnp.abs(y) < _SERIES, series, direct)


def standard_normal(u: jax.Array) -> jax.Array:
  """N(0, 1) from a uniform u on [0, 1) (multiples of eps) by the inverse CDF.

  u + eps/2 is the midpoint grid, symmetric about 1/2 and inside (0, 1). ndtri
  is on CPU several times cheaper than the erf_inv of jax.random.normal.
  """
  return ndtri(u + jnp.finfo(u.dtype).eps / 2)


def normal(key: jax.Array, shape=(), dtype=None) -> jax.Array:
  """N(0, 1) draws by the inverse CDF of one uniform each (jax.random.normal's
  law, cheaper on CPU; a different stream).

  Args:
    key: a PRNG key.
    shape: the output shape.
    dtype: a float dtype (default: the default float).

  Returns:
    Draws of that shape and dtype.
  """
  dtype = dtype or jnp.result_type(float)
  return standard_normal(jax.random.uniform(key, shape, dtype))


def _unit(words, dtype):
  """Uniforms on [0, 1) from uint32 words (for float64, from (high, low) word
  pairs): the top mantissa bits under the exponent of 1, minus 1, as
  jax.random.uniform."""
  finfo = jnp.finfo(dtype)
  if finfo.bits == 64:
    high, low = words
    bits, uint = (high.astype(jnp.uint64) << 32) | low.astype(jnp.uint64), jnp.uint64
  else:
    uint = {16: jnp.uint16, 32: jnp.uint32}[finfo.bits]
    bits = (words >> (32 - finfo.bits)).astype(uint)
  one = jax.lax.bitcast_convert_type(jnp.ones((), dtype), uint)
  return jax.lax.bitcast_convert_type((bits >> (finfo.bits - finfo.nmant)) | one, dtype) - 1


def uniform_pair(key, block, shape, dtype):
  """Two independent uniform arrays on [0, 1) for rejection round `block` >= 1:
  the two words of one hash per entry (prng.block_words), two hashes in float64."""
  if jnp.finfo(dtype).bits == 64:
    return (_unit(prng.block_words(key, 2 * block - 1, shape), dtype),
            _unit(prng.block_words(key, 2 * block, shape), dtype))
  return tuple(_unit(w, dtype) for w in prng.block_words(key, block, shape))


def first_accepted(propose, rejected, rounds):
  """The first accepted proposal of every element.

  `propose(r)` returns round r's proposals (r = 1, 2, ...) as one array: the
  proposal where accepted and the sentinel `rejected` where not. Rounds 1 ..
  rounds are drawn for every element, then a while_loop draws further rounds
  while some element has none accepted. A single array (not an (accepted,
  value) pair) flows through, which on CPU lets XLA fuse each round into one
  kernel.
  """
  value = propose(1)
  for r in range(2, rounds + 1):
    value = jnp.where(value == rejected, propose(r), value)

  def body(carry):
    r, value = carry
    return r + 1, jnp.where(value == rejected, propose(r), value)

  _, value = jax.lax.while_loop(lambda c: jnp.any(c[1] == rejected), body,
                                (jnp.asarray(rounds + 1, jnp.uint32), value))
  return value


def _gamma_at_least_one(key, a, rounds):
  """Gamma(a) for a >= 1 (Marsaglia-Tsang); NaN where a is not >= 1."""
  valid = a >= 1
  d = jnp.where(valid, a, 1) - 1 / 3
  c = jax.lax.rsqrt(9 * d)

  def propose(r):
    u_normal, u_accept = uniform_pair(key, r, a.shape, a.dtype)
    y = c * standard_normal(u_normal)
    ok = (y > -1) & (jnp.log(u_accept) < 3 * d * log1p_remainder(y))
    return jnp.where(ok, d * (1 + y) ** 3, -1)

  g = first_accepted(propose, -1, rounds)
  return jnp.where(valid, g, jnp.nan)


def _log_boost(key, a):
  """log U / a with U uniform on [0, 1): Gamma(a) = Gamma(a + 1) U^(1/a). (U
  from random_bits' counters, block 0, apart from the rounds' blocks.)"""
  return jnp.log(jax.random.uniform(key, a.shape, a.dtype)) / a


def gamma(key: jax.Array, a: ArrayLike, *, rounds: int = ROUNDS,
          at_least_one: bool = False) -> jax.Array:
  """Gamma(a, 1) draws, one per element of a (a > 0), exactly and vmap-friendly.

  Args:
    key: a PRNG key.
    a: shape parameters, any shape; float dtype (ints become the default float).
    rounds: rejection rounds drawn for every element before the loop.
    at_least_one: the caller guarantees a >= 1 (a conjugate posterior's shape):
      the draw for shapes below 1 is left out of the program (the same values,
      less work; NaN where a < 1).

  Returns:
    Draws of a's shape and dtype; NaN where a is not > 0.

  Example:
    >>> import jax
    >>> g = gamma(jax.random.key(0), jnp.array([1.0, 5.0, 1e6]))
    >>> g.shape
    (3,)
  """
  a = jnp.asarray(a, float_dtype(a))
  if at_least_one:
    return _gamma_at_least_one(key, a, rounds)
  small = a < 1
  g = _gamma_at_least_one(key, jnp.where(small & (a > 0), a + 1, a), rounds)
  return jnp.where(small, g * jnp.exp(_log_boost(key, a)), g)


def _gamma_pair(key, a, b, rounds, at_least_one):
  """(G_a, G_b), independent Gamma(a) and Gamma(b) draws of the broadcast shape,
  each scaled by the same positive factor when a shape is below 1 (so that
  their ratios are exact and neither underflows nor is 0/0)."""
  dtype = float_dtype(a, b)
  a, b = jnp.broadcast_arrays(jnp.asarray(a, dtype), jnp.asarray(b, dtype))
  size = a.size
  # One flat array of the 2 n shapes (on CPU cheaper than a stacked [2, n] one).
  ab = jnp.concatenate([a.ravel(), b.ravel()])
  if at_least_one:
    g = _gamma_at_least_one(key, ab, rounds)
    return g[:size].reshape(a.shape), g[size:].reshape(a.shape)
  small = ab < 1
  g = _gamma_at_least_one(key, jnp.where(small & (ab > 0), ab + 1, ab), rounds)
  # G = g U^(1/shape); the U^(1/shape) factors (1 for shapes >= 1) are divided
  # by the larger of the two.
  # One pass over the flat array, sliced once at the end (scaling the two slices
  # apart cost 4 times as much on CPU: benchmarks/samplers.py, beta-any).
  log_boost = jnp.where(small, _log_boost(key, ab), 0)
  top = jnp.maximum(log_boost[:size], log_boost[size:])
  g = g * jnp.exp(log_boost - jnp.concatenate([top, top]))
  return g[:size].reshape(a.shape), g[size:].reshape(a.shape)


def beta(key: jax.Array, a: ArrayLike, b: ArrayLike, *, rounds: int = ROUNDS,
         at_least_one: bool = False) -> jax.Array:
  """Beta(a, b) draws (a, b > 0, broadcast together), exactly and vmap-friendly.

  Args:
    key: a PRNG key.
    a, b: the shape parameters.
    rounds: rejection rounds drawn for every Gamma before the loop.
    at_least_one: the caller guarantees a, b >= 1 (as `gamma`).

  Returns:
    Draws of the broadcast shape, in [0, 1]; NaN where a or b is not > 0.
  """
  ga, gb = _gamma_pair(key, a, b, rounds, at_least_one)
  return ga / (ga + gb)


def beta_odds(key: jax.Array, a: ArrayLike, b: ArrayLike, *, rounds: int = ROUNDS,
              at_least_one: bool = False) -> jax.Array:
  """The odds X / (1 - X) of Beta(a, b) draws X, as `beta` (the same key gives
  the odds of the same draws): G_a / G_b, with full relative precision at both
  ends of (0, 1), where X itself rounds to 0 or 1."""
  ga, gb = _gamma_pair(key, a, b, rounds, at_least_one)
  return ga / gb


def truncated_normal(key: jax.Array, lower: ArrayLike) -> jax.Array:
  """N(0, 1) conditioned on X > lower, exactly, for any real lower (vmap-friendly).

  By the inverse CDF in log space, with no rejection (`truncated_normal_icdf`).

  Args:
    key: a PRNG key.
    lower: the truncation points, any shape.

  Returns:
    Draws of lower's shape and dtype, each >= its lower.
  """
  lower = jnp.asarray(lower, float_dtype(lower))
  return truncated_normal_icdf(jax.random.uniform(key, lower.shape, lower.dtype), lower)


def truncated_normal_icdf(u: jax.Array, lower: jax.Array) -> jax.Array:
  """The inverse CDF of N(0, 1) given X > lower at the uniforms u in [0, 1).

  X solves log Phi(-X) = log_p = log(1 - U) + log Phi(-lower). Where exp(log_p)
  is a normal float, X = -ndtri(exp(log_p)); deeper in the tail (lower beyond
  about 13 in float32, 37 in float64) Newton's method on log_ndtr(-x) = log_p
  from the asymptotic root of -x^2/2 - log x - log(2 pi)/2 = log_p (NEWTON_STEPS
  steps; it converges to float precision in two). Accurate however deep the
  tail (lower = 40 has P(X > 40) = 4e-350, below float64's range).
  """
  dtype = lower.dtype
  log_p = jnp.log(1 - u) + log_ndtr(-lower)
  central = -ndtri(jnp.exp(log_p))
  half_log_2pi = 0.5 * jnp.log(jnp.asarray(2 * jnp.pi, dtype))
  rough = jnp.sqrt(jnp.maximum(-2 * log_p - 2 * half_log_2pi, 1))
  x = jnp.sqrt(jnp.maximum(-2 * log_p - 2 * half_log_2pi - 2 * jnp.log(rough), 1))
  for _ in range(NEWTON_STEPS):
    log_tail = log_ndtr(-x)
    slope = -jnp.exp(-x**2 / 2 - half_log_2pi - log_tail)  # d/dx log Phi(-x)
    x = x - (log_tail - log_p) / slope
  tail = log_p < jnp.log(jnp.finfo(dtype).tiny) + 5
  return jnp.maximum(jnp.where(tail, x, central), lower)
