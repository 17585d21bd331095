"""jbai.bounded: laws in [0, 1], the grid histogram, KL_inf, the GLR and T*.

References are independent of jbai's solvers: the dual maximised by SciPy's brentq
in the original variable lambda, the primal as a convex program (SLSQP), the
Bernoulli KL, jbai's exact Bernoulli oracle, and Cover's universal-portfolio bound
(the threshold's proof) by quadrature.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, optimize, special

import jbai
from jbai import bounded
from jbai.bounded import histogram, laws as L

RNG = np.random.default_rng(76)


# ----------------------------------------------------------------------------- references

def dual_reference(z, p, mu, up):
  """KL_inf by brentq on the dual's derivative in lambda (Honda & Takemura's form)."""
  z, p = np.asarray(z, np.float64), np.asarray(p, np.float64)
  live = p > 0
  x = (mu - z) if up else (z - mu)  # log(1 + lambda x), lambda in [0, 1/c]
  top = 1 / ((1 - mu) if up else mu)

  def f(lam):
    return np.sum(p[live] * np.log1p(lam * x[live]))

  def h(lam):
    with np.errstate(divide="ignore"):  # -inf at the pole of an atom at the end
      return np.sum(p[live] * x[live] / (1 + lam * x[live]))

  if h(0) <= 0:
    return 0.0
  if not np.any(live & (1 + top * x <= 1e-15)) and h(top) >= 0:
    return f(top)
  hi = top
  while not h(hi) < 0 or not np.isfinite(h(hi)):  # step back from the pole
    hi = hi * (1 - 1e-12) if np.isfinite(h(hi)) else hi - (hi * 1e-15 + 1e-300)
    if hi <= 0:
      break
  lam = optimize.brentq(h, 0, hi, xtol=1e-15, rtol=1e-15, maxiter=500)
  return f(lam)


def primal_reference(z, p, mu, up):
  """min KL(p || q) over laws q on the grid z (which holds 0 and 1, where the
  optimal law's extra mass goes) with mean <= mu (down) or >= mu (up)."""
  sign = -1 if up else 1
  live = p > 0
  cons = [{"type": "eq", "fun": lambda q: np.sum(q) - 1},
          {"type": "ineq", "fun": lambda q: sign * (mu - q @ z)}]
  q0 = np.full(z.size, 1 / z.size)
  res = optimize.minimize(
      lambda q: np.sum(p[live] * np.log(p[live] / np.maximum(q[live], 1e-300))), q0,
      jac=lambda q: np.where(live, -p / np.maximum(q, 1e-300), 0),
      bounds=[(1e-14, 1)] * z.size, constraints=cons, method="SLSQP",
      options={"ftol": 1e-15, "maxiter": 1000})
  return res.fun


def random_histograms(n, size):
  """n random grids of `size` points with a random histogram of 20 .. 400 rewards
  each (probabilities >= 1/400, as a trial's; some ends empty)."""
  z = np.sort(RNG.random((n, size)), axis=1)
  z[:, 0], z[:, -1] = 0, 1
  counts = np.stack([RNG.multinomial(RNG.integers(20, 400), RNG.dirichlet(np.ones(size)))
                     for _ in range(n)]).astype(np.float64)
  counts[RNG.random(n) < 0.3, 0] = 0
  counts[RNG.random(n) < 0.3, -1] = 0
  counts[counts.sum(1) == 0, 1] = 1
  return z, counts / counts.sum(1, keepdims=True)


# ----------------------------------------------------------------------------- laws

@pytest.mark.parametrize("make, message", [
    (lambda: L.beta(0, 1), "Beta parameter a = 0"),
    (lambda: L.beta(2, -0.5), "Beta parameter b = -0.5"),
    (lambda: L.discrete([0, 0.5], [0.5, 0.6]), "sum to 1.1"),
    (lambda: L.discrete([0, 1.5], [0.5, 0.5]), "value 1.5 is outside"),
    (lambda: L.discrete([0, 1], [1.0]), "2 values but 1 probabilities"),
    (lambda: L.discrete([0, 1], [1.5, -0.5]), "probability -0.5"),
    (lambda: L.bernoulli(1.2), "Bernoulli mean 1.2"),
    (lambda: histogram.check_grid([0, 0.5, 0.5, 1]), "grid point 0.5 does not exceed"),
    (lambda: histogram.check_grid([0.1, 1]), "must start at 0"),
    (lambda: histogram.check_rewards([0.2, 1.3]), "reward 1.3 is outside"),
    (lambda: bounded.optimal(L.arm_laws([L.bernoulli(0.5), L.beta(1, 1)])), "share the best"),
])
def test_bad_input_is_one_line_naming_the_value(make, message):
  with pytest.raises(ValueError, match=message) as err:
    make()
  assert "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_sampler_draws_each_law_with_its_mean(dtype):
  """20,000 draws per arm: each sample mean within 5 standard errors of the law's
  mean (a false alarm has probability below 6e-7 per arm), draws in [0, 1]."""
  arms = L.arm_laws([L.beta(2, 5), L.beta(0.5, 0.5), L.discrete([0, 0.25, 1], [0.2, 0.3, 0.5]),
                     L.bernoulli(0.3)], dtype)
  x = jax.jit(L.sample, static_argnums=2)(jax.random.key(1), arms, (20000,))
  assert x.dtype == dtype and x.shape == (20000, 4)
  assert bool(jnp.all((x >= 0) & (x <= 1)))
  err = np.abs(np.asarray(x, np.float64).mean(0) - np.asarray(L.means(arms), np.float64))
  assert np.all(err < 5 * 0.5 / np.sqrt(20000)), err
  assert set(np.unique(np.asarray(x[:, 2])).tolist()) == {0.0, 0.25, 1.0}


def test_jacobi_atoms_are_scipy_gauss_jacobi():
  for a, b in [(2, 5), (0.5, 0.5), (0.3, 4), (40, 60)]:
    x, w = L.jacobi_atoms(a, b, 24)
    s, ws = special.roots_jacobi(24, b - 1, a - 1)
    np.testing.assert_allclose(x, (1 + s) / 2, atol=1e-14)
    np.testing.assert_allclose(w, ws / ws.sum(), atol=1e-12)
    assert abs(w @ x - a / (a + b)) < 1e-14


# ----------------------------------------------------------------------------- histogram

def test_split_keeps_mean_and_support_and_grid_rewards_exact():
  grid = histogram.uniform_grid(11)
  split = jax.jit(histogram.split)
  m = np.asarray(split(grid, jnp.array([0.0, 0.05, 0.3, 0.77, 1.0, -0.1, 1.1, jnp.nan])))
  np.testing.assert_allclose(m[:5].sum(-1), 1, atol=1e-15)
  np.testing.assert_allclose(m[:5] @ np.asarray(grid), [0.0, 0.05, 0.3, 0.77, 1.0], atol=1e-15)
  assert m[2, 3] == 1.0 and m[0, 0] == 1.0 and m[4, 10] == 1.0  # on the grid: one bin
  assert np.all(np.isnan(m[5:]))  # outside [0, 1] or NaN: NaN, never clipped
  observe = jax.jit(histogram.observe)
  hist = histogram.empty(2, grid)
  for arm, r in [(0, 0.3), (1, 0.77), (0, 0.05)]:
    hist = observe(hist, grid, arm, r)
  batch = jax.jit(histogram.from_rewards, static_argnums=3)(
      grid, jnp.array([0.3, 0.77, 0.05]), jnp.array([0, 1, 0]), 2)
  np.testing.assert_allclose(hist.masses, batch.masses, atol=1e-15)
  assert hist.counts.tolist() == batch.counts.tolist() == [2, 1]
  np.testing.assert_allclose(np.asarray(hist.masses) @ np.asarray(grid) / [2, 1], [0.175, 0.77],
                             atol=1e-15)


# ----------------------------------------------------------------------------- KL_inf

def test_kl_inf_matches_the_scipy_dual_to_1e_8():
  """200 random histograms on random grids, random levels, both directions:
  float64 within 1e-8 of brentq on the dual in lambda, every solve converged."""
  z, p = random_histograms(200, 16)
  mu = RNG.random(200)
  down, up = jax.jit(bounded.kl_inf_pair)(z, p, p, mu)
  for r, is_up in ((down, False), (up, True)):
    ref = np.array([dual_reference(z[i], p[i], mu[i], is_up) for i in range(200)])
    assert bool(jnp.all(r.converged))
    np.testing.assert_allclose(r.value, ref, rtol=1e-8, atol=1e-10)
    assert np.sum(ref > 0) > 50


@pytest.mark.slow
def test_kl_inf_is_the_primal_convex_program():
  """The dual is KL_inf's definition: the primal min KL(F, G) over G on the grid
  with the mean constraint (SLSQP), to 1e-6."""
  z, p = random_histograms(6, 6)
  for i in range(6):
    for up in (False, True):
      mu = np.clip(p[i] @ z[i] + (0.15 if up else -0.15), 0.05, 0.95)
      got = float(bounded.kl_inf.kl_inf(z[i], p[i], mu, up).value)
      assert abs(got - primal_reference(z[i], p[i], mu, up)) < 1e-6


def test_kl_inf_of_a_bernoulli_law_is_the_bernoulli_kl_in_float32_and_float64():
  kl = jbai.families.bernoulli().kl
  p = jnp.array([0.3, 0.8, 0.01, 0.5, 0.5, 0.5])
  m = jnp.array([0.5, 0.2, 0.99, 0.5, 0.9, 0.1])
  for dtype, tol in ((jnp.float64, 1e-12), (jnp.float32, 2e-6)):
    z = jnp.array([0.0, 1.0], dtype)
    probs = jnp.stack([1 - p, p], -1).astype(dtype)
    down, up = jax.jit(bounded.kl_inf_pair)(z, probs, probs, m.astype(dtype))
    assert down.value.dtype == up.value.dtype == dtype
    np.testing.assert_allclose(jnp.where(m > p, up.value, down.value), kl(p, m),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(jnp.where(m > p, down.value, up.value), 0, atol=tol)


@pytest.mark.slow
def test_the_grid_lowers_kl_inf_within_the_stated_bound():
  """Beta rewards off the grid: KL_inf of the histogram's F~ is at most that of the
  exact empirical law F (bound (1)), by at most h^2 t*^2 / (8 c^2 (1 - t*)^2) (2)."""
  x = np.asarray(L.sample(jax.random.key(3), L.arm_laws([L.beta(2, 3)]), (300,)))[:, 0]
  grid = histogram.uniform_grid(21)
  tilde = histogram.from_rewards(grid, x, np.zeros(300, int), 1)
  f_tilde = histogram.probabilities(tilde)[0]
  for mu, up in ((0.25, False), (0.3, False), (0.55, True), (0.6, True)):
    exact = bounded.kl_inf.kl_inf(x, np.full(300, 1 / 300), mu, up)
    rounded = bounded.kl_inf.kl_inf(grid, f_tilde, mu, up)
    gap = float(exact.value - rounded.value)
    assert 0 <= gap <= float(histogram.rounding_bound(grid, exact.t, mu, up)), (mu, gap)


# ----------------------------------------------------------------------------- GLR, stop

@pytest.mark.slow
def test_pair_glr_is_the_infimum_over_the_common_mean():
  """Against minimize_scalar over m of the SciPy dual, to 1e-8; Bernoulli pairs
  against jbai's Bernoulli transport cost."""
  z, p = random_histograms(8, 8)
  grid = np.linspace(0, 1, 8)
  pa, pb = p[:4], p[4:]
  na, nb = RNG.integers(5, 200, 4).astype(float), RNG.integers(5, 200, 4).astype(float)
  got = bounded.pair_glr(grid, na, pa, nb, pb)
  for i in range(4):
    ma, mb = pa[i] @ grid, pb[i] @ grid
    if ma <= mb:
      assert float(got.value[i]) == 0
      continue
    obj = lambda m: (na[i] * dual_reference(grid, pa[i], m, False)
                     + nb[i] * dual_reference(grid, pb[i], m, True))
    ref = optimize.minimize_scalar(obj, bounds=(mb, ma), method="bounded",
                                   options={"xatol": 1e-12}).fun
    assert abs(float(got.value[i]) - ref) <= 1e-8 * max(1, ref)
  fam = jbai.families.bernoulli()
  two = jnp.array([0.0, 1.0])
  ber = bounded.pair_glr(two, 7.0, jnp.array([0.2, 0.8]), 3.0, jnp.array([0.6, 0.4]))
  cost = jbai.transport_cost(fam, 7.0, 0.8, 3.0, 0.4, method="golden").value
  assert abs(float(ber.value) - float(cost)) < 1e-10


def test_threshold_rests_on_covers_universal_portfolio_bound():
  """The proof's inequality: for returns r_i >= 0, max_s sum log((1 - s) + s r_i)
  <= log int_0^1 prod_i ((1 - s) + s r_i) ds + log(n + 1), on random samples."""
  for n in (1, 5, 40):
    for _ in range(5):
      r = RNG.random(n) * RNG.choice([1.5, 3, 10]) * (RNG.random(n) > 0.1)
      log_w = lambda s: np.sum(np.log((1 - s) + s * r))
      best = -optimize.minimize_scalar(lambda s: -log_w(s), bounds=(0, 1),
                                       method="bounded", options={"xatol": 1e-10}).fun
      best = max(best, log_w(0.0), log_w(1.0) if np.all(r > 0) else -np.inf)
      mix = integrate.quad(lambda s: np.exp(log_w(s) - best), 0, 1, limit=200)[0]
      assert best <= best + np.log(mix) + np.log(n + 1) + 1e-9
      assert np.log(mix) + np.log(n + 1) >= -1e-9
  assert float(bounded.threshold(0, 0, 0.1, 2)) == pytest.approx(np.log(10))
  assert float(bounded.threshold(9, 4, 0.01, 5)) == pytest.approx(
      np.log(400) + np.log(10) + np.log(5))


@pytest.mark.slow
def test_the_stop_waits_for_evidence_and_recommends_the_best_mean():
  grid = histogram.uniform_grid(11)
  arms = L.arm_laws([L.beta(6, 2), L.beta(2, 6), L.discrete([0.1, 0.5], [0.5, 0.5])])
  x = L.sample(jax.random.key(5), arms, (400,))
  stop = jax.jit(bounded.should_stop)
  for n, expect in ((3, False), (400, True)):
    hist = histogram.from_rewards(grid, x[:n].ravel(), jnp.tile(jnp.arange(3), n), 3)
    done, leader = stop(grid, hist, 0.01)
    assert (bool(done), int(leader)) == (expect, 0)
  stat = bounded.statistic(grid, hist)
  assert bool(stat.converged) and float(stat.glr[0]) == np.inf


# ----------------------------------------------------------------------------- oracle

@pytest.mark.slow
def test_oracle_of_bernoulli_laws_is_jbais_bernoulli_oracle():
  means = np.array([[0.8, 0.5, 0.3, 0.29], [0.3, 0.21, 0.2, 0.05]])
  z = np.broadcast_to([0.0, 1.0], means.shape + (2,))
  o = jax.jit(bounded.solve)(z, np.stack([1 - means, means], -1))
  w, gamma, info = jbai.oracle.optimal_allocation("bernoulli", means, method="exact")
  assert bool(jnp.all(info.converged)) and bool(jnp.all(o.converged))
  np.testing.assert_allclose(o.t_star * gamma, 1, atol=1e-6)
  np.testing.assert_allclose(o.w, w, atol=1e-5)
  assert o.best.tolist() == [0, 0]


@pytest.mark.slow
def test_gradients_vmap_and_float32():
  """d KL_inf^-/d mu = -lambda* and d KL_inf^+/d mu = +lambda* (envelope theorem)
  against central differences; the stop vmapped over lanes equals lane by lane;
  the float32 GLR within 1e-4 (relative) of float64."""
  z, p = random_histograms(1, 12)
  z, p = z[0], p[0]
  mean = float(p @ z)
  for mu, up in ((0.6 * mean, False), (mean + 0.5 * (1 - mean), True)):
    f = lambda m: bounded.kl_inf.kl_inf(z, p, m, up).value
    grad = float(jax.grad(f)(mu))
    lam = float(bounded.kl_inf.kl_inf(z, p, mu, up).lam)
    assert grad == pytest.approx(lam if up else -lam, rel=1e-10)
    assert grad == pytest.approx(float(f(mu + 1e-6) - f(mu - 1e-6)) / 2e-6, rel=1e-5)
  grid = histogram.uniform_grid(11)
  arms = L.arm_laws([L.beta(3, 2), L.beta(2, 3), L.bernoulli(0.45)])
  x = L.sample(jax.random.key(9), arms, (4, 150))  # 4 lanes
  hists = jax.vmap(lambda r: histogram.from_rewards(grid, r.ravel(), jnp.tile(jnp.arange(3), 150),
                                                    3))(x)
  stop = jax.jit(jax.vmap(bounded.should_stop, in_axes=(None, 0, None)))(grid, hists, 0.05)
  single = jax.jit(bounded.should_stop)
  for lane in range(4):
    one = single(grid, jax.tree.map(lambda v: v[lane], hists), 0.05)
    assert (bool(stop[0][lane]), int(stop[1][lane])) == (bool(one[0]), int(one[1]))
  probs = histogram.probabilities(jax.tree.map(lambda v: v[0], hists))
  glr = jax.jit(lambda z, pa, pb: bounded.pair_glr(z, 150.0, pa, 150.0, pb))
  g32, g64 = (glr(grid.astype(d), probs[0].astype(d), probs[1].astype(d))
              for d in (jnp.float32, jnp.float64))
  assert g32.value.dtype == jnp.float32 and bool(g32.converged)
  assert float(g32.value) == pytest.approx(float(g64.value), rel=1e-4)
