"""An exact hypergeometric sampler that vectorises under vmap.

Hypergeometric(N, K, n): the number of successes among n draws without
replacement from a population of N holding K successes, with the law

  f(k) = C(K, k) C(N - K, n - k) / C(N, n),   max(0, n + K - N) <= k <= min(n, K).

The engine splits a block of Bernoulli rewards with it: given that the N
rewards of a block hold K ones, the first n of them hold a Hypergeometric(N, K, n)
number (`jbai.families.bernoulli`).

Reductions (numpy's): the law is symmetric in (K, n), and K -> N - K, n -> N - n
reflect it, so the draw is made for a = min(K', n') and b = max(K', n'), with
K' = min(K, N - K) and n' = min(n, N - n) (so a <= b <= N / 2), and mapped back.

Small a (a <= SMALL): inversion of the cumulative law over the support 0..a,
whose log-pmf follows from the ratios f(k + 1) / f(k) = (a - k)(b - k) /
((k + 1)(N - a - b + k + 1)), each a product of two quotients of like size (no
cancellation), from one uniform (the key's random_bits, counters (0, position)).

Larger a: Stadlober's ratio-of-uniforms (numpy's HRUA): with the mode m, the
variance s^2 and h = D1 sqrt(s^2 + 1/2) + D2, propose X = b n / N + 1/2 +
h (V - 1/2) / U and accept k = floor(X) in 0..a where U^2 <= f(k) / f(m). The
ratio is computed as log f(k) - log f(m) in Loader's saddle-point form (R's
dhyper: f(k) = dbinom(k; K, p) dbinom(n - k; N - K, p) / dbinom(n; N, p), p = n/N,
each dbinom as exp(stirlerr and bd0 terms), all of moderate size), accurate in
relative terms for populations up to 2^31 and beyond, where a difference of
lgamma values (of size N log N) keeps no digits in float32. No truncation of the
support (numpy cuts it 16 standard deviations out). The rounds are those of
`jbai.random.samplers`: a fixed number for every element, then a while_loop for
the rare elements that all rejected, each round's two uniforms from one hash of
the counters (round, position) (`prng.block_words`).

So a draw is a function of the key, its position and its own parameters only,
exact for the law above up to the rounding of the float dtype: in float32,
populations beyond 2^24 are themselves rounded, as are the sums of rewards that
such a split meets.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.random.samplers import first_accepted, float_dtype, uniform_pair

SMALL = 16   # a = min(K', n') up to which the draw is by inversion
ROUNDS = 2   # ratio-of-uniforms rounds drawn for every element before the loop
_D1 = 2 * math.sqrt(2 / math.e)      # 1.7155..., Stadlober's hat constants
_D2 = 3 - 2 * math.sqrt(3 / math.e)  # 0.8989...
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# stirlerr(k) = log(k!) - (k + 1/2) log(k) + k - log(2 pi)/2 for k = 0..15 (0 at k = 0).
_STIRLERR = np.array([0.0] + [math.lgamma(k + 1) - (k + 0.5) * math.log(k) + k - _HALF_LOG_2PI
                              for k in range(1, 16)])


def stirlerr(x: jax.Array) -> jax.Array:
  """log(x!) - (x + 1/2) log(x) + x - log(2 pi) / 2 for whole x >= 0: a table
  below 16, and beyond the Stirling series to x^-9 (R's stirlerr), below 1e-13 of
  the value there."""
  table = jnp.asarray(_STIRLERR, x.dtype)[jnp.clip(x, 0, 15).astype(jnp.int32)]
  big = jnp.maximum(x, 16)
  nn = big * big
  series = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn) / nn) / nn) / big
  return jnp.where(x < 16, table, series)


def bd0(x: jax.Array, mean: jax.Array) -> jax.Array:
  """x log(x / mean) + mean - x for x >= 0, mean > 0, accurate in relative terms
  (Loader): where |x - mean| < (x + mean) / 10, the series (x - mean) v +
  2 x sum_j v^(2j+1) / (2j + 1), v = (x - mean) / (x + mean), whose terms fall by
  v^2 < 1/100 each (4 terms in float32, 8 in float64); beyond, directly."""
  d = x - mean
  near = jnp.abs(d) < 0.1 * (x + mean)
  v = jnp.where(near, d / jnp.where(near, x + mean, 1), 0)
  s = d * v
  ej = 2 * x * v
  v2 = v * v
  for j in range(1, 5 if jnp.finfo(x.dtype).bits <= 32 else 9):
    ej = ej * v2
    s = s + ej / (2 * j + 1)
  safe_x = jnp.where(x > 0, x, 1)
  direct = jnp.where(x > 0, x * jnp.log(safe_x / mean), 0) + mean - x
  return jnp.where(near, s, direct)


def log_dbinom(x: jax.Array, n: jax.Array, p: jax.Array, q: jax.Array) -> jax.Array:
  """log of C(n, x) p^x q^(n - x) for whole 0 <= x <= n, q = 1 - p given apart
  (R's dbinom_raw): stirlerr(n) - stirlerr(x) - stirlerr(n - x) - bd0(x, n p) -
  bd0(n - x, n q) - log(2 pi x (n - x) / n) / 2, and n log q, n log p at the ends."""
  y = n - x
  inner = jnp.where((x > 0) & (y > 0), x, 1)
  inner_y = jnp.where((x > 0) & (y > 0), y, 1)
  inner_n = inner + inner_y
  lc = (stirlerr(inner_n) - stirlerr(inner) - stirlerr(inner_y)
        - bd0(inner, inner_n * p) - bd0(inner_y, inner_n * q))
  lf = 2 * _HALF_LOG_2PI + jnp.log(inner) + jnp.log(inner_y / inner_n)
  middle = lc - 0.5 * lf
  return jnp.where(x <= 0, n * jnp.log(q), jnp.where(y <= 0, n * jnp.log(p), middle))


def _small(key, population, a, b):
  """The draw for a <= SMALL by inversion over 0..SMALL (the entries beyond a
  have probability 0)."""
  k = jnp.arange(SMALL, dtype=a.dtype)
  a_, b_, n_ = a[..., None], b[..., None], population[..., None]
  live = k < a_
  ratio = (jnp.log(jnp.where(live, (a_ - k) / (k + 1), 1))
           + jnp.log(jnp.where(live, (b_ - k) / (n_ - a_ - b_ + k + 1), 1)))
  log_f = jnp.concatenate([jnp.zeros_like(a_), jnp.cumsum(ratio, axis=-1)], axis=-1)
  support = jnp.arange(SMALL + 1, dtype=a.dtype) <= a_
  weight = jnp.where(support, jnp.exp(log_f - jnp.max(jnp.where(support, log_f, -jnp.inf),
                                                        axis=-1, keepdims=True)), 0)
  cdf = jnp.cumsum(weight, axis=-1)
  u = jax.random.uniform(key, a.shape, a.dtype) * cdf[..., -1]
  return jnp.minimum(jnp.sum(cdf <= u[..., None], axis=-1).astype(a.dtype), a)


def _large(key, population, a, b, rounds):
  """The draw for a > SMALL by ratio-of-uniforms (numpy's HRUA, exact support)."""
  p = b / population            # the draws' share, for Loader's form
  q = (population - b) / population
  mean = b * a / population
  var = (population - b) * mean * ((population - a) / population) / (population - 1)
  h = _D1 * jnp.sqrt(var + 0.5) + _D2
  mode = jnp.floor((b + 1) * ((a + 1) / (population + 2)))

  def log_f(k):  # log f(k) up to a constant: dbinom(k; a, p) dbinom(b - k; N - a, p)
    return log_dbinom(k, a, p, q) + log_dbinom(b - k, population - a, p, q)

  top = log_f(mode)

  def propose(r):
    u, v = uniform_pair(key, r, a.shape, a.dtype)
    x = mean + 0.5 + h * (v - 0.5) / jnp.where(u > 0, u, 1)
    k = jnp.floor(jnp.clip(x, 0, a))
    inside = (u > 0) & (x >= 0) & (x < a + 1)
    ok = inside & (2 * jnp.log(jnp.where(u > 0, u, 1)) <= log_f(k) - top)
    return jnp.where(ok, k, -1)

  return first_accepted(propose, -1, rounds)


def hypergeometric(key: jax.Array, population: ArrayLike, successes: ArrayLike,
                   draws: ArrayLike, *, rounds: int = None, dtype=None) -> jax.Array:
  """Hypergeometric(N, K, n) draws, exactly and vmap-friendly.

  Args:
    key: a PRNG key.
    population: N >= 1, whole numbers (int or float).
    successes: K, whole numbers in [0, N].
    draws: n, whole numbers in [0, N].
    rounds: ratio-of-uniforms rounds drawn for every element before the loop.
    dtype: the float dtype of the draws (default: that of `successes` if float,
      else the default float).

  Returns:
    The numbers of successes drawn, of the broadcast shape, as whole floats;
    NaN where the parameters are not as above.

  Example:
    >>> import jax
    >>> x = hypergeometric(jax.random.key(0), 10**9, 5 * 10**8, 1000)
    >>> bool(0 <= x <= 1000)
    True
  """
  dtype = dtype or float_dtype(successes)
  rounds = ROUNDS if rounds is None else rounds
  n_, k_, d_ = jnp.broadcast_arrays(jnp.asarray(population).astype(dtype),
                                    jnp.asarray(successes).astype(dtype),
                                    jnp.asarray(draws).astype(dtype))
  flip_draws = d_ > n_ - d_
  sample = jnp.where(flip_draws, n_ - d_, d_)
  flip_good = k_ > n_ - k_
  good = jnp.where(flip_good, n_ - k_, k_)
  a, b = jnp.minimum(good, sample), jnp.maximum(good, sample)
  valid = (n_ >= 1) & (k_ >= 0) & (k_ <= n_) & (d_ >= 0) & (d_ <= n_)  # False for NaN
  small = (a <= SMALL) | ~valid
  # The ratio-of-uniforms loop runs while some element rejects: the small (and
  # invalid) elements enter it with parameters that it accepts (N = 4 (SMALL + 1),
  # a = b = N/4), so that a bad element gives NaN, not a hang.
  dummy = jnp.asarray(SMALL + 1, dtype)
  x = jnp.where(small, _small(key, n_, a, b),
                _large(key, jnp.where(small, 4 * dummy, n_), jnp.where(small, dummy, a),
                       jnp.where(small, dummy, b), rounds))
  # x is the successes among `sample` draws from `good` successes (symmetric in the two).
  x = jnp.where(flip_good, sample - x, x)
  return jnp.where(valid, jnp.where(flip_draws, k_ - x, x), jnp.nan)
