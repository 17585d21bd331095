"""General (non-exponential) families: Weibull with known shape, logcosh, and the
`general_family` constructor (paper, Section 2, Assumptions 1-8)."""

import importlib
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, optimize, stats

import jbai
from jbai import transport
from jbai.families import general, grid_mle, newton, quadrature

from helpers import assert_delta_correct

lc = importlib.import_module("jbai.families.logcosh")


def _lc_np(z):
  a = np.abs(z)
  return a + np.log1p(np.exp(-2 * a)) - math.log(2)


def _lc_density_np(z):
  return np.exp(-0.5 * z * z - _lc_np(z) - lc.LOG_Z)


def _kl_logcosh_quad(d):
  """KL(d, 0) of the logcosh family by adaptive quadrature (E[Z] d = 0 dropped)."""
  f = lambda z: _lc_density_np(z) * (_lc_np(z + d) - _lc_np(z))  # noqa: E731
  pts = sorted({-d, 0.0}) if abs(d) < 40 else [0.0]
  return 0.5 * d * d + integrate.quad(f, -40, 40, points=pts, epsabs=1e-15,
                                      epsrel=1e-13, limit=500)[0]


def _weibull_kl_np(k):
  return lambda m, m2: (m / m2) ** k - 1 - k * np.log(m / m2)


def _allocation(family, means):
  """w(nu), Gamma(nu) from the oracle (optimal_allocation when available)."""
  means = jnp.asarray(means, jnp.float64)
  if hasattr(jbai.oracle, "optimal_allocation"):
    w, gam, _ = jbai.oracle.optimal_allocation(family, means, method="exact")
  else:
    w, gam = jax.jit(jbai.oracle.exact_solve, static_argnums=0)(family, means)
  return np.asarray(w), float(gam)


# --------------------------------------------------------------------------
# Regression: exponential families.


@pytest.mark.parametrize("name,means", [
    ("gaussian", (1.3, -0.4)), ("bernoulli", (0.8, 0.35)),
    ("poisson", (3.0, 1.2)), ("exponential", (2.0, 0.7))])
def test_exponential_families_golden_matches_closed(name, means):
  fam = jbai.families.get(name)
  rng = np.random.default_rng(0)
  w_a, w_b = rng.uniform(0.01, 1.0, (2, 50))
  m_a = np.full(50, means[0])
  m_b = np.full(50, means[1])
  cost = jax.jit(lambda *a: (transport.transport_cost(fam, *a, method="closed"),
                             transport.transport_cost(fam, *a, method="golden")))
  closed, golden = cost(w_a, m_a, w_b, m_b)
  np.testing.assert_allclose(golden.value, closed.value, rtol=1e-10, atol=1e-14)
  np.testing.assert_allclose(golden.x, closed.x, atol=1e-6)


def test_exponential_family_oracle_with_golden_transport():
  fam = jbai.families.gaussian()
  w, gam = _allocation(fam, [1.2, 1.0, 1.0])
  # Two equal challengers: w_a = sqrt(2) w_i, Gamma = w_a w_i / (w_a + w_i) * 0.2^2 / 2.
  w_i = 1 / (2 + math.sqrt(2))
  np.testing.assert_allclose(w, [math.sqrt(2) * w_i, w_i, w_i], atol=1e-9)
  np.testing.assert_allclose(gam, 0.02 * math.sqrt(2) * w_i / (1 + math.sqrt(2)),
                             rtol=1e-9)
  golden = fam._replace(name="gaussian-golden", transport_x=None)
  for means in ([1.2, 1.0, 1.0], [1.0, 0.7, 0.2, -0.5]):
    w_c, g_c = _allocation(fam, means)
    w_g, g_g = _allocation(golden, means)
    np.testing.assert_allclose(w_g, w_c, atol=1e-7)
    np.testing.assert_allclose(g_g, g_c, rtol=1e-9)


# --------------------------------------------------------------------------
# Weibull with known shape.


