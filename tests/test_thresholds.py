"""Tests of the stopping thresholds: reference values, independent scipy
computations, monotonicity, shapes, jit/vmap, and family checks."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, special

from jbai import families
from jbai import thresholds as th
from jbai.state import arm_stats
from jbai.thresholds.kk import _h_tilde

NAMES = ["gk16", "kk", "paper"]  # of one model (MODEL_THRESHOLDS): ev, uv, linear-sn


def make_stats(family, counts, means):
  """ArmStats with the given counts and exact sample means."""
  counts = jnp.asarray(counts, jnp.int32)
  means = jnp.asarray(means, jnp.float64)
  stats = (counts * means)[:, None]
  return arm_stats(family, counts, stats, jnp.sum(counts).astype(jnp.int32))


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _beta(threshold, family, num_arms, delta, stats, top, ch):
  return threshold.value(threshold.init(delta, num_arms), family, stats, top, ch)


def beta(threshold, delta, family, stats, top=0, ch=1):
  """beta_t(delta) [D], jit-compiled (cached per threshold, family and shapes)."""
  return _beta(threshold, family, int(stats.counts.shape[-1]), jnp.asarray(delta),
               stats, jnp.int32(top), jnp.int32(ch))


def applicable_families():
  return [families.gaussian(), families.gaussian(sigma=0.5, lo=-2.0, hi=3.0),
          families.bernoulli(), families.bernoulli(0.05, 0.95)]


# ---------------------------------------------------------------- independent references

def scipy_c_gaussian(x):
  def g(lam):
    return (2 * lam - 2 * lam * np.log(4 * lam) + np.log(special.zeta(2 * lam))
            - 0.5 * np.log(1 - lam))
  res = optimize.minimize_scalar(lambda lam: (g(lam) + x) / lam,
                                 bounds=(0.5 + 1e-12, 1 - 1e-12), method="bounded",
                                 options={"xatol": 1e-12})
  return res.fun, res.x


def scipy_h_inverse(y):
  """Root u >= 1 of u - ln u = y, by bracketing (independent of Lambert W)."""
  if y <= 1:
    return 1.0
  return optimize.brentq(lambda u: u - np.log(u) - y, 1.0, 2 * y + 2, xtol=1e-14)


def scipy_t_kk(x):
  z = 1.5
  switch = 1 / np.log(z) - np.log(1 / np.log(z))
  arg = (scipy_h_inverse(1 + x) + np.log(2 * special.zeta(2))) / 2
  if arg >= switch:
    u = scipy_h_inverse(arg)
    return 2 * np.exp(1 / u) * u
  return 2 * z * (arg - np.log(np.log(z)))


# ---------------------------------------------------------------- calibrations

def test_gaussian_calibration_reference_numbers():
  # K = 5, delta = 1e-8: x = ln(4 / 1e-8) / 2 = 9.9035.
  x = 0.5 * math.log(4 / 1e-8)
  assert x == pytest.approx(9.9035, abs=1e-4)
  value, lam = th.c_gaussian(x, return_lambda=True)
  assert float(value) == pytest.approx(11.855, abs=1e-3)
  assert float(lam) == pytest.approx(0.968, abs=1e-3)
  fam = families.gaussian()
  thr = th.kk()
  stats = make_stats(fam, [200] * 5, [1.0, 0.9, 0.8, 0.7, 0.6])
  assert int(stats.t) == 1000
  value = beta(thr, jnp.array([1e-8]), fam, stats)
  assert float(value[0]) == pytest.approx(33.005, abs=1e-3)


@pytest.mark.parametrize("x", [0.05, 0.5, 2.0, 9.9035, 30.0, 200.0])
def test_gaussian_calibration_matches_scipy(x):
  ref, ref_lam = scipy_c_gaussian(x)
  value, lam = th.c_gaussian(x, return_lambda=True)
  assert float(value) == pytest.approx(ref, rel=1e-8)
  assert float(lam) == pytest.approx(ref_lam, abs=1e-4)


def test_gaussian_calibration_float32():
  x = jnp.float32(0.5 * math.log(4 / 1e-8))
  value = th.c_gaussian(x)
  assert value.dtype == jnp.float32
  assert float(value) == pytest.approx(11.855, abs=2e-3)


def test_h_inverse_matches_lambert_w():
  y = np.array([1.0 + 1e-6, 1.001, 1.5, 2.0, 1 / np.log(1.5) - np.log(1 / np.log(1.5)),
                5.0, 10.9, 50.0, 700.0])
  ref = -special.lambertw(-np.exp(-y), -1).real
  got = np.asarray(th.h_inverse(y))
  np.testing.assert_allclose(got, ref, rtol=1e-10)
  np.testing.assert_allclose(got - np.log(got), y, rtol=1e-12)
  assert float(th.h_inverse(1.0)) == 1.0


@pytest.mark.parametrize("x", [0.0, 0.3, 1.0, 2.3, 5.0, 9.9035, 40.0, 1000.0])
def test_t_kk_matches_independent_computation(x):
  assert float(th.t_kk(x)) == pytest.approx(scipy_t_kk(x), rel=1e-9)


def test_t_kk_is_continuous_and_smooth_at_branch_switch():
  # h~_{3/2} switches branch at x = h(1 / ln 1.5); value and slope must agree.
  switch = 1 / math.log(1.5) - math.log(1 / math.log(1.5))
  h = 1e-6
  left = np.asarray(_h_tilde(jnp.array([switch - 2 * h, switch - h])))
  right = np.asarray(_h_tilde(jnp.array([switch + h, switch + 2 * h])))
  assert right[0] - left[1] == pytest.approx(2 * h * 1.5, rel=1e-3)
  assert (right[1] - right[0]) / h == pytest.approx(1.5, rel=1e-4)
  assert (left[1] - left[0]) / h == pytest.approx(1.5, rel=1e-4)


def test_t_kk_close_to_its_approximation():
  # Kaufmann & Koolen: T(x) ~ x + 4 ln(1 + x + sqrt(2x)) for x >= 5 or so.
  x = np.array([5.0, 10.0, 50.0, 200.0, 1000.0])
  approx = x + 4 * np.log(1 + x + np.sqrt(2 * x))
  got = np.asarray(th.t_kk(x))
  np.testing.assert_allclose(got, approx, rtol=0.1)
  assert np.all(got > x)


# ---------------------------------------------------------------- kk

def test_kk_exponential_family_formula():
  fam = families.bernoulli()
  thr = th.kk()
  delta = np.array([0.1, 1e-3])
  stats = make_stats(fam, [50, 30, 20], [0.6, 0.5, 0.4])
  got = np.asarray(beta(thr, delta, fam, stats, 0, 2))
  x = 0.5 * np.log(2 / delta)
  ref = np.array([2 * scipy_t_kk(v) for v in x]) + 3 * (np.log1p(np.log(50))
                                                      + np.log1p(np.log(20)))
  np.testing.assert_allclose(got, ref, rtol=1e-9)


def test_kk_gaussian_formula():
  fam = families.gaussian(sigma=2.0)
  thr = th.kk()
  delta = np.array([0.1, 1e-3])
  stats = make_stats(fam, [50, 30, 20], [0.6, 0.5, 0.4])
  got = np.asarray(beta(thr, delta, fam, stats, 0, 2))
  ref = np.array([2 * scipy_c_gaussian(0.5 * np.log(2 / d))[0] for d in delta])
  ref += 4 * np.log(4 + np.log(100 / 2))
  np.testing.assert_allclose(got, ref, rtol=1e-8)


def test_kk_increasing_in_counts():
  fam = families.poisson()
  thr = th.kk()
  delta = jnp.array([0.05])
  values = []
  for n in [1, 2, 5, 30, 1000, 10 ** 6]:
    stats = make_stats(fam, [n, n, 7], [3.0, 2.0, 1.0])
    values.append(float(beta(thr, delta, fam, stats)[0]))
  assert np.all(np.diff(values) > 0)
  # Only the counts of top and challenger matter.
  a = beta(thr, delta, fam, make_stats(fam, [9, 9, 7], [3.0, 2.0, 1.0]))
  b = beta(thr, delta, fam, make_stats(fam, [9, 9, 7000], [3.0, 2.0, 1.0]))
  np.testing.assert_allclose(a, b)


def test_kk_guards_small_counts():
  fam = families.bernoulli()
  thr = th.kk()
  delta = jnp.array([0.1])
  zero = beta(thr, delta, fam, make_stats(fam, [0, 0], [0.0, 0.0]))
  one = beta(thr, delta, fam, make_stats(fam, [1, 1], [1.0, 0.0]))
  assert np.all(np.isfinite(zero))
  np.testing.assert_allclose(zero, one)
  np.testing.assert_allclose(one, 2 * th.t_kk(0.5 * np.log(1 / 0.1)))
  gauss = families.gaussian()
  g = beta(thr, delta, gauss, make_stats(gauss, [0, 0], [0.0, 0.0]))
  assert np.all(np.isfinite(g))


# ---------------------------------------------------------------- paper

def paper_reference(family, counts, means, t, delta, eps):
  """The paper's threshold with the Assumption-7 bound, for interior MLEs."""
  counts = np.asarray(counts, float)
  means = np.asarray(means, float)
  sigma = math.sqrt(family.curvature)
  log_fisher = max(float(np.log(family.fisher(m))) for m in means)
  log_mass = np.log(special.erf(eps * sigma * np.sqrt(counts) / np.sqrt(2)))
  div = max(max(float(family.kl(m, m - eps)), float(family.kl(m, m + eps)))
            for m in means)
  width = family.hi - family.lo
  return (log_fisher - 2 * log_mass.min() + t * div
          + 2 * np.log(width / np.sqrt(2 * np.pi))
          + np.log(t * (len(means) - 1) / (2 * np.asarray(delta))))


