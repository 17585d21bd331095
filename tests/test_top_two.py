"""Tests of the posterior laws (jbai.random.posteriors) and of TTTS's exact challenger.

Statistical tests state their level: chi-square tests reject at p < 1e-3
(homogeneity of two samples, or goodness of fit to an exact law); each fails
by chance once in 1,000 runs, and the keys are fixed.
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jbai
from jbai.random import posteriors
from jbai.state import arm_stats

ttts_module = importlib.import_module("jbai.rules.ttts")
ALPHA = 1e-3


def make_stats(family, counts, means):
  """ArmStats whose sample means are exactly `means` (sum of rewards = n * mean)."""
  counts = jnp.asarray(counts, jnp.int32)
  means = jnp.asarray(means, float)
  return arm_stats(family, counts, (counts * means)[:, None], jnp.sum(counts))


# ------------------------------------------------------------------ the laws

LAWS = {
    "normal": posteriors.NormalLaw(mean=jnp.asarray([0.3, -1.0, 2.0]),
                                   var=jnp.asarray([0.5, 1e-4, 2.0])),
    "beta": posteriors.BetaLaw(a=jnp.asarray([1.0, 3.0, 51.0, 1e4 + 1, 1.0]),
                               b=jnp.asarray([2.0, 5.0, 201.0, 3e4 + 1, 1e3])),
    "gamma": posteriors.GammaLaw(shape=jnp.asarray([1.0, 30.0, 1e4 + 1, 2.0]),
                                 rate=jnp.asarray([2.0, 5.0, 1e4, 0.01]),
                                 sign=jnp.asarray([1.0, -1.0, 1.0, -1.0])),
}


def law_grid(law, points=20001):
  """[K, points] grid of z covering each arm's density (mode +- 40 / sqrt(kappa)),
  cut to the support."""
  centre, width = np.asarray(law.z(law.centre())), 40 / np.sqrt(np.asarray(law.curvature()))
  grid = centre[:, None] + width[:, None] * np.linspace(-1, 1, points)[None, :]
  if isinstance(law, posteriors.BetaLaw):
    grid = np.clip(grid, 1e-12, np.pi / 2 - 1e-12)
  if isinstance(law, posteriors.GammaLaw):
    sign = np.asarray(law.sign)[:, None]
    grid = sign * np.clip(sign * grid, 1e-12, None)
  return grid


def log_density(law, z):
  """The log-density of z (comparison scale), through the law's rank scale."""
  one = jax.tree.map(lambda x: x[:, None], law)
  return np.asarray(one.log_norm() + one.log_kernel(one.rank(jnp.asarray(z))))


@pytest.mark.parametrize("name", list(LAWS))
def test_law_density_is_normalised_and_matches_scipy(name):
  law = LAWS[name]
  z = law_grid(law)
  dens = np.exp(log_density(law, z))
  np.testing.assert_allclose(np.trapezoid(dens, z, axis=1), 1.0, atol=1e-5)
  if name == "normal":
    ref = stats.norm.logpdf(z, np.asarray(law.mean)[:, None], np.sqrt(np.asarray(law.var))[:, None])
  elif name == "beta":  # p = sin(z)^2, dp/dz = 2 sin z cos z
    a, b = np.asarray(law.a)[:, None], np.asarray(law.b)[:, None]
    ref = stats.beta.logpdf(np.sin(z) ** 2, a, b) + np.log(2 * np.sin(z) * np.cos(z))
  else:  # rho = y^3, y = sign z
    shape, rate = np.asarray(law.shape)[:, None], np.asarray(law.rate)[:, None]
    y = np.abs(z)
    ref = stats.gamma.logpdf(y**3, shape, scale=1 / rate) + np.log(3 * y**2)
  inside = np.isfinite(ref) & (ref > -600)
  np.testing.assert_allclose(log_density(law, z)[inside], ref[inside], atol=1e-7, rtol=1e-9)