@pytest.mark.parametrize("k", [0.7, 2.0, 3.5])
def test_weibull_closed_forms(k):
  fam = jbai.families.weibull(shape=k, lo=0.05, hi=20.0)
  c = math.gamma(1 + 1 / k)
  m = np.array([0.3, 1.0, 4.0])
  # log_density is scipy's Weibull with scale m / c, whose mean is m.
  x = np.geomspace(1e-3, 30.0, 50)[:, None]
  np.testing.assert_allclose(fam.log_density(x, m),
                             stats.weibull_min.logpdf(x, k, scale=m / c), rtol=1e-12)
  np.testing.assert_allclose(stats.weibull_min.mean(k, scale=m / c), m, rtol=1e-12)
  # Closed-form KL and Fisher information against Gauss-Legendre quadrature on
  # [0, 12 lam] (for k >= 1 the density is smooth there and e^{-12^k} is outside).
  if k >= 1:
    quad = quadrature.gauss_legendre(
        fam.log_density, lambda mm: (jnp.zeros_like(mm), 12.0 * mm / c), n=128)
    m1, m2 = np.meshgrid(m, m)
    np.testing.assert_allclose(quadrature.quadrature_kl(fam.log_density, quad)(m1, m2),
                               fam.kl(m1, m2), atol=1e-10)
    np.testing.assert_allclose(quadrature.quadrature_fisher(fam.log_density, quad)(m),
                               k * k / m ** 2, rtol=1e-9)
  np.testing.assert_allclose(quadrature.kl_fisher(fam.kl)(m), fam.fisher(m), rtol=1e-10)
  # Closed-form transport minimiser against golden section.
  rng = np.random.default_rng(1)
  w_a, w_b = rng.uniform(0.01, 1.0, (2, 40))
  m_a, m_b = rng.uniform(0.05, 20.0, (2, 40))
  cost = jax.jit(lambda *a: (transport.transport_cost(fam, *a, method="closed"),
                             transport.transport_cost(fam, *a, method="golden")))
  closed, golden = cost(w_a, m_a, w_b, m_b)
  np.testing.assert_allclose(golden.value, closed.value, rtol=1e-9, atol=1e-14)


def test_weibull_mle_against_numerical_maximisation():
  k, lo, hi = 2.0, 0.25, 4.0
  fam = jbai.families.weibull(shape=k, lo=lo, hi=hi)
  rng = np.random.default_rng(2)
  mle = jax.jit(lambda n, x: fam.mle(n, jnp.sum(fam.stat(x), axis=0)))
  worst = 0.0
  for n in (1, 3, 10, 100, 1000):
    for m0 in (0.2, 0.5, 1.7, 3.9, 5.0):
      x = (m0 / math.gamma(1 + 1 / k)) * rng.weibull(k, n)
      nll = lambda m: -np.sum(  # noqa: E731
          stats.weibull_min.logpdf(x, k, scale=m / math.gamma(1 + 1 / k)))
      ref = optimize.minimize_scalar(nll, bounds=(lo, hi), method="bounded",
                                     options={"xatol": 1e-10}).x
      got = float(mle(n, jnp.asarray(x)))
      worst = max(worst, abs(got - ref))
  assert worst < 1e-6


def test_weibull_sampler_moments():
  k, m = 2.0, 1.5
  fam = jbai.families.weibull(shape=k)
  x = np.asarray(fam.sample(jax.random.key(3), jnp.full(200_000, m)))
  lam = m / math.gamma(1 + 1 / k)
  sd = math.sqrt(lam ** 2 * math.gamma(1 + 2 / k) - m ** 2)
  assert abs(x.mean() - m) < 5 * sd / math.sqrt(x.size)
  # E[X^k] = lam^k with Var[X^k] = lam^(2k).
  assert abs(np.mean(x ** k) - lam ** k) < 5 * lam ** k / math.sqrt(x.size)
  assert stats.kstest(x, "weibull_min", args=(k, 0, lam)).pvalue > 1e-3


