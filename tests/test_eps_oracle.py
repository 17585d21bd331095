"""The eps-good oracle (jbai.oracle.eps): T*_eps(nu), w*_eps(nu) and the answer.

References, independent of jbai's code: a SciPy re-implementation of Garivier &
Kaufmann's `OptimalWeightsEpsilon` (EmilieKaufmann/BAI_epsBAI_code: for every
eps-good answer, brentq on F(y) = 1 around brentq on g_j(x) = y, the transport's
minimiser by brentq on its derivative; the smallest time wins), and SLSQP on the
max-min itself (epigraph form, envelope-theorem gradients) for the answer it
returns. Then eps = 0 against `exact_solve`, jit/vmap, derivatives against finite
differences, float32, the command line and the summaries of eps-good runs.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq, minimize

import jbai
from jbai import cli, families, oracle

# ------------------------------------------------------- the independent solution

VAR = {"gaussian": lambda x: 1.0, "bernoulli": lambda x: x * (1 - x),
       "poisson": lambda x: x, "exponential": lambda x: x * x}
THETA = {"gaussian": (-1e4, 1e4), "bernoulli": (0.0, 1.0), "poisson": (0.0, 1e3),
         "exponential": (1e-3, 1e3)}


def kl(name, p, q):
  if name == "gaussian":
    return (p - q) ** 2 / 2
  if name == "bernoulli":
    xlogy = lambda a, b: 0.0 if a == 0 else a * np.log(b)
    return xlogy(p, p) - xlogy(p, q) + xlogy(1 - p, 1 - p) - xlogy(1 - p, 1 - q)
  if name == "poisson":
    return (0.0 if p == 0 else p * np.log(p / q)) - p + q
  return p / q - 1 - np.log(p / q)


def transport(name, wi, mi, wj, mj, eps):
  """(min_x wi d(mi, x) + wj d(mj, x + eps), the minimiser) over x in [mj - eps, mi]
  with x and x + eps in Theta; 0 where mj >= mi + eps."""
  lo, hi = THETA[name]
  if mi - mj + eps <= 0:
    return 0.0, mi
  a, b = max(mj - eps, lo), min(mi, hi - eps)
  if wj == 0:
    return wi * kl(name, mi, b), b
  var = VAR[name]
  inside = lambda x: var(x) > 0 and var(x + eps) > 0
  while not inside(a):
    a = np.nextafter(a, b)
  while not inside(b):
    b = np.nextafter(b, a)
  slope = lambda x: wi * (x - mi) / var(x) + wj * (x + eps - mj) / var(x + eps)
  if slope(a) >= 0:
    x = a
  elif slope(b) <= 0:
    x = b
  else:
    x = brentq(slope, a, b, xtol=1e-15, rtol=1e-15, maxiter=500)
  return wi * kl(name, mi, x) + wj * kl(name, mj, x + eps), x


def gk_answer(name, mu, i, eps):
  """(Gamma_i, w) for answer i: Garivier & Kaufmann's `aOpt`."""
  lo, hi = THETA[name]
  others = [j for j in range(len(mu)) if j != i]
  g = lambda j, x: transport(name, 1.0, mu[i], x, mu[j], eps)

  def x_of(j, y):
    top = 1.0
    while g(j, top)[0] < y:
      top *= 2
    return brentq(lambda x: g(j, x)[0] - y, 0.0, top, xtol=1e-15, rtol=1e-15, maxiter=500)

  def balance(y):
    ms = [g(j, x_of(j, y))[1] for j in others]
    return sum(kl(name, mu[i], m) / kl(name, mu[j], m + eps) for j, m in zip(others, ms)) - 1

  y_min = kl(name, mu[i], min(mu[i], hi - eps))
  y_max = min(kl(name, mu[i], mu[j] - eps) if mu[j] - eps >= lo else np.inf for j in others)
  if not np.isfinite(y_max):
    y_max = y_min + 1.0
    while balance(y_max) < 0:
      y_max = y_min + 2 * (y_max - y_min)
  y = brentq(balance, y_min + 1e-300, y_max * (1 - 1e-15), xtol=1e-200, rtol=1e-15,
             maxiter=500)
  x = np.array([1.0 if j == i else x_of(j, y) for j in range(len(mu))])
  return y / x.sum(), x / x.sum()


def gk_oracle(name, mu, eps):
  """(T*_eps, w*_eps, answer): the smallest time over the eps-good answers."""
  mu = np.asarray(mu, float)
  good = [i for i in range(len(mu)) if mu[i] >= mu.max() - eps]
  with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # at the ends of Theta
    gamma, w, i = max((gk_answer(name, mu, i, eps) + (i,) for i in good), key=lambda r: r[0])
  return 1 / gamma, w, i