@pytest.mark.parametrize("name", list(LAWS))
def test_curvature_bound_and_pair_centre(name):
  """-l'' >= kappa on the grid (autodiff of the log-kernel in z), l' is the
  gradient, rank and z are inverse maps, the centre is the mode (the Beta and
  Gamma ones) and pair_centre maximises the sum of two log-densities."""
  law = LAWS[name]
  num = law.curvature().shape[0]
  for i in range(num):
    one = jax.tree.map(lambda x, i=i: x[i], law)
    kernel = lambda z, one=one: one.log_kernel(one.rank(z))  # noqa: E731
    z = jnp.asarray(law_grid(law, 401)[i])
    np.testing.assert_allclose(one.z(one.rank(z)), z, rtol=1e-12, atol=1e-15)
    second = jax.vmap(jax.grad(jax.grad(kernel)))(z)
    finite = jnp.isfinite(second)
    assert bool(jnp.all(-second[finite] >= float(one.curvature()) * (1 - 1e-9)))
    np.testing.assert_allclose(jax.vmap(jax.grad(kernel))(z), one.grad(one.rank(z)), rtol=1e-9,
                               atol=1e-6)
    assert abs(float(one.grad(one.centre()))) < 1e-6 * float(one.curvature()) ** 0.5 + 1e-8
  for i in range(num):
    for j in range(num):
      if i == j:
        continue
      li = jax.tree.map(lambda x, i=i: x[i], law)
      lj = jax.tree.map(lambda x, j=j: x[j], law)
      if name == "gamma" and float(li.sign) != float(lj.sign):
        continue  # the laws of one family share a sign
      meet = li.pair_centre(lj)
      slope = float(li.grad(meet) + lj.grad(meet))
      assert abs(slope) < 1e-6 * float(li.curvature() + lj.curvature()) ** 0.5


def test_law_samples_follow_the_posterior():
  """BetaLaw and GammaLaw draws (rank scale), mapped back to p and rho: KS
  against SciPy; the Beta's odds are those of samplers.beta's draws."""
  n = 20_000
  beta = posteriors.BetaLaw(a=jnp.asarray([31.0]), b=jnp.asarray([71.0]))
  odds = np.asarray(jax.jit(lambda k: beta.sample(k, (n,)))(jax.random.key(0))[:, 0])
  assert stats.kstest(odds / (1 + odds), stats.beta(31, 71).cdf).pvalue > ALPHA
  p = jbai.random.samplers.beta(jax.random.key(0), jnp.full((n, 1), 31.0), jnp.full((n, 1), 71.0),
                         at_least_one=True)
  np.testing.assert_allclose(odds, np.asarray(p[:, 0] / (1 - p[:, 0])), rtol=1e-6)
  gam = posteriors.GammaLaw(shape=jnp.asarray([12.0]), rate=jnp.asarray([3.0]),
                            sign=jnp.asarray([-1.0]))
  r = np.asarray(jax.jit(lambda k: gam.sample(k, (n,)))(jax.random.key(1))[:, 0])
  assert np.all(r < 0)
  assert stats.kstest(-r, stats.gamma(12, scale=1 / 3).cdf).pvalue > ALPHA


def test_rank_is_nan_outside_the_support():
  """A proposal outside the support (z <= 0 or z >= pi/2 for the Beta, the wrong
  sign for the Gamma) maps to NaN, which every comparison rejects."""
  beta = posteriors.BetaLaw(a=jnp.asarray(3.0), b=jnp.asarray(5.0))
  assert np.all(np.isnan(np.asarray(beta.rank(jnp.asarray([-0.1, 0.0, np.pi / 2, 2.0])))))
  gam = posteriors.GammaLaw(shape=jnp.asarray(3.0), rate=jnp.asarray(2.0), sign=jnp.asarray(-1.0))
  assert np.all(np.isnan(np.asarray(gam.rank(jnp.asarray([0.0, 0.5])))))
  assert float(beta.log_kernel(beta.rank(jnp.asarray(0.5)))) > -np.inf


# ------------------------------------------------------ the exact challenger