def test_weibull_assumption_7_fails_and_paper_threshold():
  k = 2.0
  fam = jbai.families.weibull(shape=k, lo=0.25, hi=4.0)
  d2_dm2 = jax.jit(lambda x, m: quadrature.d2_dm2(fam.log_density, x, m))
  d2 = d2_dm2(jnp.asarray([1e-3, 0.1]), jnp.asarray([1.0, 4.0]))
  assert np.all(np.asarray(d2) > 0)   # -d2/dm2 log pi < 0: not even concave there
  assert fam.curvature is None
  with pytest.raises(ValueError, match="paper"):
    jbai.thresholds.check(jbai.thresholds.paper(), fam)
  opted = jbai.families.weibull(shape=k, lo=0.25, hi=4.0, curvature=k * k / 16)
  jbai.thresholds.check(jbai.thresholds.paper(), opted)
  assert opted != fam   # distinct compilation-cache entries
  # Observed information at an interior MLE is T k^2 / m_hat^2 >= T sigma^2.
  x = np.asarray(fam.sample(jax.random.key(4), jnp.full(50, 1.3)))

  @jax.jit
  def information(x):
    m_hat = fam.mle(50, jnp.sum(fam.stat(x), 0))
    return m_hat, -jnp.sum(d2_dm2(x, jnp.full(50, m_hat)))

  m_hat, observed = map(float, information(jnp.asarray(x)))
  assert observed == pytest.approx(50 * k * k / m_hat ** 2, rel=1e-9)
  assert observed >= 50 * opted.curvature


# --------------------------------------------------------------------------
# logcosh.


def test_logcosh_density_kl_fisher():
  fam = jbai.families.logcosh()
  mass = integrate.quad(_lc_density_np, -40, 40, points=[0.0], epsabs=1e-14)[0]
  second = integrate.quad(lambda z: z * z * _lc_density_np(z), -40, 40, points=[0.0])[0]
  ds = np.array([1e-3, 0.05, 0.3, 1.0, 2.5, 6.0, 9.9])
  log_density, kl, kl_flipped, kl_same, fisher = jax.jit(lambda ds, flipped: (
      fam.log_density(0.7, 0.2), fam.kl(ds, 0.0), fam.kl(flipped, 1.0), fam.kl(0.4, 0.4),
      fam.fisher(0.3)))(ds, 1.0 - ds)
  assert mass == pytest.approx(1.0, abs=1e-12)
  np.testing.assert_allclose(float(log_density), math.log(_lc_density_np(0.5)), rtol=1e-13)
  assert second == pytest.approx(0.5918341149305851, rel=1e-9)
  ref = np.array([_kl_logcosh_quad(d) for d in ds])
  # Table error: <= 1e-11 absolute, relative 1e-9 away from m = m2 (2e-6 at d = 1e-3).
  np.testing.assert_allclose(kl, ref, rtol=1e-9, atol=1e-11)
  np.testing.assert_allclose(kl_flipped, ref, rtol=1e-9, atol=1e-11)  # symmetric
  assert float(kl_same) == 0.0
  fisher_ref = integrate.quad(lambda z: _lc_density_np(z) * (1 + np.cosh(z) ** -2),
                              -40, 40, points=[0.0], epsabs=1e-14)[0]
  assert float(fisher) == pytest.approx(fisher_ref, rel=1e-12)
  assert float(jax.jit(quadrature.kl_fisher(fam.kl))(0.3)) == pytest.approx(fisher_ref,
                                                                       rel=1e-5)
  # Assumption 7: -d2/dm2 log pi = 1 + sech^2(x - m) >= 1.
  x, m = np.meshgrid(np.linspace(-30, 30, 301), np.linspace(-5, 5, 41))
  d2 = -np.asarray(jax.jit(lambda x, m: quadrature.d2_dm2(fam.log_density, x, m))(x, m))
  np.testing.assert_allclose(d2, 1 + np.cosh(x - m) ** -2, rtol=1e-12)
  assert fam.curvature == 1.0 and d2.min() >= 1.0


