"""Tests of jbai.random.samplers: the laws against SciPy, exactness of the loop, determinism.

Law tests are one-sample Kolmogorov-Smirnov tests of N = 20,000 draws against
SciPy's CDF, rejecting at p < 1e-3 (so each fails by chance once in 1,000
runs; the keys are fixed, so a run is reproducible). At N = 20,000 the test
detects a CDF error of about 0.014 (its 1e-3 critical value is 1.95 / sqrt(N)).
Parameters cover the range a trial meets: posterior shapes from 1 to 1e6 (a
Bernoulli arm pulled a million times), in float32 (the engine) and float64.
"""

from decimal import Decimal, getcontext

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jbai.random import samplers

N = 20_000
ALPHA = 1e-3
DTYPES = [jnp.float32, jnp.float64]


def ks_pvalue(draws, cdf):
  return stats.kstest(np.asarray(draws, np.float64), cdf).pvalue


GAMMA_SHAPES = [0.3, 1.0, 1.5, 7.9, 1e3, 1e6]
BETA_SHAPES = [
    (1.0, 1.0), (0.5, 0.5), (1.5, 3.0), (1.0, 1e6),  # small, below 1, one-sided
    (1 + 30, 1 + 100 - 30), (1 + 3e5, 1 + 1e6 - 3e5), (1 + 999_990, 1 + 10),  # posteriors
]
LOWERS = [-30.0, -2.0, 0.0, 3.0, 8.0, 12.5, 14.0, 40.0, 300.0]