def slsqp_max_min(name, mu, i, eps):
  """max_w min_{j != i} C_ij(w) by SLSQP (no use of the optimum's structure)."""
  k = len(mu)
  others = [j for j in range(k) if j != i]

  def costs(v):
    return np.array([transport(name, v[i], mu[i], v[j], mu[j], eps)[0] for j in others])

  def costs_jac(v):
    jac = np.zeros((k - 1, k + 1))
    for r, j in enumerate(others):
      x = transport(name, v[i], mu[i], v[j], mu[j], eps)[1]
      jac[r, i], jac[r, j], jac[r, k] = kl(name, mu[i], x), kl(name, mu[j], x + eps), -1
    return jac

  with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # at the ends of Theta
    res = _slsqp(k, costs, costs_jac)
    w = res.x[:k] / res.x[:k].sum()
    return min(costs(np.append(w, 0.0))), w


def _slsqp(k, costs, costs_jac):
  """max t over (w, t), t <= every pair cost, sum w = 1."""
  return minimize(lambda v: -v[k], np.append(np.full(k, 1 / k), 0.0),
                  jac=lambda v: np.append(np.zeros(k), -1.0), method="SLSQP",
                  bounds=[(1e-12, 1)] * k + [(0, None)],
                  constraints=[{"type": "ineq", "fun": lambda v: costs(v) - v[k],
                                "jac": costs_jac},
                               {"type": "eq", "fun": lambda v: v[:k].sum() - 1,
                                "jac": lambda v: np.append(np.ones(k), 0.0)}],
                  options={"ftol": 1e-15, "maxiter": 1000})


# The five instances of the closing note, one batch per family (one compilation
# each), and two more families.
INSTANCES = {
    "gaussian": ([[1.0, 0.97, 0.95, 0.5, 0.3],      # issue 39: T*_eps = 621.08
                  [2.0, 1.9, 1.5, 1.45, 0.0]],       # three eps-good arms
                 [0.1, 0.2]),
    "bernoulli": ([[0.9, 0.85, 0.6, 0.3],
                   [0.95, 0.7, 0.5, 0.05],           # mu_a > 1 - eps, mu_3 < eps
                   [0.6, 0.6, 0.4, 0.2]],            # a tie for the best arm
                  [0.1, 0.1, 0.05]),
    "poisson": ([[3.0, 2.5, 1.0, 0.05]], [0.2]),
    "exponential": ([[0.3, 0.02, 0.05]], [0.1]),    # minimisers at lo = 1e-3
}


def solved(name):
  means, eps = INSTANCES[name]
  return oracle.eps_solve(families.get(name), jnp.asarray(means), jnp.asarray(eps))


@pytest.mark.parametrize("name", ["gaussian", "bernoulli", "poisson"])
def test_agrees_with_garivier_kaufmann_in_scipy(name):
  """T*_eps, w*_eps (1e-6 relative, observed 1e-13) and the answer, every eps-good
  answer tried by the reference; SLSQP's max-min agrees."""
  means, eps = INSTANCES[name]
  sol = solved(name)
  for row, (mu, e) in enumerate(zip(means, eps)):
    t_ref, w_ref, answer = gk_oracle(name, mu, e)
    assert 1 / float(sol.gamma[row]) == pytest.approx(t_ref, rel=1e-6)
    np.testing.assert_allclose(np.asarray(sol.w[row]), w_ref, rtol=1e-6)
    assert int(sol.answer[row]) == answer == int(np.argmax(mu))
    gamma_slsqp, _ = slsqp_max_min(name, mu, answer, e)
    assert gamma_slsqp == pytest.approx(float(sol.gamma[row]), rel=1e-6)


def test_the_issue_instance():
  """Gaussian sigma = 1 [1, 0.97, 0.95, 0.5, 0.3], eps = 0.1: T*_eps = 621.08, 16x
  below the exact T* (9,875)."""
  sol = solved("gaussian")
  assert 1 / float(sol.gamma[0]) == pytest.approx(621.0768, abs=1e-3)
  _, gamma = oracle.exact_solve(families.gaussian(), jnp.asarray(INSTANCES["gaussian"][0][0]))
  assert 1 / float(gamma) == pytest.approx(9875.32, abs=0.01)


def test_minimiser_at_the_end_of_theta():
  """Exponential arms with mu_i - eps < lo = 1e-3: SLSQP on the max-min agrees."""
  means, eps = INSTANCES["exponential"]
  sol = solved("exponential")
  gamma_ref, w_ref = slsqp_max_min("exponential", means[0], 0, eps[0])
  assert float(sol.gamma[0]) == pytest.approx(gamma_ref, rel=1e-6)
  np.testing.assert_allclose(np.asarray(sol.w[0]), w_ref, rtol=1e-5)