def test_logcosh_sampler_exact_and_flag():
  m = 0.7
  x, exhausted = lc.sample_with_flag(jax.random.key(5), jnp.full(100_000, m))
  assert not bool(jnp.any(exhausted))
  grid = np.linspace(-12, 12, 4801)
  pdf = _lc_density_np(grid)
  cdf = np.concatenate([[0.0], np.cumsum(0.5 * (pdf[1:] + pdf[:-1]) * np.diff(grid))])
  z = np.asarray(x) - m
  assert stats.kstest(z, lambda t: np.interp(t, grid, cdf)).pvalue > 1e-3
  # One proposal: the flag is raised with probability 1 - acceptance = 0.2587.
  _, flag = lc.sample_with_flag(jax.random.key(6), jnp.zeros(100_000), tries=1)
  rate, sd = float(jnp.mean(flag)), math.sqrt(0.2587 * 0.7413 / 100_000)
  assert abs(rate - (1 - lc.ACCEPTANCE)) < 5 * sd


def _score_root(x, lo, hi):
  """MLE of the logcosh location over [lo, hi] from the root of the score."""
  score = lambda m: np.sum((x - m) + np.tanh(x - m))  # noqa: E731
  if score(lo) <= 0:
    return lo
  if score(hi) >= 0:
    return hi
  return optimize.brentq(score, lo, hi, xtol=1e-15, rtol=1e-15)


def test_grid_mle_accuracy():
  lo, hi = -5.0, 5.0
  fam = jbai.families.logcosh(lo, hi)
  mle = jax.jit(fam.mle)
  summed = jax.jit(lambda x: jnp.sum(fam.stat(x), axis=0))
  rng = np.random.default_rng(7)
  worst, worst_mean_gap = 0.0, 0.0
  for n in (1, 2, 5, 30, 300, 3000, 10000):
    for _ in range(8):
      m0 = rng.uniform(-5.5, 5.5)   # some data sets have their MLE clipped
      x = m0 + 0.77 * rng.standard_normal(n)
      got = float(mle(n, summed(jnp.asarray(x))))
      worst = max(worst, abs(got - _score_root(x, lo, hi)))
      worst_mean_gap = max(worst_mean_gap, abs(got - np.clip(x.mean(), lo, hi)))
  assert worst < 1e-6
  assert worst_mean_gap > 1e-3   # the MLE is not the sample mean
  assert float(mle(0, jnp.zeros(fam.stat_dim))) == lo


# --------------------------------------------------------------------------
# The oracle on the new families against an independent search.


def _golden_np(f, a, b, iters=90):
  inv = (math.sqrt(5) - 1) / 2
  c, d = b - inv * (b - a), a + inv * (b - a)
  fc, fd = f(c), f(d)
  for _ in range(iters):
    left = fc <= fd
    a, b = np.where(left, a, c), np.where(left, d, b)
    c_new = np.where(left, b - inv * (b - a), d)
    d_new = np.where(left, c, a + inv * (b - a))
    f_new = f(np.where(left, c_new, d_new))
    fc, fd = np.where(left, f_new, fd), np.where(left, fc, f_new)
    c, d = c_new, d_new
  return 0.5 * (a + b)


def _ridge_search(kl, means):
  """w(nu), Gamma(nu) for K = 3 by a dense search over the best arm's weight.

  For a fixed w_a, max over the split of the rest between arms i and j of
  min(C_i(w_i), C_j(w_j)) is where C_i = C_j (C_i increases in w_i), found by
  bisection; the best w_a comes from a dense grid over (0, 1) refined twice
  around its maximum (steps 1e-3, 1e-5, 1e-7). Every transport cost is a
  golden-section minimisation in numpy.
  """
  means = np.asarray(means, float)
  a = int(np.argmax(means))
  i, j = [b for b in range(3) if b != a]

  def cost(w_a, w_b, m_b):
    f = lambda x: w_a * kl(means[a], x) + w_b * kl(m_b, x)  # noqa: E731
    x = _golden_np(f, np.full_like(w_a, m_b), np.full_like(w_a, means[a]))
    return f(x)

  def best_split(w_a):
    lo, hi = np.zeros_like(w_a), np.ones_like(w_a)
    for _ in range(60):
      s = 0.5 * (lo + hi)
      below = cost(w_a, s * (1 - w_a), means[i]) < cost(w_a, (1 - s) * (1 - w_a), means[j])
      lo, hi = np.where(below, s, lo), np.where(below, hi, s)
    s = 0.5 * (lo + hi)
    return s, cost(w_a, s * (1 - w_a), means[i])

  grid = np.linspace(1e-3, 1 - 1e-3, 999)
  for step in (1e-5, 1e-7):
    _, value = best_split(grid)
    centre = grid[np.argmax(value)]
    grid = np.clip(centre + step * np.arange(-200, 201), 1e-9, 1 - 1e-9)
  s, value = best_split(grid)
  b = int(np.argmax(value))
  w = np.zeros(3)
  w[a], w[i], w[j] = grid[b], s[b] * (1 - grid[b]), (1 - s[b]) * (1 - grid[b])
  return w, float(value[b])


