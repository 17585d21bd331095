"""Invariants of the built-in reward families, parameterised over the families."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jbai import families

FAMILIES = {
    "gaussian": families.gaussian(sigma=2.0),
    "bernoulli": families.bernoulli(),
    "poisson": families.poisson(),
    "exponential": families.exponential(),
}
# Typical means inside Theta, and the edges of Theta where the family has them.
INTERIOR = {
    "gaussian": [-3.0, -0.5, 0.0, 1.0, 4.0],
    "bernoulli": [0.01, 0.2, 0.5, 0.77, 0.99],
    "poisson": [0.05, 0.7, 3.0, 20.0, 400.0],
    "exponential": [0.01, 0.3, 1.0, 7.0, 500.0],
}
EDGES = {
    "gaussian": [-1e4, 1e4],
    "bernoulli": [0.0, 1.0],
    "poisson": [0.0, 1e3],
    "exponential": [1e-3, 1e3],
}
NAMES = sorted(FAMILIES)


def _grid(name):
  return jnp.array(INTERIOR[name] + EDGES[name])


@pytest.mark.parametrize("name", NAMES)
def test_kl_is_zero_on_the_diagonal(name):
  fam, m = FAMILIES[name], _grid(name)
  np.testing.assert_allclose(fam.kl(m, m), 0.0, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_kl_is_positive_off_the_diagonal(name):
  fam, m = FAMILIES[name], _grid(name)
  p, q = jnp.meshgrid(m, m, indexing="ij")
  kl = fam.kl(p, q)
  off = p != q
  assert np.all(np.asarray(kl)[np.asarray(off)] > 0)


@pytest.mark.parametrize("name", NAMES)
def test_kl_is_finite_at_the_edges_of_theta(name):
  fam, m = FAMILIES[name], _grid(name)
  p, q = jnp.meshgrid(m, m, indexing="ij")
  kl = fam.kl(p, q)
  assert np.all(np.isfinite(kl)), kl


@pytest.mark.parametrize("name", NAMES)
def test_kl_grows_with_the_distance_between_means(name):
  # KL(m, x) is increasing in x above m and decreasing below (unimodal transport).
  fam = FAMILIES[name]
  m = np.array(INTERIOR[name])  # ascending
  kl = np.asarray(fam.kl(m[:, None], m[None, :]))  # kl[i, j] = KL(m_i, m_j)
  for i in range(m.size):
    assert np.all(np.diff(kl[i, i:]) > 0)
    assert np.all(np.diff(kl[i, :i + 1]) < 0)


@pytest.mark.parametrize("name", NAMES)
def test_fisher_information_is_the_curvature_of_kl(name):
  fam = FAMILIES[name]
  m = jnp.array(INTERIOR[name])
  curvature = jax.vmap(jax.hessian(fam.kl, argnums=1))(m, m)
  np.testing.assert_allclose(curvature, fam.fisher(m), rtol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_sampler_mean_and_variance(name):
  # n = 200,000 draws per mean. The sample mean is checked to 5 standard errors
  # (two-sided probability of a false failure < 6e-7 per mean); the sample
  # variance to 6% relative: its standard error is sqrt((kurtosis - 1) / n), at most
  # 0.9% for these means (kurtosis <= 15), so 6% is more than 6 standard errors.
  fam = FAMILIES[name]
  means = jnp.array(INTERIOR[name][1:4])
  n = 200_000
  x = fam.sample(jax.random.PRNGKey(0), jnp.broadcast_to(means, (n, means.size)))
  assert x.shape == (n, means.size)
  variance = 1 / fam.fisher(means)  # for these families V(m) = 1 / I(m)
  np.testing.assert_array_less(np.abs(x.mean(0) - means), 5 * np.sqrt(variance / n))
  np.testing.assert_allclose(x.var(0), variance, rtol=0.06)


@pytest.mark.parametrize("name", NAMES)
def test_stat_mean_and_mle_are_consistent(name):
  fam = FAMILIES[name]
  means = jnp.array(INTERIOR[name][1:4])
  n = 500
  x = fam.sample(jax.random.PRNGKey(1), jnp.broadcast_to(means, (n, means.size)))
  s = fam.stat(x)
  assert s.shape == x.shape + (fam.stat_dim,)
  np.testing.assert_array_equal(s[..., 0], x)
  stats = s.sum(0)
  counts = jnp.full(means.shape, n)
  sample_mean = jnp.clip(x.mean(0), fam.lo, fam.hi)
  np.testing.assert_allclose(fam.mean(counts, stats), sample_mean, rtol=1e-12)
  # The MLE maximises the log-likelihood: nearby means do no better.
  mle = fam.mle(counts, stats)
  loglik = lambda m: fam.log_density(x, m).sum(0)
  for h in (1e-3, -1e-3):
    assert np.all(loglik(mle) >= loglik(jnp.clip(mle * (1 + h), fam.lo, fam.hi)) - 1e-9)
  # An arm never sampled gets the lower end of Theta, never NaN.
  zero = fam.mean(jnp.zeros(1, int), jnp.zeros((1, fam.stat_dim)))
  np.testing.assert_array_equal(zero, [fam.lo])


@pytest.mark.parametrize("name", NAMES)
def test_posterior_sample_concentrates_on_the_mean(name):
  # After n rewards the posterior standard deviation is about sqrt(V(m) / n);
  # 4,000 draws locate the posterior mean to 5 posterior sd / sqrt(4000) and
  # its sd to 10%.
  fam = FAMILIES[name]
  m = jnp.array(INTERIOR[name][2])
  sds = []
  for n in (100, 10_000):
    x = fam.sample(jax.random.PRNGKey(n), jnp.full(n, m))
    stats = fam.stat(x).sum(0)
    draws = fam.posterior_sample(jax.random.PRNGKey(7), jnp.full(4000, n),
                                 jnp.broadcast_to(stats, (4000, fam.stat_dim)))
    assert np.all((draws >= fam.lo) & (draws <= fam.hi))
    center = float(stats[0]) / n
    sd = float(jnp.sqrt(1 / fam.fisher(m) / n))
    assert abs(float(draws.mean()) - center) < 0.05 * sd + 5 * sd / np.sqrt(4000) + 1.5 / n
    assert abs(float(draws.std()) / sd - 1) < 0.1 + 3 / np.sqrt(n)
    sds.append(float(draws.std()))
  assert sds[1] < sds[0] / 5


@pytest.mark.parametrize("name", NAMES)
def test_check_means_accepts_valid_instances(name):
  fam = FAMILIES[name]
  row = INTERIOR[name][:3]
  out = families.check_means(fam, row)
  np.testing.assert_array_equal(out, row)
  assert families.check_means(fam, [row, row[::-1]]).shape == (2, 3)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", ["one_arm", "tie", "nan", "below", "above", "rank3"])
def test_check_means_rejects_bad_instances(name, case):
  fam = FAMILIES[name]
  a, b, c = INTERIOR[name][1:4]
  lo, hi = fam.lo, fam.hi
  bad, needle = {
      "one_arm": ([a], "two arms"),
      "tie": ([c, a, c], repr(float(c))),
      "nan": ([a, float("nan")], "NaN"),
      "below": ([a, lo - 1.0], repr(lo - 1.0)),
      "above": ([a, hi + 1.0], repr(hi + 1.0)),
      "rank3": (np.ones((2, 2, 2)) * a, "shape"),
  }[case]
  with pytest.raises(ValueError) as err:
    families.check_means(fam, bad)
  assert needle in str(err.value)


def test_check_means_names_the_bad_row_of_a_batch():
  fam = families.bernoulli()
  with pytest.raises(ValueError, match="tie"):
    families.check_means(fam, [[0.5, 0.2], [0.3, 0.3]])


def test_get_builds_families_by_name_and_rejects_unknown_names():
  assert families.get("poisson", hi=50.0).hi == 50.0
  assert families.get("gaussian", sigma=3.0) == families.gaussian(sigma=3.0)
  with pytest.raises(ValueError, match="'cauchy'"):
    families.get("cauchy")


@pytest.mark.parametrize("make, kwargs", [
    (families.gaussian, {"sigma": 0.0}),
    (families.gaussian, {"lo": 1.0, "hi": 0.0}),
    (families.bernoulli, {"lo": -0.1}),
    (families.poisson, {"lo": -1.0}),
    (families.exponential, {"lo": 0.0}),
])
def test_family_constructors_reject_bad_parameters(make, kwargs):
  with pytest.raises(ValueError):
    make(**kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_families_are_hashable_and_work_as_static_jit_arguments(name):
  fam = FAMILIES[name]
  f = jax.jit(lambda family, p, q: family.kl(p, q), static_argnums=0)
  m = jnp.array(INTERIOR[name][:2])
  np.testing.assert_allclose(f(fam, m, m[::-1]), fam.kl(m, m[::-1]))
  rebuilt = families.get(name, **dict(fam.params))
  assert rebuilt == fam and hash(rebuilt) == hash(fam)