def challengers(family, stats_, lead, n, seed=0):
  fn = jax.jit(jax.vmap(
      lambda k, s: ttts_module.exact_challenger(k, family.posterior_sample.law(s.counts, s.stats),
                                                jnp.int32(lead), jnp.asarray(True)),
      in_axes=(0, None)))
  return np.asarray(fn(jax.random.split(jax.random.key(seed), n), stats_))


def rejection_reference(family, stats_, lead, n_draws, seed=1, chunk=500_000):
  """Challengers by plain rejection: argmax of posterior draws whose argmax is not L."""
  draw = jax.jit(jax.vmap(
      lambda k, s: jnp.argmax(family.posterior_sample(k, s.counts, s.stats)), in_axes=(0, None)))
  hits = []
  for i in range(0, n_draws, chunk):
    j = np.asarray(draw(jax.random.split(jax.random.key(seed + i), chunk), stats_))
    hits.append(j[j != lead])
  return np.concatenate(hits)


def homogeneity_pvalue(a, b, num_arms):
  table = np.stack([np.bincount(a, minlength=num_arms), np.bincount(b, minlength=num_arms)])
  table = table[:, table.sum(0) > 0]
  if table.shape[1] < 2:
    return 1.0
  return stats.chi2_contingency(table).pvalue


CASES = {
    # name: (family, counts, means, plain-rejection draws); P(U) in the comment
    "gaussian-wide": (jbai.families.gaussian(), [5, 5, 5, 5], [1.0, 0.6, 0.5, 0.0], 200_000),  # 0.38
    "gaussian-1e-3": (jbai.families.gaussian(), [120, 60, 60, 40], [1.0, 0.6, 0.55, 0.0],
                      4_000_000),  # 1.3e-3
    "bernoulli-wide": (jbai.families.bernoulli(), [10, 10, 10, 10], [0.8, 0.6, 0.5, 0.3],
                       100_000),  # 0.23
    "bernoulli-1e-3": (jbai.families.bernoulli(), [120, 80, 60, 40], [0.8, 0.6, 0.6, 0.4],
                       4_000_000),  # 1e-3
    "poisson": (jbai.families.poisson(), [20, 20, 20], [3.0, 2.2, 1.5], 1_000_000),  # 0.04
    "exponential": (jbai.families.exponential(), [30, 20, 20], [3.0, 2.0, 1.5], 500_000),  # 0.08
}
SLOW_CASES = {"bernoulli-1e-3", "poisson", "exponential"}  # 12-25 s each


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.slow) if c in SLOW_CASES else c for c in CASES])
def test_exact_challenger_law_against_rejection(case):
  """The exact challenger and plain rejection (the definition of TTTS's
  challenger) have the same law: chi-square homogeneity test on 20,000
  challengers against the rejection hits (a few thousand or more)."""
  family, counts, means, n_draws = CASES[case]
  s = make_stats(family, counts, means)
  exact = challengers(family, s, 0, 20_000)
  reference = rejection_reference(family, s, 0, n_draws)
  assert len(reference) > 2_000
  assert np.all(exact != 0) and np.all((exact >= 0) & (exact < len(counts)))
  assert homogeneity_pvalue(exact, reference, len(counts)) > ALPHA


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_concentrated_gaussian_challenger_has_the_exact_law(dtype):
  """Counts 1e6: P(U) = 1e-123, far below any rejection sampler's reach. Given U,
  J = k has probability c_k / sum c with c_k = Phi((m_k - m_L) / sd_k) up to
  the overlaps P(A_j and A_k), here below 1e-20 of each c_k: goodness of fit of
  5,000 challengers (float64 and the engine's float32)."""
  family = jbai.families.gaussian()
  means = [1.0, 0.9665, 0.96645, 0.9664]
  with jax.enable_x64(dtype == jnp.float64):
    s = make_stats(family, [10**6] * 4, means)
    s = jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, s)
    arms = challengers(family, s, 0, 5_000)
  gaps = (np.asarray(means[1:]) - means[0]) / np.sqrt(2e-6)
  log_c = stats.norm.logcdf(gaps)
  assert -300 < log_c.max() < -200
  p = np.exp(log_c - log_c.max())
  p /= p.sum()
  observed = np.bincount(arms, minlength=4)[1:]
  assert observed.sum() == 5_000
  keep = p * 5_000 > 5
  expected = p[keep] * observed[keep].sum() / p[keep].sum()
  assert stats.chisquare(observed[keep], expected).pvalue > ALPHA
  assert observed[~keep].sum() <= 5