@pytest.fixture(scope="module")
def logcosh_kl_np():
  """logcosh KL from adaptive quadrature on d in [0, 3], cubic spline (independent
  of the family's Gauss-Hermite table)."""
  from scipy.interpolate import CubicSpline
  d = np.linspace(0.0, 3.0, 301)
  spline = CubicSpline(d, [_kl_logcosh_quad(v) for v in d])
  return lambda m, m2: spline(np.abs(np.asarray(m) - np.asarray(m2)))


@pytest.mark.parametrize("case", ["weibull-2", "weibull-0.7", "logcosh"])
def test_oracle_against_independent_search(case, logcosh_kl_np):
  if case == "logcosh":
    fam, means, kl = jbai.families.logcosh(-1.0, 2.0), [1.0, 0.4, 0.0], logcosh_kl_np
  else:
    k = float(case.split("-")[1])
    fam, means = jbai.families.weibull(shape=k, lo=0.1, hi=5.0), [2.0, 1.5, 1.0]
    kl = _weibull_kl_np(k)
  w, gam = _allocation(fam, means)
  w_ref, gam_ref = _ridge_search(kl, means)
  np.testing.assert_allclose(w, w_ref, atol=1e-5)   # measured: 4e-8
  assert gam == pytest.approx(gam_ref, rel=1e-8)
  # Gamma(nu, w) of jbai at the reference allocation is the same value.
  assert float(jbai.gamma(fam, jnp.asarray(means), jnp.asarray(w_ref))) == pytest.approx(
      gam_ref, rel=1e-6)


# --------------------------------------------------------------------------
# Sample means in the rules, MLEs in the stopping statistic.


def test_rules_use_sample_means_and_stopping_uses_mles():
  fam = jbai.families.weibull(shape=2.0, lo=0.1, hi=10.0)
  # Arm 0: spread-out rewards; arm 1: concentrated ones. The sample means rank
  # arm 1 first, the MLEs (c sqrt(mean of x^2)) rank arm 0 first.
  rewards = [np.array([0.2, 2.8] * 10), np.array([1.6] * 20), np.array([0.5] * 20)]
  counts = jnp.asarray([len(r) for r in rewards], jnp.int32)

  @jax.jit
  def statistics(counts, rewards):
    summed = jnp.stack([jnp.sum(fam.stat(r), 0) for r in rewards])
    st = jbai.arm_stats(fam, counts, summed, jnp.sum(counts))
    # The leader's MLE raised above the others.
    st2 = jbai.arm_stats(fam, counts, summed.at[1, 1].multiply(1.6), jnp.sum(counts))
    top, ch, glr = jbai.stopping_statistic(fam, st2)
    by_mle = jbai.pair_costs(fam, st2.counts, st2.mle, top)
    by_mean = jbai.pair_costs(fam, st2.counts, st2.mean, top)
    return st, jbai.stopping_statistic(fam, st), (top, glr, jnp.min(by_mle), jnp.min(by_mean))

  st, (top, ch, glr), (top2, glr2, by_mle, by_mean) = statistics(
      counts, [jnp.asarray(r) for r in rewards])
  np.testing.assert_allclose(st.mean, [1.5, 1.6, 0.5])
  c = math.gamma(1.5)
  np.testing.assert_allclose(st.mle, [c * math.sqrt(3.94), 1.6 * c, 0.5 * c], rtol=1e-12)
  assert int(top) == 1                       # the leader comes from the sample means
  assert int(ch) == 0 and float(glr) == 0.0  # the MLEs disagree: no evidence to stop
  # With the leader's MLE above the others, the GLLR uses the MLEs, not the means.
  assert int(top2) == 1 and float(glr2) == pytest.approx(float(by_mle), rel=1e-12)
  assert 0 < float(glr2) and float(by_mean) > 5 * float(glr2)
  # TCB and ITCB select from the sample means: swapping in the MLEs changes the pick.
  for rule in (jbai.rules.tcb(), jbai.rules.itcb()):
    state = rule.init(3)
    select = jax.jit(lambda s, st: rule.select(jax.random.key(s), fam, st, state)[0])
    picks = {int(select(s, st)) for s in range(8)}
    swapped = {int(select(s, st._replace(mean=st.mle))) for s in range(8)}
    assert picks != swapped