def batched(sampler, params, dtype, key):
  """N draws for every parameter value in one call: [len(params), N]."""
  cols = [jnp.repeat(jnp.asarray(col, dtype), N).reshape(len(params), N)
          for col in zip(*params)]
  return np.asarray(jax.jit(sampler)(key, *cols), np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gamma_law(dtype):
  draws = batched(samplers.gamma, [(a,) for a in GAMMA_SHAPES], dtype, jax.random.key(1))
  for a, row in zip(GAMMA_SHAPES, draws):
    assert ks_pvalue(row, stats.gamma(a).cdf) > ALPHA, a


@pytest.mark.parametrize("dtype", DTYPES)
def test_beta_law(dtype):
  draws = batched(samplers.beta, BETA_SHAPES, dtype, jax.random.key(2))
  assert np.all((draws >= 0) & (draws <= 1))
  for (a, b), row in zip(BETA_SHAPES, draws):
    assert ks_pvalue(row, stats.beta(a, b).cdf) > ALPHA, (a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_normal_law(dtype):
  draws = samplers.normal(jax.random.key(3), (N,), dtype)
  assert draws.dtype == dtype
  assert ks_pvalue(draws, stats.norm.cdf) > ALPHA


@pytest.mark.parametrize("dtype", DTYPES)
def test_truncated_normal_law(dtype):
  """Deep tails included: P(X > 40) = 4e-350 is below float64's smallest number."""
  draws = batched(samplers.truncated_normal, [(x,) for x in LOWERS], dtype, jax.random.key(4))
  assert np.all(np.isfinite(draws))
  for lower, row in zip(LOWERS, draws):
    assert np.all(row >= np.float64(np.asarray(lower, dtype)))
    log_tail = stats.norm.logsf(lower)
    cdf = lambda x: -np.expm1(stats.norm.logsf(x) - log_tail)  # noqa: E731
    assert ks_pvalue(row, cdf) > ALPHA, lower


@pytest.mark.parametrize("dtype", DTYPES)
def test_truncated_normal_inverse_cdf_is_accurate(dtype):
  """The draw is the inverse CDF of its uniform: checked against SciPy in float64
  at the uniforms the key gives, to a relative 1e-5 (float32) / 1e-10 (float64)."""
  lower = jnp.asarray([-5.0, 0.0, 5.0, 13.0, 15.0, 30.0, 100.0], dtype)
  key = jax.random.key(5)
  x = np.asarray(samplers.truncated_normal(key, lower), np.float64)
  u = np.asarray(jax.random.uniform(key, lower.shape, dtype), np.float64)
  log_p = np.log1p(-u) + stats.norm.logsf(np.asarray(lower, np.float64))
  # the root of logsf(x) = log_p by bisection in float64
  lo, hi = np.asarray(lower, np.float64), np.asarray(lower, np.float64) + 50
  for _ in range(200):
    mid = (lo + hi) / 2
    above = stats.norm.logsf(mid) > log_p
    lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
  tol = 1e-5 if dtype == jnp.float32 else 1e-10
  np.testing.assert_allclose(x, (lo + hi) / 2, rtol=tol, atol=tol)


def test_loop_gives_the_rounds_it_replaces():
  """Rounds drawn up front and rounds drawn in the loop use the same keys, so the
  draws do not depend on `rounds`: the loop is exactly the rejection sampler."""
  a = jnp.asarray([1.0, 1.0, 1.2, 3.0, 1e4, 1e6] * 50)
  key = jax.random.key(6)
  draw = jax.jit(samplers.gamma, static_argnames="rounds")
  reference = draw(key, a, rounds=1)
  for rounds in (2, 3, 5):
    np.testing.assert_array_equal(draw(key, a, rounds=rounds), reference)


def test_dtypes_follow_the_parameters():
  for dtype in DTYPES:
    a = jax.ShapeDtypeStruct((3,), dtype)
    key = jax.random.key(0)
    assert jax.eval_shape(samplers.gamma, key, a).dtype == dtype
    assert jax.eval_shape(samplers.beta, key, a, a).dtype == dtype
    assert jax.eval_shape(samplers.truncated_normal, key, a).dtype == dtype


def test_same_key_same_draw_and_no_dependence_on_the_batch():
  """A draw is a function of its key and its own parameter: vmapped keys give the
  single calls' draws, and changing the other elements (so that they need other
  numbers of rounds) leaves an element's draw unchanged."""
  keys = jax.random.split(jax.random.key(7), 16)
  a = jnp.linspace(1.0, 50.0, 16)
  batched = jax.jit(jax.vmap(samplers.gamma))(keys, a)
  single = jax.jit(samplers.gamma)
  np.testing.assert_array_equal(batched, jnp.stack([single(k, x) for k, x in zip(keys, a)]))
  key = jax.random.key(8)
  first = single(key, jnp.asarray([2.0, 1.0, 1.0, 1.0]))
  other = single(key, jnp.asarray([2.0, 1e6, 0.5, 30.0]))
  assert first[0] == other[0]
  beta = jax.jit(samplers.beta)
  beta_first = beta(key, jnp.asarray([2.0, 1.0]), jnp.asarray([5.0, 1.0]))
  beta_other = beta(key, jnp.asarray([2.0, 1e5]), jnp.asarray([5.0, 0.3]))
  assert beta_first[0] == beta_other[0]


def test_bad_shapes_give_nan_not_a_hang():
  draws = jax.jit(samplers.gamma)(jax.random.key(9), jnp.asarray([0.0, -1.0, jnp.nan, 2.0]))
  assert np.all(np.isnan(draws[:3])) and np.isfinite(draws[3])


@pytest.mark.parametrize("dtype", DTYPES)
def test_log1p_remainder_accuracy(dtype):
  """g(y) = log1p(y) - y + y^2/2 - y^3/3 to a relative 2e-4 (float32), 2e-13
  (float64) of itself, against 60-digit decimal arithmetic, on both sides of
  the switch between series and direct form."""
  getcontext().prec = 60
  ys = np.asarray([-0.9, -0.5, -0.2001, -0.1999, -0.01, 1e-4, 0.05, 0.1999, 0.2001, 0.7, 5.0],
                  dtype)
  got = np.asarray(samplers.log1p_remainder(jnp.asarray(ys)), np.float64)
  want = []
  for y in ys:
    d = Decimal(float(y))
    want.append(float((1 + d).ln() - d + d * d / 2 - d * d * d / 3))
  tol = 2e-4 if dtype == jnp.float32 else 2e-13
  np.testing.assert_allclose(got, want, rtol=tol)


def test_marsaglia_tsang_acceptance_in_float32_at_large_shapes():
  """The rewritten acceptance test keeps Gamma(1e6) exact in float32; the textbook
  form x^2/2 + d - d v + d log v cancels there. Mean and variance of 20,000 draws
  are within 4.5 standard errors of a and a (and the KS test above)."""
  a = 1e6
  draws = np.asarray(jax.jit(samplers.gamma)(jax.random.key(10), jnp.full((N,), a, jnp.float32)),
                     np.float64)
  assert abs(draws.mean() - a) < 4.5 * np.sqrt(a / N)
  assert abs(draws.var() / a - 1) < 4.5 * np.sqrt(2 / N)


def test_at_least_one_gives_the_same_draws():
  """Shapes >= 1 (a conjugate posterior's): the short program draws the same values."""
  key = jax.random.key(5)
  a = jnp.asarray([1.0, 1.5, 3.0, 40.0, 1e4])
  b = jnp.asarray([1.0, 7.0, 1.0, 2.5, 3e3])
  gamma = jax.jit(samplers.gamma, static_argnames="at_least_one")
  beta = jax.jit(samplers.beta, static_argnames="at_least_one")
  np.testing.assert_array_equal(gamma(key, a), gamma(key, a, at_least_one=True))
  np.testing.assert_array_equal(beta(key, a, b), beta(key, a, b, at_least_one=True))
  assert np.isnan(gamma(key, jnp.asarray([0.5]), at_least_one=True)).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_uniforms_from_words_as_jax_random(dtype):
  """The words-to-uniform map is jax.random.uniform's: the same bits, the same floats."""
  key = jax.random.key(11)
  want = jax.random.uniform(key, (1000,), dtype)
  if dtype == jnp.float64:
    bits = jax.random.bits(key, (1000,), jnp.uint64)
    words = ((bits >> 32).astype(jnp.uint32), bits.astype(jnp.uint32))
  else:
    words = jax.random.bits(key, (1000,), jnp.uint32)
  np.testing.assert_array_equal(samplers._unit(words, dtype), want)


# The hypergeometric sampler (jbai.random.hypergeometric): (population N, successes
# K, draws n), by inversion (a = min(K, N - K, n, N - n) <= SMALL) and by
# ratio-of-uniforms beyond, up to a population of 2^31 - 1.
HYPERGEOMETRIC = [(10, 3, 4), (50, 17, 17), (100, 99, 50), (1000, 30, 20), (1000, 500, 500),
                  (2000, 700, 1000), (10**6, 4 * 10**5, 3000), (2**31 - 1, 2**30, 10**6),
                  (2**31 - 1, 5, 2**30), (2**31 - 1, 2**30, 2**30)]
FLOAT32_WHOLE = 2**24  # float32 holds the whole numbers up to here, and draws beyond are rounded


def _hypergeometric_cells(law, size):
  """Cells of consecutive values with expected counts of about 20 or more, the
  tails pooled into the end cells: (upper edges, probabilities). Over a support of
  up to 20,000 values from the exact pmf, beyond from the exact CDF at 1,000
  quantiles of the normal law of the same mean and variance."""
  lo, hi = law.support()
  if hi - lo <= 20_000:
    p = law.pmf(np.arange(lo, hi + 1))
    cdf = np.cumsum(p)
    starts = np.unique(np.floor(cdf * size / 20).astype(np.int64), return_index=True)[1]
    edges = lo + np.append(starts[1:], len(p)) - 1  # the last value of each cell
  else:
    edges = np.unique(np.round(law.mean() + law.std() * stats.norm.ppf(
        np.linspace(0, 1, 1001)[1:-1])))
    edges = np.append(edges, hi)
  probs = np.diff(np.concatenate([[0.0], law.cdf(edges)]))
  probs[-1] += 1 - probs.sum()
  return edges, probs


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_hypergeometric_law(dtype):
  """Chi-square of N draws per parameter against SciPy's exact law, on cells of
  expected count >= 20 (all of the support's probability), p > ALPHA each. In
  float32 a population of 2^31 - 1 with draws near 2^29 is left out: such draws
  are rounded to float32's grid (64 apart there), as the sums they meet are."""
  from jbai.random.hypergeometric import hypergeometric
  params = np.array(HYPERGEOMETRIC, dtype=np.float64)
  key = jax.random.key(11)
  draws = np.asarray(jax.jit(lambda k, n, s, m: hypergeometric(k, n, s, m, dtype=dtype))(
      key, *(jnp.repeat(jnp.asarray(col, dtype), N).reshape(len(params), N)
             for col in params.T)), np.float64)
  for (pop, good, sample), row in zip(HYPERGEOMETRIC, draws):
    law = stats.hypergeom(pop, good, sample)
    if jnp.finfo(dtype).bits == 32 and min(good, sample) > FLOAT32_WHOLE:
      continue
    assert (row == np.round(row)).all() and row.min() >= max(0, sample + good - pop)
    assert row.max() <= min(good, sample)
    edges, probs = _hypergeometric_cells(law, N)
    observed = np.bincount(np.searchsorted(edges, row, side="left"), minlength=len(edges))
    assert stats.chisquare(observed, probs * N).pvalue > ALPHA, (pop, good, sample)


def test_hypergeometric_draws_depend_on_their_key_and_parameters_alone():
  """Whole numbers in the support; an element's draw the same beside other
  elements (other paths, other numbers of rounds) and alone; the reflections
  K -> N - K and n -> N - n and the swap of K and n mirror the support."""
  from jbai.random.hypergeometric import hypergeometric
  sampler = jax.jit(hypergeometric)
  key = jax.random.key(12)
  first = sampler(key, jnp.asarray([1000.0, 10.0, 7.0]), jnp.asarray([400.0, 3.0, 7.0]),
                  jnp.asarray([300.0, 4.0, 0.0]))
  other = sampler(key, jnp.asarray([1000.0, 2.0**31, 1.0]), jnp.asarray([400.0, 2.0**30, 0.0]),
                  jnp.asarray([300.0, 12345.0, 1.0]))
  assert first[0] == other[0] and 0 <= first[0] <= 300 and first[0] == np.round(first[0])
  assert first[1] <= 3 and first[2] == 0 and other[2] == 0
  keys = jax.random.split(jax.random.key(13), 64)
  draw = lambda n, s, m: np.asarray(jax.jit(jax.vmap(lambda k: hypergeometric(k, n, s, m)))(
      keys))
  assert (draw(30.0, 30.0, 12.0) == 12).all() and (draw(30.0, 0.0, 12.0) == 0).all()
  assert (draw(30.0, 25.0, 12.0) >= 7).all()  # at most 5 failures among the 12 drawn
  bad = sampler(key, jnp.asarray([10.0, 10.0, jnp.nan, 0.0]), jnp.asarray([11.0, 3.0, 1.0, 0.0]),
                jnp.asarray([4.0, -1.0, 1.0, 0.0]))
  assert np.isnan(np.asarray(bad)).all()  # K > N, n < 0, NaN, N = 0: NaN, not a hang