@pytest.mark.parametrize("family", applicable_families(), ids=repr)
def test_paper_fixed_eps_matches_formula(family):
  means = [0.7, 0.5, 0.3]
  counts = [40, 25, 35]
  delta = np.array([0.1, 1e-4])
  thr = th.paper(eps=0.05)
  got = beta(thr, delta, family, make_stats(family, counts, means))
  ref = paper_reference(family, counts, means, 100, delta, 0.05)
  np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-9)


def test_paper_edge_of_theta_uses_half_interval():
  fam = families.bernoulli(0.1, 0.9)
  eps = 0.05
  counts = np.array([40, 60])
  means = np.array([0.9, 0.5])  # arm 0 on the upper edge of Theta
  thr = th.paper(eps=eps)
  got = float(beta(thr, jnp.array([0.1]), fam, make_stats(fam, counts, means))[0])
  y = np.sqrt(counts * fam.curvature)
  log_mass = np.log([0.5 * special.erf(eps * y[0] / np.sqrt(2)),
                     special.erf(eps * y[1] / np.sqrt(2))])
  div = max(float(fam.kl(0.9, 0.85)), float(fam.kl(0.5, 0.45)),
            float(fam.kl(0.5, 0.55)))
  ref = (max(np.log(fam.fisher(0.9)), np.log(fam.fisher(0.5))) - 2 * log_mass.min()
         + 100 * div + 2 * np.log(0.8 / np.sqrt(2 * np.pi))
         + np.log(100 * 1 / (2 * 0.1)))
  assert got == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("family", applicable_families(), ids=repr)