# --------------------------------------------------------------------------
# delta-PAC with the paper's threshold.


@pytest.mark.parametrize("case", ["weibull", "logcosh"])
def test_delta_pac_paper_threshold(case):
  """One-sided at 99% over 500 or 2,000 trials (`helpers.assert_delta_correct`), and
  mean tau above T* log(1/delta)."""
  delta = 0.1
  if case == "weibull":  # sigma^2 = k^2 / hi^2 (see jbai.families.weibull)
    fam = jbai.families.weibull(shape=2.0, lo=0.25, hi=4.0, curvature=4.0 / 16)
    means, rule = [2.0, 1.0, 0.5], jbai.rules.tcb()
  else:
    fam = jbai.families.logcosh(-1.0, 2.0)
    means, rule = [1.0, 0.0, -0.5], jbai.rules.itcb()
  res = assert_delta_correct(lambda n: jbai.simulate(jax.random.key(11), fam, means, rule,
                                                     delta, n, threshold="paper",
                                                     max_steps=20_000), delta)
  assert res.summary[0]["mean_tau"] > res.summary[0]["t_star_log"]  # lower bound


# --------------------------------------------------------------------------
# The constructor.


def _normal_log_density(x, m):
  return -0.5 * (x - m) ** 2 - 0.5 * math.log(2 * math.pi)


def _normal_sample(key, means):
  means = jnp.asarray(means) * 1.0
  return means + jax.random.normal(key, means.shape, means.dtype)


def test_general_family_quadrature_and_grid_paths():
  quad = quadrature.gauss_hermite(_normal_log_density, n=16)
  fam = general.general_family(name="normal-quad", lo=-2.0, hi=2.0,
                               log_density=_normal_log_density, sample=_normal_sample,
                               quadrature=quad, curvature=1.0)
  m1, m2 = jnp.asarray([1.0, -0.5, 0.3]), jnp.asarray([0.0, 1.5, 0.3])
  np.testing.assert_allclose(jax.jit(fam.kl)(m1, m2), (m1 - m2) ** 2 / 2, atol=1e-13)
  np.testing.assert_allclose(jax.jit(fam.fisher)(m1), 1.0, rtol=1e-12)
  assert fam.stat_dim == 1 + grid_mle.GRID_SIZE
  # No closed-form transport point given: Newton on the KL, which starts at the
  # weighted mean, the normal one, and stays there.
  w_a, w_b = jnp.asarray([0.3, 2.0, 1e-3]), jnp.asarray([0.7, 0.1, 5.0])
  x = jax.jit(newton.newton_transport(fam.kl))(w_a, m1, w_b, m2 + 0.0)
  np.testing.assert_allclose(x, (w_a * m1 + w_b * m2) / (w_a + w_b), atol=1e-12)
  x = _normal_sample(jax.random.key(8), jnp.full(40, 0.4))
  s = jnp.sum(fam.stat(x), 0)
  # The normal MLE is the sample mean: the grid MLE must find it.
  mle, mean = jax.jit(lambda n, s: (fam.mle(n, s), fam.mean(n, s)))(40, s)
  assert float(mle) == pytest.approx(float(jnp.mean(x)), abs=1e-9)
  assert float(mean) == pytest.approx(float(jnp.mean(x)), abs=1e-12)
  table = general.general_family(name="normal-table", lo=-2.0, hi=2.0,
                                 log_density=_normal_log_density, sample=_normal_sample,
                                 quadrature=quad, location=True)
  np.testing.assert_allclose(jax.jit(table.kl)(m1, m2), (m1 - m2) ** 2 / 2, atol=1e-12)
  # jit and vmap over arms.
  f = jax.jit(jax.vmap(lambda n, st: (fam.mle(n, st), fam.mean(n, st))))
  mle, mean = f(jnp.asarray([40, 0]), jnp.stack([s, jnp.zeros_like(s)]))
  np.testing.assert_allclose(mle, [float(jnp.mean(x)), -2.0], atol=1e-9)


