"""Likelihood-ratio gradients of E[tau] and P(error) through the simulator.

Statistical checks compare estimates with references inside confidence intervals
at a stated level, with fixed keys (each test is deterministic). Where several
comparisons are made at once, the level is Bonferroni-corrected so that the
family of comparisons holds at the stated level."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

import jbai


def budget(n: int) -> jbai.Threshold:
  """A 'threshold' that stops every trial at exactly t = n (a fixed budget): the
  answer is then the empirical best arm after n rewards."""

  def init(delta, num_arms):
    del num_arms
    return {"n": jnp.asarray(n, jnp.int32), "zero": jnp.zeros_like(delta)}

  def value(params, family, arm_stats, top, ch):
    del family, top, ch
    return jnp.where(arm_stats.t >= params["n"], -jnp.inf, jnp.inf) + params["zero"]

  return jbai.Threshold("budget", init, value, (("n", n),))


def z_value(level: float, comparisons: int = 1) -> float:
  """Two-sided normal quantile for `comparisons` intervals holding jointly at `level`."""
  return float(norm.ppf(1 - (1 - level) / (2 * comparisons)))


def test_gradient_of_the_error_after_a_fixed_budget_is_exact():
  """Round-robin on two Gaussian arms (sigma = 1) for n = 50 rewards: the empirical
  best arm is wrong with probability 1 - Phi(Delta sqrt(n) / 2), whose derivative
  in mu_0 is -phi(z) sqrt(n) / 2 (and the opposite in mu_1). E[tau] = n exactly, so
  its gradient is 0 exactly."""
  n, means = 50, jnp.array([0.2, 0.0])
  est = jbai.estimate(jax.random.key(7), "gaussian", means, "uniform", 0.5, 20_000,
                      threshold=budget(n))
  z = float(means[0] - means[1]) * math.sqrt(n) / 2
  exact_err = 1 - norm.cdf(z)
  slope = norm.pdf(z) * math.sqrt(n) / 2
  assert np.all(np.asarray(est.trials.tau) == n)
  np.testing.assert_array_equal(est.grad_mean_tau["means"], 0.0)
  zq = z_value(0.99, 3)  # 99% jointly over the three comparisons below
  assert abs(est.error_rate - exact_err) < zq * est.error_rate_se
  g, se = est.grad_error_rate["means"], est.grad_error_rate_se["means"]
  assert abs(g[0] + slope) < zq * se[0] and abs(g[1] - slope) < zq * se[1]
  assert se[0] < 0.03 * slope  # the check has power: a 3% standard error


def test_jax_grad_is_the_likelihood_ratio_estimate_and_nan_where_undefined():
  key, means = jax.random.key(1), jnp.array([1.0, 0.5, 0.0])
  fam = jbai.families.gaussian()
  est = jbai.estimate(key, fam, means, "tcb", [0.1, 1e-3], 64)
  jac = jax.jacobian(lambda m: jbai.estimate(key, fam, m, "tcb", [0.1, 1e-3], 64).mean_tau)(means)
  np.testing.assert_allclose(jac, est.grad_mean_tau["means"], rtol=1e-12)
  assert est.mean_tau.shape == (2,) and est.grad_mean_tau["means"].shape == (2, 3)
  assert np.all(np.diff(np.asarray(est.mean_tau)) > 0)  # smaller delta, longer trials
  # TCB's eps (a deterministic choice) and delta have no likelihood-ratio gradient
  d_eps = jax.grad(lambda e: jbai.estimate(key, fam, means, "tcb", 0.1, 64,
                                           params={"eps": e}).mean_tau)(1.0)
  d_delta = jax.grad(lambda d: jbai.estimate(key, fam, means, "tcb", d, 64).mean_tau)(0.1)
  assert np.isnan(d_eps) and np.isnan(d_delta)
  # under jit and vmap over instances
  batched = jax.jit(jax.vmap(lambda m: jbai.estimate(key, fam, m, "tcb", 0.1, 64).mean_tau))
  out = batched(jnp.stack([means, means.at[1].set(0.8)]))
  np.testing.assert_allclose(out[0], est.mean_tau[0], rtol=1e-12)
  assert out[1] > out[0]


@pytest.mark.parametrize("family, means", [
    ("gaussian", [1.0, 0.5, 0.2]),
])
def test_likelihood_ratio_agrees_with_finite_differences(family, means):
  """LR gradient of E[tau] in every mean against central differences with common
  random numbers (h = 0.03), jointly at 99% (Bonferroni over the arms), delta = 0.1."""
  key, means = jax.random.key(5), jnp.array(means)
  n = 2000
  est = jbai.estimate(key, family, means, "tcb", 0.1, n)
  zq = z_value(0.99, len(means))
  for arm in range(len(means)):
    fd = jbai.finite_difference(jax.random.key(6), family, means, "tcb", 0.1, n, wrt=arm,
                                h=0.03)
    g, se = est.grad_mean_tau["means"][arm], est.grad_mean_tau_se["means"][arm]
    assert abs(g - fd.mean_tau) < zq * math.hypot(se, fd.mean_tau_se), (arm, g, se, fd)


def test_finite_difference_in_a_runtime_parameter():
  """TCB's eps: the central difference with common random numbers is finite, and
  a parameter the rule does not have is refused."""
  fd = jbai.finite_difference(jax.random.key(0), "gaussian", jnp.array([1.0, 0.5, 0.2]),
                              "tcb", 0.1, 64, wrt="eps", h=0.5)
  assert np.isfinite(fd.mean_tau) and fd.mean_tau_se > 0
  with pytest.raises(ValueError, match="no runtime parameter 'beta'"):
    jbai.finite_difference(jax.random.key(0), "gaussian", jnp.array([1.0, 0.5]), "tcb", 0.1,
                           8, wrt="beta", h=0.1)


def test_cli_grad_prints_gradients_next_to_the_oracle(capsys):
  from jbai import cli
  code = cli.main(["grad", "--means", "-1,-1.5,-2", "--rule", "tcb", "--delta", "0.01",
                   "--trials", "300", "--json"])
  out = json.loads(capsys.readouterr().out)
  assert code == 0
  for key in ("mean_tau", "grad_mean_tau", "grad_mean_tau_se", "error_rate",
              "grad_error_rate", "grad_t_star_log", "trials"):
    assert key in out, key
  assert out["trials"] == 300 and len(out["grad_mean_tau"]) == 3
  # raising the best mean shortens the trials, in the simulation and in the bound
  assert out["grad_mean_tau"][0] + 3 * out["grad_mean_tau_se"][0] < 0
  assert out["grad_t_star_log"][0] < 0 < out["grad_t_star_log"][1]
  code = cli.main(["grad", "--means", "1,0.5", "--rule", "tcb,ebtc", "--delta", "0.1,0.01",
                   "--trials", "50"])
  text = capsys.readouterr().out
  assert code == 0 and text.count("dE[tau]/dmu") == 4


@pytest.mark.slow
def test_likelihood_ratio_agrees_with_finite_differences_on_every_case():
  """experiments/gradient_check.py: Gaussian and Bernoulli instances (K = 3), delta =
  0.1 and 1e-3, E[tau] and P(error), every mean for TCB and beta for T3C: every
  LR gradient within the Bonferroni bound of its finite difference (jointly 99%)."""
  import os
  import runpy
  path = os.path.join(os.path.dirname(__file__), "..", "experiments", "gradient_check.py")
  check = runpy.run_path(path)
  rows = check["comparisons"](trials=10_000)
  # At delta = 1e-3 no trial ends in error: both P(error) gradients are exactly 0.
  bound = check["bonferroni"](check["informative"](rows))
  bad = [r for r in rows if abs(r["z"]) > bound]
  assert not bad, bad
  # the comparisons have power: the LR standard errors are small against the values
  assert sum(r["lr_se"] < 0.25 * abs(r["lr"]) for r in rows if r["quantity"] == "E[tau]") >= 6
