"""jbai.variance: Gaussian arms with per-arm variances, known and unknown (issue 76).

References are independent computations: the EV-GLR from the raw rewards with
numpy, the unknown-variance GLR as a profiled likelihood ratio minimised over the
common mean by a grid and scipy.optimize.minimize_scalar, the heteroscedastic
oracle by SLSQP on the epigraph form of max_w min_b C_ab(w), and jbai's own
Gaussian oracle for equal variances. The suite runs with x64 on (conftest).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

import jbai
from jbai import variance
from jbai.host.summary import wilson
from jbai.state import ArmStats

# One compiled program per statistic and shape ([4] arms), shared by the tests.
EV_GLR = jax.jit(lambda counts, stats, floor=0.0: variance.ev_glr(counts, stats, floor))
UV_GLR = jax.jit(lambda counts, stats, floor=0.0: variance.uv_glr(counts, stats, floor))
UV_COST = jax.jit(variance.uv_cost)


def _stats(samples):
  """(counts [K], stats [K, 2]) of a list of reward arrays."""
  counts = np.array([len(x) for x in samples])
  stats = np.array([[np.sum(x), np.sum(np.square(x))] for x in samples])
  return jnp.asarray(counts), jnp.asarray(stats)


def _profiled(x, lam):
  """(n/2) log(mean((x - lam)^2) / var(x)): the per-arm GLR with the variance profiled
  out of the Gaussian likelihood, computed from the rewards themselves ([L] lambdas)."""
  lam = np.atleast_1d(lam)
  sq = np.mean((x[None, :] - lam[:, None]) ** 2, axis=1)
  out = 0.5 * len(x) * np.log(sq / np.var(x))
  return out if out.size > 1 else float(out[0])


def _min_over_lambda(f, lo, hi):
  """A global minimum of f on [lo, hi]: the best of a fine grid, refined by Brent
  (f takes arrays of lambda)."""
  grid = np.linspace(lo, hi, 4001)
  values = f(grid)
  i = int(np.argmin(values))
  a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
  res = optimize.minimize_scalar(f, bounds=(a, b), method="bounded",
                                 options={"xatol": 1e-14 * max(1.0, abs(hi - lo))})
  return min(float(res.fun), values[i], values[0], values[-1])


def _random_samples(rng, k):
  """Rewards of K arms, counts 2 to 40, spreads 0.05 to 5 (gaps up to many sigmas)."""
  return [rng.normal(rng.uniform(-2, 2), rng.uniform(0.05, 5.0), rng.integers(2, 41))
          for _ in range(k)]


def test_ev_and_uv_glr_match_independent_references_to_1e8():
  rng = np.random.default_rng(76)
  ev, uv, pairs = [], [], 0
  for _ in range(8):
    samples = _random_samples(rng, 4)
    counts, stats = _stats(samples)
    z_ev, leader = EV_GLR(counts, stats, 0.0)
    z_uv, leader_uv = UV_GLR(counts, stats, 0.0)
    a = int(np.argmax([np.mean(x) for x in samples]))
    assert int(leader) == int(leader_uv) == a
    xa = samples[a]
    for b, xb in enumerate(samples):
      if b == a:
        assert np.isinf(z_ev[b]) and np.isinf(z_uv[b])
        continue
      gap = np.mean(xa) - np.mean(xb)
      want_ev = gap ** 2 / (2 * (np.var(xa) / len(xa) + np.var(xb) / len(xb)))
      want_uv = _min_over_lambda(lambda l: _profiled(xa, l) + _profiled(xb, l),
                                 np.mean(xb), np.mean(xa))
      ev.append((float(z_ev[b]), want_ev))
      uv.append((float(z_uv[b]), want_uv))
      pairs += 1
  ev, uv = np.array(ev), np.array(uv)
  np.testing.assert_allclose(ev[:, 0], ev[:, 1], rtol=1e-8)
  np.testing.assert_allclose(uv[:, 0], uv[:, 1], rtol=1e-8, atol=1e-12)
  # The unknown-variance GLR never exceeds the EV-GLR (log(1 + z) <= z).
  assert np.all(uv[:, 0] <= ev[:, 0] * (1 + 1e-12)) and pairs == 24


def test_uv_cost_finds_the_global_minimum_of_a_bimodal_objective():
  # Two arms of equal weight and variance, gap 2 a sigma with a = 3: the midpoint is
  # a local maximum; the minima are at midpoint +- sqrt(a^2 - 1) sigma with value
  # (1/4) log(4 a^2) (`ratio_two_arms`' derivation).
  c = UV_COST(0.5, 3.0, 1.0, 0.5, -3.0, 1.0)
  np.testing.assert_allclose(float(c.value), 0.25 * np.log(36.0), rtol=1e-13)
  np.testing.assert_allclose(abs(float(c.x)), np.sqrt(8.0), rtol=1e-10)
  midpoint = 0.5 * 0.5 * 2 * np.log1p(9.0)
  assert float(c.value) < midpoint - 0.1
  # Unequal weights: the global minimum against the grid reference.
  f = lambda l: 0.35 * 0.5 * np.log1p((3.0 - l) ** 2 / 0.7) + 0.65 * 0.5 * np.log1p((l + 3.0) ** 2 / 1.3)
  np.testing.assert_allclose(float(UV_COST(0.35, 3.0, 0.7, 0.65, -3.0, 1.3).value),
                             _min_over_lambda(f, -3.0, 3.0), rtol=1e-10)


@pytest.mark.slow
def test_costs_differentiate_as_finite_differences():
  args = jnp.array([0.3, 2.0, 0.8, 0.7, -1.5, 2.5])
  for fn in (variance.gaussian_cost, variance.uv_cost):
    grad = jax.grad(lambda v: fn(*v).value)(args)
    eps = 1e-6
    fd = [(fn(*args.at[i].add(eps)).value - fn(*args.at[i].add(-eps)).value) / (2 * eps)
          for i in range(6)]
    np.testing.assert_allclose(grad, np.array(fd), rtol=1e-6, atol=1e-9)


def test_all_equal_rewards_and_single_rewards_give_no_nan_or_inf():
  # Arm 0: three equal rewards (empirical variance 0); arm 1: one reward; arms 2, 3
  # ordinary.
  counts = jnp.array([3, 1, 5, 4])
  stats = jnp.array([[3.0, 3.0], [0.2, 0.04], [1.0, 2.0], [-1.0, 3.0]])
  m = variance.moments(counts, stats)
  assert np.isfinite(m.var[0]) and float(m.var[0]) > 0 and np.isinf(m.var[1])
  for glr in (EV_GLR, UV_GLR):
    z, leader = glr(counts, stats, 0.0)
    assert int(leader) == 0 and np.all(np.isfinite(np.asarray(z)[1:]))
    assert float(z[1]) == 0.0  # one reward: no evidence
    assert float(z[2]) > 0
    # A floor only raises variances, so it lowers the GLR (the stop fires later).
    z_floor, _ = glr(counts, stats, 0.1)
    assert 0 < float(z_floor[2]) < float(z[2])
  # Finite gradients too (the unknown-variance GLR's derivative in a floored
  # variance squares it).
  grad = jax.jit(jax.grad(lambda s: jnp.sum(variance.uv_glr(counts, s, 0.0)[0][1:])))(stats)
  assert np.all(np.isfinite(np.asarray(grad)))
  with pytest.raises(ValueError, match="var_floor"):
    variance.check_floor(-1.0)


def test_known_oracle_equal_sigmas_reproduce_jbai_gaussian_oracle_to_1e8():
  rng = np.random.default_rng(7)
  means = rng.normal(size=(6, 5))
  sigma = 1.7
  o = variance.solve(jnp.asarray(means), sigma)
  w, gamma = jbai.oracle.exact_solve(jbai.families.gaussian(sigma=sigma), jnp.asarray(means))
  np.testing.assert_allclose(o.w, w, rtol=0, atol=1e-8)
  np.testing.assert_allclose(o.gamma, gamma, rtol=1e-8)


def _slsqp(means, sigma):
  """Independent solve of max_w min_b C_ab(w): SLSQP on (w, t) with C_ab(w) >= t."""
  k = len(means)
  a = int(np.argmax(means))
  var = np.square(sigma)
  others = [b for b in range(k) if b != a]

  def costs(w):
    return np.array([(means[a] - means[b]) ** 2 / (2 * (var[a] / w[a] + var[b] / w[b]))
                     for b in others])

  x0 = np.append(np.full(k, 1 / k), 0.0)
  cons = [{"type": "eq", "fun": lambda z: np.sum(z[:k]) - 1},
          {"type": "ineq", "fun": lambda z: costs(z[:k]) - z[k]}]
  res = optimize.minimize(lambda z: -z[k], x0, method="SLSQP", constraints=cons,
                          bounds=[(1e-9, 1)] * k + [(0, None)],
                          options={"ftol": 1e-16, "maxiter": 2000})
  return 1 / res.x[k], res.x[:k]


@pytest.mark.slow
def test_known_oracle_matches_scipy_on_random_heteroscedastic_instances():
  rng = np.random.default_rng(11)
  means = rng.uniform(-1, 1, size=(5, 4))
  sigma = rng.uniform(0.3, 3.0, size=(5, 4))  # variances differing by up to 100 times
  o = variance.solve(jnp.asarray(means), jnp.asarray(sigma))
  for i in range(5):
    t_star, w = _slsqp(means[i], sigma[i])
    np.testing.assert_allclose(float(o.t_star[i]), t_star, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(o.w[i]), w, atol=1e-5)
    # Every pair cost is equal at the optimum, to Gamma.
    a = int(np.argmax(means[i]))
    c = variance.pair_costs("known", o.w[i], means[i], sigma[i] ** 2, a)
    np.testing.assert_allclose(np.delete(np.asarray(c), a), float(o.gamma[i]), rtol=1e-10)


@pytest.mark.slow
def test_known_oracle_gradients_match_finite_differences_and_it_vmaps_and_jits():
  means = jnp.array([1.0, 0.6, 0.3, -0.5])
  sigma = jnp.array([1.0, 2.0, 0.5, 1.5])
  t = jax.jit(lambda m, s: variance.solve(m, s).t_star)
  g_m, g_s = jax.grad(t, argnums=(0, 1))(means, sigma)
  eps = 1e-6
  fd_m = [(t(means.at[i].add(eps), sigma) - t(means.at[i].add(-eps), sigma)) / (2 * eps)
          for i in range(4)]
  fd_s = [(t(means, sigma.at[i].add(eps)) - t(means, sigma.at[i].add(-eps))) / (2 * eps)
          for i in range(4)]
  np.testing.assert_allclose(g_m, np.array(fd_m), rtol=1e-6)
  np.testing.assert_allclose(g_s, np.array(fd_s), rtol=1e-6)
  # w* is differentiable too (closed form of s*): its derivatives sum to 0.
  jac = jax.jacfwd(lambda m: variance.solve(m, sigma).w)(means)
  np.testing.assert_allclose(jnp.sum(jac, axis=0), 0.0, atol=1e-10)
  batch = jnp.stack([means, means[::-1]])
  one = jax.vmap(lambda m: variance.solve(m, sigma[::-1]).t_star)(batch)
  np.testing.assert_allclose(one[1], t(means[::-1], sigma[::-1]), rtol=1e-12)


def test_glrs_in_float32():
  counts = jnp.array([3, 4, 2, 6])
  stats = jnp.array([[3.3, 4.0], [2.0, 1.5], [0.1, 0.2], [-3.0, 2.0]])
  for glr in (EV_GLR, UV_GLR):
    z64 = glr(counts, stats, 0.0)[0]
    z32 = glr(counts, stats.astype(jnp.float32), jnp.float32(0.0))[0]
    assert z32.dtype == jnp.float32
    np.testing.assert_allclose(z32, z64, rtol=1e-4)


@pytest.mark.slow
def test_known_oracle_in_float32():
  means = np.array([1.0, 0.6, 0.3, -0.5])
  sigma = np.array([1.0, 2.0, 0.5, 1.5])
  o64 = variance.solve(jnp.asarray(means), jnp.asarray(sigma))
  o32 = variance.solve(jnp.asarray(means, jnp.float32), jnp.asarray(sigma, jnp.float32))
  assert o32.t_star.dtype == jnp.float32
  np.testing.assert_allclose(o32.t_star, o64.t_star, rtol=1e-5)
  np.testing.assert_allclose(o32.w, o64.w, atol=1e-5)


@pytest.mark.parametrize("means, sigma, match", [
    ([1.0, 0.5], [1.0, 0.0], "sigma must be finite and > 0"),
    ([1.0, 0.5], [1.0, -2.0], "sigma must be finite and > 0"),
    ([1.0, 0.5, 0.2], [1.0, 2.0], "sigma has 2 entries for 3 arms"),
    ([1.0, 1.0, 0.2], 1.0, "tie for the best arm"),
])
def test_bad_instances_are_refused(means, sigma, match):
  with pytest.raises(ValueError, match=match):
    variance.optimal_allocation(means, sigma)


def test_bad_beta_is_refused():
  with pytest.raises(ValueError, match="beta must lie in"):
    variance.optimal_allocation([1.0, 0.5], [1.0, 2.0], beta=1.5)


@pytest.mark.slow
def test_known_beta_optimal_allocation_matches_jbai_and_differentiates_in_beta():
  means = jnp.array([1.2, 1.0, 0.9, 0.5, 0.1])
  fam = jbai.families.gaussian(sigma=1.3)
  for beta in (0.3, 0.5):
    o = variance.solve(means, 1.3, beta)
    w, gamma = jbai.oracle.exact_beta_solve(fam, means, beta)
    np.testing.assert_allclose(o.w, w, atol=1e-8)
    np.testing.assert_allclose(o.gamma, gamma, rtol=1e-8)
  sigma = jnp.array([1.0, 2.0, 0.5, 1.5, 0.7])
  t = jax.jit(lambda b: variance.solve(means, sigma, b).t_star)
  eps = 1e-6
  np.testing.assert_allclose(jax.grad(t)(0.4), (t(0.4 + eps) - t(0.4 - eps)) / (2 * eps),
                             rtol=1e-6)
  # T*_beta is smallest at beta = w*_a, where it is T*.
  best = variance.solve(means, sigma)
  np.testing.assert_allclose(t(best.w[0]), best.t_star, rtol=1e-10)
  assert float(t(0.5)) > float(best.t_star)


@pytest.mark.slow
def test_uv_oracle_matches_the_two_arm_closed_form():
  gaps = np.array([0.3, 1.0, 2.0, 3.0, 6.0])  # a = gap / 2 on both sides of 1
  means = np.stack([gaps, np.zeros_like(gaps)], axis=-1)
  ratio, uv, known = variance.cost_of_not_knowing(means, 1.0)
  np.testing.assert_allclose(ratio, variance.ratio_two_arms(gaps), rtol=1e-9)
  np.testing.assert_allclose(uv.w, 0.5, atol=1e-9)


@pytest.mark.slow
def test_variance_lower_bound_holds_uniformly_in_time():
  # P(exists n <= 300: sigma_hat_n^2 < L_n sigma^2) <= exp(-log_inv) for one arm; at
  # exp(-log_inv) = 0.2 the Wilson interval (95%) of the observed rate over 4000
  # sequences must reach below 0.2.
  rng = np.random.default_rng(3)
  x = rng.normal(0.0, 2.0, size=(4000, 300))
  n = np.arange(1, 301)
  csum, csq = np.cumsum(x, 1), np.cumsum(x * x, 1)
  var = (csq / n - (csum / n) ** 2)[:, 1:] / 4.0
  lower = np.asarray(variance.variance_lower_bound(jnp.asarray(n[1:]), np.log(1 / 0.2)))
  crossed = int(np.sum(np.any(var < lower, axis=1)))
  assert wilson(crossed, 4000)[0] <= 0.2 and np.all((lower >= 0) & (lower < 1))


def test_thresholds_are_infinite_below_two_rewards_and_order_as_proven():
  ev, uv = variance.ev_threshold(), variance.uv_threshold()
  deltas = jnp.array([0.1, 1e-3, 1e-8])
  values = jax.jit(lambda d, s: (ev.value(ev.init(d, 5), None, s, 0, 1),
                                  uv.value(uv.init(d, 5), None, s, 0, 1)))
  prev_ev = prev_uv = None
  for counts in ([1, 40], [2, 2], [10, 30], [200, 100], [5000, 5000]):
    stats = ArmStats(counts=jnp.array(counts + [3, 3, 3]), stats=None,
                     t=jnp.array(sum(counts) + 9), mean=None, mle=None)
    c_ev, c_uv = values(deltas, stats)
    if counts[0] < 2:
      assert np.all(np.isinf(c_ev)) and np.all(np.isinf(c_uv))
      continue
    assert np.all(c_uv <= c_ev) and np.all(np.diff(c_ev) > 0) and np.all(np.diff(c_uv) > 0)
    prev_ev, prev_uv = c_ev, c_uv
  # Far out both approach the known-variance pair bound.
  assert float(prev_uv[0]) == pytest.approx(float(prev_ev[0]), rel=0.05)


def test_water_level_is_the_maximum_it_claims():
  rng = np.random.default_rng(5)
  for _ in range(5):
    b, n, low = rng.uniform(1, 30), rng.integers(2, 200, 2).astype(float), rng.uniform(0.01, 1, 2)
    got = float(variance.water_level(jnp.array([b]), jnp.asarray(n), jnp.asarray(low[None]))[0])
    f = lambda k: -sum(0.5 * n[i] * np.log1p(2 * [k, b - k][i] / (n[i] * low[i])) for i in (0, 1))
    want = -optimize.minimize_scalar(f, bounds=(0, b), method="bounded",
                                     options={"xatol": 1e-12}).fun
    np.testing.assert_allclose(got, want, rtol=1e-8)


@pytest.mark.slow
def test_uv_oracle_on_k_arms_gradients_equal_costs_and_small_gaps():
  means = jnp.array([1.0, 0.8, 0.5, 0.1])
  sigma = jnp.array([1.0, 2.0, 0.5, 1.5])
  solve = jax.jit(variance.solve_uv)
  g_m, g_s = jax.jit(jax.grad(lambda m, s: variance.solve_uv(m, s).t_star,
                              argnums=(0, 1)))(means, sigma)
  eps = 1e-6
  fd_m = [(solve(means.at[i].add(eps), sigma).t_star
           - solve(means.at[i].add(-eps), sigma).t_star) / (2 * eps) for i in range(4)]
  fd_s = [(solve(means, sigma.at[i].add(eps)).t_star
           - solve(means, sigma.at[i].add(-eps)).t_star) / (2 * eps) for i in range(4)]
  np.testing.assert_allclose(g_m, np.array(fd_m), rtol=1e-6)
  np.testing.assert_allclose(g_s, np.array(fd_s), rtol=1e-6)
  # At the optimum every unknown-variance pair cost equals Gamma_uv.
  o = solve(means, sigma)
  c = variance.pair_costs("uv", o.w, means, sigma ** 2, 0)
  np.testing.assert_allclose(np.asarray(c)[1:], float(o.gamma), rtol=1e-8)
  # Small gaps: log(1 + z) ~ z, so not knowing the variances costs nothing.
  ratio = solve(means * 1e-3, sigma).t_star / variance.solve(means * 1e-3, sigma).t_star
  assert 1 <= float(ratio) < 1 + 1e-5
  # beta-optimal: w_a = beta, the pair costs equal Gamma_beta, and at beta = w*_a
  # Gamma_beta = Gamma.
  half = solve(means, sigma, 0.5)
  assert float(half.w[0]) == 0.5 and float(half.gamma) < float(o.gamma)
  c = variance.pair_costs("uv", half.w, means, sigma ** 2, 0)
  np.testing.assert_allclose(np.asarray(c)[1:], float(half.gamma), rtol=1e-8)
  np.testing.assert_allclose(solve(means, sigma, o.w[0]).gamma, o.gamma, rtol=1e-9)


def _stops(seed, trials, horizon, means, sigma, delta):
  """Round-robin sampling of two arms, stopped by each GLR at its threshold: (error
  counts, mean stopping times) for known sigma (kk), the EV-GLR and the
  unknown-variance GLR, from the same rewards."""
  rng = np.random.default_rng(seed)
  x = rng.normal(means, sigma, size=(trials, horizon, 2))
  n = np.arange(1, horizon + 1, dtype=float)
  mean = np.cumsum(x, 1) / n[:, None]
  var = np.cumsum(x * x, 1) / n[:, None] - mean ** 2
  var = np.where(n[:, None] >= 2, np.maximum(var, 1e-300), np.inf)
  hi = np.argmax(mean, -1)[..., None]  # the empirical leader
  pick = lambda v, i: np.take_along_axis(v, i, -1)[..., 0]
  m_hi, m_lo, v_hi, v_lo = pick(mean, hi), pick(mean, 1 - hi), pick(var, hi), pick(var, 1 - hi)
  sig2 = np.asarray(sigma, float) ** 2
  z = {"known": (m_hi - m_lo) ** 2 / (2 * (pick(np.broadcast_to(sig2, var.shape), hi)
                                          + pick(np.broadcast_to(sig2, var.shape), 1 - hi)) / n),
       "ev": np.asarray(jax.jit(variance.gaussian_cost)(n, m_hi, v_hi, n, m_lo, v_lo).value),
       "uv": np.asarray(UV_COST(n, m_hi, v_hi, n, m_lo, v_lo).value)}
  counts = jnp.stack([jnp.asarray(n, jnp.int64)] * 2, -1)
  states = ArmStats(counts=counts, stats=None, t=2 * counts[:, 0], mean=None, mle=None)
  d = jnp.array([delta])
  kk = jbai.thresholds.kk()
  known = jbai.families.gaussian()
  thresholds = {
      "known": jax.vmap(lambda s: kk.value(kk.init(d, 2), known, s, 0, 1))(states),
      "ev": jax.vmap(lambda s: variance.ev_threshold().value(
          variance.ev_threshold().init(d, 2), None, s, 0, 1))(states),
      "uv": jax.vmap(lambda s: variance.uv_threshold().value(
          variance.uv_threshold().init(d, 2), None, s, 0, 1))(states)}
  out = {}
  for name in z:
    crossed = z[name] > np.asarray(thresholds[name])[:, 0]
    stopped = crossed.any(1)
    first = np.argmax(crossed, 1)
    wrong = stopped & (hi[np.arange(trials), first, 0] != int(np.argmax(means)))
    out[name] = (int(wrong.sum()), int(stopped.sum()), float(np.mean(2 * (first[stopped] + 1))))
  return out


@pytest.mark.slow
def test_ev_and_uv_stops_are_delta_correct_at_a_hard_instance():
  # Gap 0.5, variances differing by 9 times, delta = 0.1: every trial stops within
  # the horizon, and each stop's error rate is within delta (Wilson interval, 95%).
  out = _stops(seed=76, trials=500, horizon=4000, means=[0.5, 0.0], sigma=[1.0, 3.0],
               delta=0.1)
  for name, (wrong, stopped, _) in out.items():
    assert stopped == 500, name
    assert wilson(wrong, stopped)[0] <= 0.1, (name, wrong)
  # Not knowing the variances costs samples, the unknown-variance GLR no fewer than
  # the EV-GLR here, but not more than twice the known-variance stop.
  tau = {name: v[2] for name, v in out.items()}
  assert tau["known"] <= tau["ev"] <= 2 * tau["known"] and tau["uv"] <= 2 * tau["known"]