def test_paper_default_eps_is_no_worse_than_fixed(family):
  stats = make_stats(family, [300, 200, 500], [0.6, 0.45, 0.3])
  delta = jnp.array([0.01])
  auto = th.paper()
  best = float(beta(auto, delta, family, stats)[0])
  assert np.isfinite(best)
  for eps in [1e-4, 0.01, 0.1, 0.3]:
    fixed = th.paper(eps=eps)
    value = float(beta(fixed, delta, family, stats)[0])
    assert best <= value + 1e-9


def first_crossing(threshold, family, means, delta, gamma, t_max):
  """First t (on a grid) where t * gamma exceeds the threshold, or None."""
  params = threshold.init(jnp.array([delta]), len(means))
  ts = np.unique(np.geomspace(10, t_max, 400).astype(int) // 2 * 2)
  counts = np.stack([ts // 2, ts // 2], axis=1)
  stats = jax.vmap(lambda c: make_stats(family, c, means))(jnp.asarray(counts, jnp.int32))
  beta = np.asarray(jax.jit(jax.vmap(
      lambda s: threshold.value(params, family, s, 0, 1)[0]))(stats))
  assert np.all(np.isfinite(beta))
  crossed = ts * gamma > beta
  return int(ts[np.argmax(crossed)]) if crossed.any() else None


def test_paper_gaussian_instance_stops():
  # Gaussian [1, 0.5], sigma = 1: with equal counts the GLLR is
  # t (1/4) (0.5)^2 / 2 = t / 32 = t Gamma(nu) exactly.
  fam = families.gaussian(sigma=1.0)
  means = [1.0, 0.5]
  gamma = 1 / 32
  t_auto = first_crossing(th.paper(), fam, means, 0.1, gamma, 10 ** 5)
  assert t_auto is not None and t_auto < 3000
  # A fixed eps with eps^2 / 2 = 0.005 < Gamma also stops, later.
  t_fixed = first_crossing(th.paper(eps=0.1), fam, means, 0.1, gamma, 10 ** 5)
  assert t_fixed is not None and t_fixed >= t_auto
  # eps^2 / 2 = 0.125 > Gamma: t eps_t outgrows the GLLR, it never stops.
  assert first_crossing(th.paper(eps=0.5), fam, means, 0.1, gamma, 10 ** 7) is None


def test_paper_infinite_until_every_arm_is_sampled():
  fam = families.gaussian()
  thr = th.paper()
  value = beta(thr, jnp.array([0.1]), fam,
               make_stats(fam, [10, 10, 0], [1.0, 0.0, 0.0]))
  assert np.all(np.isposinf(np.asarray(value)))


@pytest.mark.parametrize("family", applicable_families(), ids=repr)
def test_paper_finite_on_applicable_families(family):
  thr = th.paper()
  params = thr.init(jnp.array([0.5, 0.1, 1e-6]), 4)
  rng = np.random.default_rng(0)
  lo, hi = max(family.lo, -3.0), min(family.hi, 3.0)
  means = rng.uniform(lo, hi, (6, 4))
  counts = rng.integers(1, 10 ** 4, (6, 4))
  # Last row: MLEs on the edges of Theta (Bernoulli: all rewards 0 or 1).
  means[-1] = [hi, lo, 0.5 * (lo + hi), lo]
  stats = jax.vmap(lambda c, m: make_stats(family, c, m))(
      jnp.asarray(counts, jnp.int32), jnp.asarray(means))
  value = jax.jit(jax.vmap(lambda s: thr.value(params, family, s, 0, 1)))(stats)
  assert value.shape == (6, 3)
  assert np.all(np.isfinite(np.asarray(value)))


@pytest.mark.parametrize("name", ["poisson", "exponential"])
def test_paper_rejects_families_without_curvature(name):
  fam = families.get(name)
  thr = th.get("paper")
  with pytest.raises(ValueError, match=name):
    th.check(thr, fam)
  with pytest.raises(ValueError, match=name):
    beta(thr, jnp.array([0.1]), fam, make_stats(fam, [5, 5], [1.0, 2.0]))


def test_paper_rejects_bad_eps():
  for bad in [0.0, -1.0, float("nan"), float("inf"), "a"]:
    with pytest.raises(ValueError, match="eps"):
      th.paper(eps=bad)


# ---------------------------------------------------------------- all thresholds

def test_check_accepts_and_rejects():
  for fam in applicable_families():
    for name in NAMES:
      assert th.check(th.get(name), fam) is None
  for fam in [families.poisson(), families.exponential()]:
    assert th.check(th.get("kk"), fam) is None
    assert th.check(th.get("gk16"), fam) is None
  general = families.gaussian()._replace(name="mygeneral", transport_x=None, exponential=False)
  with pytest.raises(ValueError, match="mygeneral"):
    th.check(th.get("kk"), general)
  assert th.check(th.get("gk16"), general) is None
  assert th.check_family is th.check


def test_get_unknown_raises():
  with pytest.raises(ValueError, match="nope"):
    th.get("nope")
  assert set(th.THRESHOLDS) == set(NAMES)
  assert th.get("paper", eps=0.1) == th.paper(eps=0.1)
  assert th.get("paper") != th.paper(eps=0.1)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("family", [families.gaussian(), families.bernoulli()], ids=repr)
def test_shape_and_decreasing_in_delta(name, family):
  thr = th.get(name)
  delta = jnp.array([1e-9, 1e-5, 1e-3, 0.01, 0.1, 0.5])
  stats = make_stats(family, [120, 80, 100, 60], [0.6, 0.5, 0.45, 0.2])
  value = beta(thr, delta, family, stats)
  assert value.shape == (6,)
  assert np.all(np.diff(np.asarray(value)) < 0)


@pytest.mark.parametrize("name", NAMES)
def test_jit_and_vmap(name):
  fam = families.bernoulli()
  thr = th.get(name)
  delta = jnp.array([0.1, 0.01])
  rng = np.random.default_rng(1)
  batch = 6
  counts = rng.integers(1, 500, (batch, 3))
  means = rng.uniform(0.05, 0.95, (batch, 3))
  stats = jax.vmap(lambda c, m: make_stats(fam, c, m))(jnp.asarray(counts, jnp.int32),
                                                        jnp.asarray(means))
  tops = jnp.asarray(np.argmax(means, axis=1), jnp.int32)
  chs = (tops + 1) % 3

  @jax.jit
  def run(delta, stats, tops, chs):
    params = thr.init(delta, 3)
    return jax.vmap(lambda s, a, b: thr.value(params, fam, s, a, b))(stats, tops, chs)

  got = np.asarray(run(delta, stats, tops, chs))
  assert got.shape == (batch, 2)
  for i in range(batch):
    one = make_stats(fam, counts[i], means[i])
    ref = np.asarray(beta(thr, delta, fam, one, int(tops[i]), int(chs[i])))
    np.testing.assert_allclose(got[i], ref, rtol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_inside_while_loop(name):
  # The engine calls value inside lax.while_loop: it must trace there.
  fam = families.gaussian()
  thr = th.get(name)

  def cond(carry):
    i, _ = carry
    return i < 3

  def body(carry):
    i, acc = carry
    params = thr.init(jnp.array([0.1]), 2)
    n = 10 * (i + 1)
    stats = arm_stats(fam, jnp.stack([n, n]), jnp.stack([n * 1.0, n * 0.0])[:, None],
                      2 * n)
    return i + 1, acc + thr.value(params, fam, stats, 0, 1)[0]

  _, total = jax.jit(lambda: jax.lax.while_loop(cond, body, (0, 0.0)))()
  assert np.isfinite(float(total))


# ---------------------------------------------------------------- the union bound's pieces

@pytest.mark.parametrize("name", ["kk", "paper"])
def test_proven_thresholds_take_their_union_bound_over_the_questions_pieces(name):
  """The GLLR stop of a question gives a proven threshold its problem's pieces:
  m (K - m) = 100 for the top 10 of 20 arms (not K - 1 = 19), K for thresholding;
  the best arm's and gk16's inits are unchanged."""
  from jbai import problems, stops
  threshold, delta = th.get(name), jnp.array([0.05, 1e-6])
  assert threshold.union
  for problem, pieces in [(problems.top_m(10), 100), (problems.above(0.5), 20),
                          (problems.best_arm(), 19)]:
    got = stops.answer_gllr(problem, threshold).init(delta, 20)
    want = threshold.init(delta, 20, pieces=pieces)
    jax.tree.map(np.testing.assert_array_equal, got, want)
  x = 0.5 * np.log(100 / np.asarray(delta))
  top = stops.answer_gllr(problems.top_m(10), threshold).init(delta, 20)
  if name == "kk":
    np.testing.assert_allclose(top["kk"], 2 * th.t_kk(x), rtol=1e-6)
  else:
    np.testing.assert_allclose(top["log_k1_delta"], 2 * x, rtol=1e-6)
  jax.tree.map(np.testing.assert_array_equal, threshold.init(delta, 20),
               threshold.init(delta, 20, pieces=19))
  gk = stops.answer_gllr(problems.top_m(10), th.gk16())
  assert not th.gk16().union and gk.init is th.gk16().init


def test_the_pair_calibrations_cover_a_one_arm_piece():
  """A thresholding piece is one arm (the stop hands kk that arm twice): kk's pair
  bound 2 T(x / 2) + 3 * 2 ln(1 + ln N) and Gaussian 2 C_G(x / 2) + 4 ln(4 + ln(t / 2))
  are at least the one-arm bounds T(x) + 3 ln(1 + ln N) and C_G(x) + 2 ln(4 + ln N),
  since 2 T(x / 2) >= T(x) and 2 C_G(x / 2) >= C_G(x) (Kaufmann & Koolen 2021's
  deviation inequality for a set S of arms, |S| T(x / |S|))."""
  x = jnp.concatenate([jnp.linspace(0.0, 5.0, 101), jnp.geomspace(5.0, 1e4, 100)])
  assert float(jnp.min(2 * th.t_kk(x / 2) - th.t_kk(x))) > 0
  assert float(jnp.min(2 * th.c_gaussian(x / 2) - th.c_gaussian(x))) > 0


@pytest.mark.slow
def test_the_top_m_stop_is_delta_correct_with_more_pieces_than_k_minus_1():
  """The top 3 of 6 Gaussian arms (m (K - m) = 9 pairs > K - 1 = 5) at delta = 0.2
  with kk over its 9 pieces: P(error) <= delta, one-sided at 99% in two looks
  (`helpers.assert_delta_correct`, 200 then 800 trials). (paper: the same union
  bound, checked by the fast test above; its search for eps at every step makes
  a run of this size cost minutes.)"""
  import jbai
  from helpers import assert_delta_correct
  means, delta = [1.0, 0.9, 0.75, 0.55, 0.5, 0.3], 0.2
  with jax.enable_x64(False):
    assert_delta_correct(lambda n: jbai.simulate(
        jax.random.key(21), "gaussian", means, jbai.rules.get("ebtc-top-m", m=3), delta, n,
        threshold="kk", problem=jbai.problems.top_m(3), max_steps=1_000_000), delta, n=800)