@pytest.mark.parametrize("name", ["gaussian", "bernoulli"])
def test_the_pair_costs_are_equal_at_the_optimum(name):
  """eps_gamma (the eps-GLLR's transport costs) at w*_eps is Gamma_eps."""
  means, eps = INSTANCES[name]
  sol = solved(name)
  gamma = oracle.eps_gamma(families.get(name), jnp.asarray(means), sol.w, jnp.asarray(eps))
  np.testing.assert_allclose(np.asarray(gamma), np.asarray(sol.gamma), rtol=1e-10)


# ------------------------------------------------------------------ eps = 0

ZERO = {
    "gaussian": [[1.2, 1.0, 1.0, 1.0, 1.0], [100.0, 2.0, 1.0, 0.0, -5.0],
                 [1.0, 1.0, 0.5, 0.2, 0.0]],         # a tie: Gamma = 0
    "bernoulli": [[0.8, 0.45, 0.45, 0.45], [1.0, 0.0, 0.5, 0.3], [0.5, 0.5, 0.2, 0.1]],
}


@pytest.mark.parametrize("name", sorted(ZERO))
def test_eps_zero_is_the_exact_oracle(name):
  """To rounding, ties included (Gamma = 0, w uniform over the tied arms)."""
  fam, means = families.get(name), jnp.asarray(ZERO[name])
  sol = oracle.eps_solve(fam, means, 0.0)
  w, gamma = oracle.exact_solve(fam, means)
  np.testing.assert_allclose(np.asarray(sol.gamma), np.asarray(gamma), rtol=1e-10)
  np.testing.assert_allclose(np.asarray(sol.w), np.asarray(w), rtol=1e-9, atol=1e-15)
  assert float(sol.gamma[-1]) == 0.0
  assert 1 / float(sol.gamma[0]) == pytest.approx(450.0 if name == "gaussian" else 27.1428,
                                                  rel=1e-6)


@pytest.mark.slow
def test_eps_zero_other_families():
  for name, mu in [("poisson", [5.0, 0.0, 4.0, 1.0]), ("logcosh", [1.0, 0.5, 0.0])]:
    fam = families.get(name)
    sol = oracle.eps_solve(fam, jnp.asarray(mu), 0.0)
    w, gamma = oracle.exact_solve(fam, jnp.asarray(mu))
    assert float(sol.gamma) == pytest.approx(float(gamma), rel=1e-10)
    np.testing.assert_allclose(np.asarray(sol.w), np.asarray(w), rtol=1e-9)


# --------------------------------------------------- batched, jit, derivatives

def test_batched_and_vmapped_match_one_at_a_time():
  """Gaussian arms (the cheapest compilation): a batch, jit(vmap) and one by one."""
  means, eps = INSTANCES["gaussian"]
  fam = families.gaussian()
  batch = solved("gaussian")
  mapped = jax.jit(jax.vmap(lambda m, e: oracle.eps_solve(fam, m, e)))(
      jnp.asarray(means), jnp.asarray(eps))
  for row, (mu, e) in enumerate(zip(means, eps)):
    one = oracle.eps_solve(fam, jnp.asarray(mu), e)
    for got in (batch, mapped):
      np.testing.assert_allclose(np.asarray(got.w[row]), np.asarray(one.w), rtol=1e-12)
      assert float(got.gamma[row]) == pytest.approx(float(one.gamma), rel=1e-12)
      assert int(got.answer[row]) == int(one.answer) == 0


@pytest.mark.parametrize("name, row", [
    ("gaussian", 0), ("bernoulli", 1),
    pytest.param("exponential", 0, marks=pytest.mark.slow)])  # minimisers at lo
def test_gradient_matches_finite_differences(name, row):
  """d T*_eps / d(mu, eps) by implicit differentiation against central differences."""
  means, eps = INSTANCES[name]
  fam, mu, e = families.get(name), jnp.asarray(means[row]), jnp.asarray(eps[row])
  t_star = lambda m, e_: 1 / oracle.eps_solve(fam, m, e_).gamma
  h = 1e-6

  @jax.jit
  def derivatives(mu, e):
    # T*_eps at mu +- h e_i (rows 2i, 2i + 1) and at eps +- h (the last two), one batch
    steps = h * jnp.eye(mu.shape[0])
    points = jnp.concatenate([jnp.stack([mu + steps, mu - steps], 1).reshape(-1, mu.shape[0]),
                              jnp.stack([mu, mu])])
    slacks = jnp.concatenate([jnp.full(2 * mu.shape[0], e), jnp.stack([e + h, e - h])])
    t = jax.vmap(t_star)(points, slacks)
    fd = (t[0::2] - t[1::2]) / (2 * h)
    jac = jax.jacobian(lambda m: oracle.eps_solve(fam, m, e).w)(mu) if name == "gaussian" else 0
    return jax.grad(t_star, argnums=(0, 1))(mu, e), fd[:-1], fd[-1], jac

  (grad_mu, grad_eps), fd, fd_eps, jac = derivatives(mu, e)
  np.testing.assert_allclose(np.asarray(grad_mu), np.asarray(fd), rtol=1e-5)
  assert float(grad_eps) == pytest.approx(float(fd_eps), rel=1e-5)
  if name == "gaussian":
    np.testing.assert_allclose(np.asarray(jnp.sum(jac, axis=0)), 0.0, atol=1e-9)  # sum w = 1


