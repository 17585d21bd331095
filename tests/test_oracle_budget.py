"""The fixed budget's oracle (`jbai.oracle.budget`): Glynn & Juneja's rate of a
static allocation, its maximiser w_FB, and `jbai oracle --budget`."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

import jbai
from jbai import cli
from jbai.oracle import budget_allocation, budget_rate, optimal_allocation

from helpers import uniform_error


def pair_rate(family: str, p: float, q: float, a: float, b: float) -> float:
  """inf_x [a KL(x, p) + b KL(x, q)] in closed form: with alpha = a / (a + b),
  -(a + b) log sum_y p(y)^alpha q(y)^(1 - alpha) for Bernoulli laws (the normaliser
  of their geometric mixture), a b (p - q)^2 / (2 (a + b)) for unit Gaussians."""
  if family == "gaussian":
    return a * b * (p - q) ** 2 / (2 * (a + b))
  alpha = a / (a + b)
  return -(a + b) * math.log(p ** alpha * q ** (1 - alpha) +
                             (1 - p) ** alpha * (1 - q) ** (1 - alpha))


def rate(family: str, means, w) -> float:
  best = int(np.argmax(means))
  return min(pair_rate(family, means[best], m, w[best], w[j])
             for j, m in enumerate(means) if j != best)


def scipy_budget_allocation(family: str, means):
  """max_w min_j rate_j(w) on the simplex, by SLSQP on its epigraph (w, r)."""
  k = len(means)
  cons = [{"type": "eq", "fun": lambda z: np.sum(z[:k]) - 1.0}]
  best = int(np.argmax(means))
  for j in range(k):
    if j != best:
      cons.append({"type": "ineq", "fun": lambda z, j=j: pair_rate(
          family, means[best], means[j], z[best], z[j]) - z[k]})
  z0 = np.r_[np.full(k, 1.0 / k), 0.0]
  res = optimize.minimize(lambda z: -z[k], z0, method="SLSQP", constraints=cons,
                          bounds=[(1e-9, 1.0)] * k + [(0.0, None)],
                          options={"ftol": 1e-15, "maxiter": 1000})
  assert res.success, res.message
  return res.x[:k], res.x[k]


BERNOULLI = [[0.9, 0.6, 0.3, 0.1], [0.5, 0.45, 0.43, 0.4], [0.2, 0.1, 0.05, 0.01]]


@pytest.mark.parametrize("means", [[1.0, 0.5, 0.0], [1.2, 1.0, 1.0, 1.0, 1.0],
                                   [0.0, -0.3, -0.31, -2.0]])
def test_gaussian_w_fb_is_the_fixed_confidence_w(means):
  """Unit Gaussian arms: KL(x, mu) = KL(mu, x), so w_FB = w* and Gamma_FB = Gamma."""
  with jax.enable_x64(True):
    w_fb, g_fb = budget_allocation("gaussian", means)
    w, g, _ = optimal_allocation("gaussian", means, method="exact")
  np.testing.assert_allclose(w_fb, w, atol=1e-9)
  assert abs(float(g_fb) - float(g)) <= 1e-12


@pytest.mark.parametrize("means", BERNOULLI)
def test_bernoulli_w_fb_against_scipy(means):
  """Bernoulli arms: w_FB and Gamma_FB against SLSQP on the closed-form rate; the
  rate of any allocation against the closed form; and w_FB is not w*."""
  with jax.enable_x64(True):
    w_fb, g_fb = budget_allocation("bernoulli", means)
    w_star = np.asarray(optimal_allocation("bernoulli", means, method="exact")[0])
    rng = np.random.default_rng(0)
    ws = rng.dirichlet(np.ones(len(means)), 8)
    rates = np.asarray(jax.jit(lambda m, w: budget_rate(jbai.families.bernoulli(), m, w))(
        jnp.asarray(means), jnp.asarray(ws)))
  w_ref, g_ref = scipy_budget_allocation("bernoulli", means)
  np.testing.assert_allclose(w_fb, w_ref, atol=2e-5)
  assert abs(float(g_fb) / g_ref - 1) < 1e-7
  assert abs(rate("bernoulli", means, np.asarray(w_fb)) / float(g_fb) - 1) < 1e-10
  np.testing.assert_allclose(rates, [rate("bernoulli", means, w) for w in ws], rtol=1e-9)
  # The KL reversed moves the allocation (by 0.004 to 0.04 on these instances).
  assert np.max(np.abs(np.asarray(w_fb) - w_star)) > 1e-3


def test_rate_is_differentiable_and_batched():
  """Gamma_FB(w, nu) and Gamma_FB(nu) are batched over instances, and their
  gradients in the means match central differences (w away from w_FB, where the
  minimum over j is a tie)."""
  fam = jbai.families.bernoulli()
  with jax.enable_x64(True):
    means = jnp.asarray(BERNOULLI)
    w_fb, g = jbai.oracle.budget_solve(fam, means)
    assert w_fb.shape == means.shape and g.shape == (3,)
    w = jnp.asarray([0.4, 0.3, 0.2, 0.1])
    h = 1e-6
    for f in (lambda m: budget_rate(fam, m, w), lambda m: jbai.oracle.budget_solve(fam, m)[1]):
      f = jax.jit(f)
      grad = np.asarray(jax.jit(jax.grad(f))(means[0]))
      fd = [(f(means[0].at[i].add(h)) - f(means[0].at[i].add(-h))) / (2 * h)
            for i in range(4)]
      np.testing.assert_allclose(grad, np.asarray(fd), rtol=1e-5, atol=1e-9)


def test_uniform_error_decays_at_the_rate_of_uniform():
  """Round robin on unit Gaussian arms, exact P(error at T) (numerical
  integration): P ~ C T^(-1/2) exp(-T Gamma_FB), so -log P(T) + log(T) / 2 grows
  by Gamma_FB(uniform) per reward as T grows: its slope over each doubling of T
  from 400 to 3,200 falls toward Gamma_FB (1.10, 1.05, 1.03 of it)."""
  means = [1.0, 0.5, 0.5, 0.5]
  with jax.enable_x64(True):
    g = float(jax.jit(lambda m, w: budget_rate(jbai.families.gaussian(), m, w))(
        jnp.asarray(means), jnp.full(4, 0.25)))
  assert abs(g - rate("gaussian", means, [0.25] * 4)) < 1e-12
  ts = [400, 800, 1600, 3200]
  y = [-math.log(uniform_error(means, t)) + 0.5 * math.log(t) for t in ts]
  slopes = np.diff(y) / np.diff(ts) / g
  assert np.all(np.diff(slopes) < 0) and np.all(slopes > 1)
  assert slopes[-1] < 1.04


@pytest.mark.slow
def test_simulated_uniform_error_decays_at_the_rate_of_uniform():
  """-log P(error at T) / T from the simulator, 200,000 trials of round robin to
  T = 400 on unit Gaussian arms: at T = 100, 200 and 400 it falls toward
  Gamma_FB(uniform) (1.52, 1.31 and 1.19 of it, exactly), each within 4 standard
  errors of the exact value (at T = 400: 120 errors, a standard error of 0.015
  Gamma_FB; the exact values are 8 of them apart)."""
  means = [1.0, 0.5, 0.5, 0.5]
  n = 200_000
  with jax.enable_x64(False):
    res = jbai.budget(jax.random.key(3), "gaussian", means, "uniform", budget=400,
                      n_trials=n, checkpoints=[100, 200])
  g = rate("gaussian", means, [0.25] * 4)
  ratios = []
  for t, p_hat in zip(res.checkpoints.tolist(), np.asarray(res.error, float)):
    p = uniform_error(means, t)
    se = math.sqrt((1 - p) / (n * p)) / t / g  # of -log(p_hat) / (t g)
    ratios.append(-math.log(p_hat) / t / g)
    assert abs(ratios[-1] + math.log(p) / t / g) <= 4 * se, (t, p_hat, p)
  assert ratios[0] > ratios[1] > ratios[2] > 1


def test_cli_oracle_budget(capsys):
  """`jbai oracle --budget`: w_FB beside w, Gamma_FB, and w's rate at a budget, as
  JSON and as the table; with --eps-good a one-line refusal, exit code 2."""
  argv = ["oracle", "--family", "bernoulli", "--means", "0.9,0.6,0.3,0.1", "--budget"]
  assert cli.main(argv + ["--json"]) == 0
  out = json.loads(capsys.readouterr().out)
  w_ref, g_ref = scipy_budget_allocation("bernoulli", [0.9, 0.6, 0.3, 0.1])
  np.testing.assert_allclose(out["w_budget"], w_ref, atol=2e-5)
  assert abs(out["gamma_budget"] / g_ref - 1) < 1e-7
  assert abs(out["gamma_budget_of_w"] / rate("bernoulli", out["means"], out["w"]) - 1) < 1e-9
  assert out["gamma_budget_of_w"] < out["gamma_budget"]
  assert cli.main(argv) == 0
  text = capsys.readouterr().out
  assert "w_FB(nu)" in text and "Gamma_FB(nu)" in text
  assert cli.main(argv + ["--eps-good", "0.1"]) == 2
  err = capsys.readouterr().err.strip()
  assert "\n" not in err and "--eps-good" in err