def test_newton_transport_finds_the_minimiser():
  """logcosh (float64): over random weights and means in Theta, the transport
  point is the root of the objective's derivative to 1e-10 of |m_a - m_b| (the
  rounding floor of that derivative), and its cost is never above the one of
  200 golden-section steps by more than rounding."""
  fam = jbai.families.logcosh()
  rng = np.random.default_rng(3)
  m_a, m_b = (jnp.asarray(rng.uniform(-5.0, 5.0, 2000)) for _ in range(2))
  w_a, w_b = (jnp.asarray(rng.uniform(0.0, 1.0, 2000) ** 3) for _ in range(2))

  @jax.jit
  def transport(w_a, m_a, w_b, m_b):
    x = fam.transport_x(w_a, m_a, w_b, m_b)
    objective = lambda q: w_a * fam.kl(m_a, q) + w_b * fam.kl(m_b, q)
    ones = jnp.ones_like(x)
    slope = lambda q: jax.jvp(objective, (q,), (ones,))[1]
    g, h = jax.jvp(slope, (x,), (ones,))  # the objective's first and second derivatives
    golden = jbai.golden_section(objective, jnp.minimum(m_a, m_b), jnp.maximum(m_a, m_b), 200)
    return g, h, objective(x) - objective(golden)

  g, h, excess = map(np.asarray, transport(w_a, m_a, w_b, m_b))
  gap = np.abs(np.asarray(m_a) - np.asarray(m_b))
  assert np.all(h > 0)
  assert np.max(np.abs(g / h) / gap) < 1e-10
  assert np.max(excess) < 1e-13


def test_general_family_rejects_bad_input():
  base = dict(name="n", lo=-1.0, hi=1.0, log_density=_normal_log_density,
              sample=_normal_sample, kl=lambda m, m2: (m - m2) ** 2 / 2)
  with pytest.raises(ValueError, match="kl or a quadrature"):
    general.general_family(**{**base, "kl": None})
  with pytest.raises(ValueError, match="lo < hi"):
    general.general_family(**{**base, "hi": -1.0})
  with pytest.raises(ValueError, match="lo < hi"):
    general.general_family(**{**base, "hi": math.inf})
  with pytest.raises(ValueError, match="curvature"):
    general.general_family(**base, curvature=0.0)
  with pytest.raises(ValueError, match="together"):
    general.general_family(**base, mle=lambda n, s: s[..., 0])
  with pytest.raises(ValueError, match="must be the reward"):
    general.general_family(**base, stat=lambda x: jnp.stack([x * x, x], -1), stat_dim=2,
                           mle=lambda n, s: s[..., 1] / n)
  with pytest.raises(ValueError, match="shape"):
    general.general_family(**base, stat=lambda x: x[..., None], stat_dim=2,
                           mle=lambda n, s: s[..., 0] / n)
  with pytest.raises(ValueError, match="shape"):
    jbai.families.weibull(shape=-1.0)
  with pytest.raises(ValueError, match="Theta"):
    jbai.families.weibull(lo=0.0)
  with pytest.raises(ValueError, match="lo < hi"):
    jbai.families.logcosh(lo=1.0, hi=1.0)