def test_float32():
  """With x64 off the oracle computes in float32, to float32's accuracy, and
  differentiates."""
  with jax.enable_x64(False):
    sol = oracle.eps_solve(families.bernoulli(), jnp.asarray([0.9, 0.85, 0.6, 0.3]), 0.1)
    mu = jnp.asarray(INSTANCES["gaussian"][0][0])
    grad = jax.grad(lambda m: 1 / oracle.eps_solve(families.gaussian(), m, 0.1).gamma)(mu)
  assert sol.gamma.dtype == jnp.float32 and grad.dtype == jnp.float32
  assert 1 / float(sol.gamma) == pytest.approx(40.656659, rel=1e-5)
  assert float(grad[0]) == pytest.approx(-9018.80, rel=1e-4)


# ------------------------------------------------------- validation, the host

def test_optimal_allocation_validates():
  sol = oracle.eps_optimal_allocation("bernoulli", [0.6, 0.6, 0.4, 0.2], 0.05)
  assert int(sol.answer) == 0 and float(sol.gamma) > 0  # a tie is fine with eps > 0
  with pytest.raises(ValueError, match="tie for the best arm"):
    oracle.eps_optimal_allocation("bernoulli", [0.6, 0.6, 0.4], 0.0)
  with pytest.raises(ValueError, match="width of Theta"):
    oracle.eps_optimal_allocation("bernoulli", [0.6, 0.5], 1.0)
  with pytest.raises(ValueError, match="eps must be a finite number"):
    oracle.eps_optimal_allocation("bernoulli", [0.6, 0.5], -0.1)
  with pytest.raises(ValueError, match="outside Theta"):
    oracle.eps_optimal_allocation("bernoulli", [1.6, 0.5], 0.1)
  w, gamma = oracle.optimal(families.gaussian(), INSTANCES["gaussian"][0][0], 0.1)
  assert 1 / gamma == pytest.approx(621.0768, abs=1e-3) and len(w) == 5


def test_cli_oracle_eps_good(capsys):
  mu = "1,0.97,0.95,0.5,0.3"
  assert cli.main(["oracle", "--family", "gaussian", "--means", mu, "--eps-good", "0.1",
                   "--delta", "0.01", "--json"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert out["t_star"] == pytest.approx(621.0768, abs=1e-3) and out["answer"] == 0
  assert out["eps_good"] == 0.1 and out["t_star_log"] == pytest.approx(
      out["t_star"] * np.log(100))
  assert cli.main(["oracle", "--family", "gaussian", "--means", mu, "--eps-good", "0.1"]) == 0
  text = capsys.readouterr().out
  assert "T*_eps(nu) = 1/Gamma_eps   621.077" in text and "answer" in text
  assert cli.main(["oracle", "--means", mu, "--eps-good", "0.1", "--method", "optax"]) == 2
  assert "exact method" in capsys.readouterr().err


def test_eps_good_runs_report_t_star_eps(capsys):
  """simulate's summary and `jbai run` (JSON and text) give T*_eps, its log and
  the ratio against it."""
  mu = [1.0, 0.97, 0.95, 0.5, 0.3]
  res = jbai.simulate(jax.random.key(0), "gaussian", mu, "tcb", 0.01, 4, eps_good=0.1)
  rec = res.summary[0]
  assert rec["t_star"] == pytest.approx(621.0768, abs=1e-3)
  assert rec["t_star_log"] == pytest.approx(rec["t_star"] * np.log(100))
  assert rec["ratio"] == pytest.approx(rec["mean_tau"] / rec["t_star_log"])
  base = ["run", "--family", "gaussian", "--means", ",".join(map(str, mu)), "--rule", "tcb",
          "--delta", "0.01", "--trials", "4", "--eps-good", "0.1"]
  assert cli.main(base + ["--json"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert out["t_star"] == pytest.approx(rec["t_star"]) and out["ratio"] == pytest.approx(
      rec["ratio"])
  assert cli.main(base) == 0
  text = capsys.readouterr().out
  assert "T*_eps(nu)                 621.08" in text