def test_concentrated_bernoulli_challenger_is_the_likeliest_competitor():
  """Counts 1e5 and P(U) about 1e-40: every challenger is finite and not L, and the
  most frequent is the TC challenger argmin_j W_t(L, j), the large-deviation mode
  of the challenger's law."""
  family = jbai.families.bernoulli()
  s = make_stats(family, [10**5] * 4, [0.6, 0.57, 0.56, 0.3])
  arms = challengers(family, s, 0, 2_000)
  assert np.all((arms >= 1) & (arms <= 3))
  costs = np.asarray(jbai.rules.top_two.transport_costs(family, s, jnp.asarray(0)))
  assert np.argmax(np.bincount(arms, minlength=4)) == np.argmin(costs)


@pytest.mark.parametrize("case", ["gaussian-1e-3", "bernoulli-1e-3"])
def test_union_sampler_acceptance(case):
  """Late in a trial the union sampler accepts most proposals (the loop is rare):
  above 0.8 in these states, where P(U) is about 1e-3."""
  family, counts, means, _ = CASES[case]
  s = make_stats(family, counts, means)
  law = family.posterior_sample.law(s.counts, s.stats)
  lead = jnp.int32(0)
  env = ttts_module.envelopes(law, lead)
  assert float(jnp.sum(jnp.exp(env.log_mass))) < 1  # the union sampler is the one used

  def accepted(k):
    z = law.sample(jax.random.fold_in(k, 0))
    return ttts_module.union_proposal(k, z, lead, env, law)[1]

  rate = float(jnp.mean(jax.jit(jax.vmap(accepted))(jax.random.split(jax.random.key(2), 4000))))
  assert rate > 0.8


def test_inactive_lanes_return_at_once():
  """A lane that does not pull its challenger (active False) runs no loop, even in
  the middle of a trial's initialisation (counts 0, NaN parameters)."""
  family = jbai.families.bernoulli()
  s = make_stats(family, [0, 3, 0], [0.0, 0.5, 0.0])
  law = family.posterior_sample.law(s.counts, s.stats)
  arm = jax.jit(lambda k: ttts_module.exact_challenger(k, law, jnp.int32(1),
                                                       jnp.asarray(False)))(jax.random.key(0))
  assert 0 <= int(arm) < 3


def test_ttts_without_a_law_uses_the_capped_resampling():
  """A family whose posterior_sample is a plain function still runs TTTS."""
  family = jbai.families.gaussian()
  plain = family._replace(posterior_sample=family.posterior_sample.sample)
  s = make_stats(plain, [5, 5, 5], [1.0, 0.5, 0.0])
  rule = jbai.rules.ttts()
  arms = jax.jit(jax.vmap(lambda k: rule.select(k, plain, s, rule.init(3))[0]))(
      jax.random.split(jax.random.key(0), 200))
  assert set(np.asarray(arms)) <= {0, 1, 2} and len(set(np.asarray(arms))) > 1


@pytest.mark.parametrize("family", ["gaussian", "bernoulli"])
def test_ttts_runs_and_repeats(family):
  """TTTS in jbai.simulate (float32, as the engine runs): no trial at the cap, and
  the same key gives the same stopping times."""
  means = [1.0, 0.5, 0.0] if family == "gaussian" else [0.8, 0.5, 0.2]
  with jax.enable_x64(False):
    run = lambda: jbai.simulate(jax.random.key(3), family, means, "ttts", 0.05, 24,  # noqa: E731
                                lanes=8, max_steps=20_000)
    first, second = run(), run()
  assert not first.hit_cap.any()
  np.testing.assert_array_equal(first.tau, second.tau)