def test_cli_builds_the_new_families(capsys):
  from jbai import cli
  parser = cli.build_parser()
  fam = cli.family_from_args(parser.parse_args(
      ["run", "--family", "logcosh", "--lo", "-2", "--hi", "3"]))
  assert fam == jbai.families.logcosh(-2.0, 3.0)
  fam = cli.family_from_args(parser.parse_args(
      ["oracle", "--family", "weibull", "--shape", "1.5", "--hi", "9"]))
  assert fam == jbai.families.weibull(shape=1.5, hi=9.0)
  assert cli.main(["run", "--family", "logcosh", "--shape", "2"]) == 2
  assert "--shape" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(jbai.oracle, "optimal_allocation"),
                    reason="jbai.oracle.optimal_allocation (used by `jbai oracle`) "
                    "is not there yet")
def test_cli_oracle_weibull(capsys):
  from jbai import cli
  assert cli.main(["oracle", "--family", "weibull", "--shape", "2",
                   "--means", "2,1.5,1", "--json"]) == 0
  out = capsys.readouterr().out
  assert "shape=2.0" in out and '"w": [0.4242' in out


# --------------------------------------------------------------------------
# README, "Your own family".

README_SNIPPET = '''
import jax
import jax.numpy as jnp
from jax.scipy.stats import norm
import jbai
from jbai.families import general, quadrature

ALPHA = 3.0                                     # known skewness
DELTA = ALPHA / (1 + ALPHA ** 2) ** 0.5
SHIFT = DELTA * (2 / jnp.pi) ** 0.5             # mean of the standard skew-normal

def log_density(x, m):                          # skew-normal rewards with mean m
  z = x - m + SHIFT
  return jnp.log(2.0) + norm.logpdf(z) + norm.logcdf(ALPHA * z)

def sample(key, means):                         # exact: DELTA |U0| + sqrt(1 - DELTA^2) U1
  means = jnp.asarray(means) * 1.0
  u0, u1 = jax.random.normal(key, (2,) + means.shape, means.dtype)
  return means - SHIFT + DELTA * jnp.abs(u0) + (1 - DELTA ** 2) ** 0.5 * u1

skew = general.general_family(
    name="skew_normal", lo=-1.0, hi=2.0, log_density=log_density, sample=sample,
    quadrature=quadrature.gauss_hermite(log_density), location=True,
    curvature=1.0,                              # -d2/dm2 log pi >= 1: Assumption 7
    params=(("alpha", ALPHA),))

res = jbai.simulate(jax.random.key(0), skew, [1.0, 0.5, 0.0], "tcb", delta=0.1,
                    n_trials=100, threshold="paper")
print(res.summary[0]["mean_tau"], res.summary[0]["error_rate"])
'''


def test_readme_snippet_runs():
  ns = {}
  exec(README_SNIPPET, ns)  # noqa: S102 - the README's code, verbatim
  res, skew = ns["res"], ns["skew"]
  assert res.tau.shape == (100,) and not res.hit_cap.any()
  assert np.mean(res.correct) >= 0.9
  # The skew-normal's KL (no closed form) against adaptive quadrature.
  alpha = ns["ALPHA"]
  shift = ns["SHIFT"]

  def logpdf(x, m):
    z = x - m + shift
    return math.log(2) + stats.norm.logpdf(z) + stats.norm.logcdf(alpha * z)

  ref = integrate.quad(lambda x: math.exp(logpdf(x, 1.0)) * (logpdf(x, 1.0) - logpdf(x, 0.0)),
                       -8, 14, epsabs=1e-13, limit=200)[0]
  assert float(skew.kl(1.0, 0.0)) == pytest.approx(ref, rel=1e-8)
  mean = integrate.quad(lambda x: x * math.exp(logpdf(x, 0.3)), -8, 14, epsabs=1e-13)[0]
  assert mean == pytest.approx(0.3, abs=1e-9)
