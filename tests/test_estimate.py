"""Likelihood-ratio gradients of E[tau] and P(error) through the simulator.

Statistical checks compare estimates with references inside confidence intervals
at a stated level, with fixed keys (each test is deterministic). Where several
comparisons are made at once, the level is Bonferroni-corrected so that the
family of comparisons holds at the stated level."""

import json
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

import jbai


def z_value(level: float, comparisons: int = 1) -> float:
  """Two-sided normal quantile for `comparisons` intervals holding jointly at `level`."""
  return float(norm.ppf(1 - (1 - level) / (2 * comparisons)))


def test_gradients_at_a_fixed_budget_are_exact():
  """Round-robin on two Gaussian arms (sigma = 1) run to a budget of n = 50 rewards:
  the empirical best arm is wrong with probability p = 1 - Phi(Delta sqrt(n) / 2),
  whose derivative in mu_0 is -phi(z) sqrt(n) / 2 (and the opposite in mu_1); the
  simple regret is Delta p, of derivative p - Delta phi(z) sqrt(n) / 2 in mu_0 (its
  pathwise part p plus the likelihood ratio's). E[tau] = n exactly, so its gradient
  is 0 exactly."""
  n, means = 50, jnp.array([0.2, 0.0])
  est = jbai.estimate(jax.random.key(7), "gaussian", means, "uniform", None, 20_000, budget=n)
  gap = float(means[0] - means[1])
  z = gap * math.sqrt(n) / 2
  exact_err = 1 - norm.cdf(z)
  slope = norm.pdf(z) * math.sqrt(n) / 2
  assert np.all(np.asarray(est.trials.tau) == n) and not np.any(est.trials.hit_cap)
  # tau = n: the causal score sum_{t < n} S_t = (n - 1) S_n - sum_s s s_s lies in the
  # span of the control variates (phi = 1, t), so the regression removes it up to
  # rounding; the whole-score estimator's leave-one-out baseline gives 0 exactly.
  np.testing.assert_allclose(est.grad_mean_tau["means"], 0.0, atol=1e-6)
  score = jbai.estimate(jax.random.key(7), "gaussian", means, "uniform", None, 64,
                        budget=n, estimator="score")
  np.testing.assert_array_equal(score.grad_mean_tau["means"], 0.0)
  zq = z_value(0.99, 6)  # 99% jointly over the six comparisons below
  assert abs(est.error_rate - exact_err) < zq * est.error_rate_se
  g, se = est.grad_error_rate["means"], est.grad_error_rate_se["means"]
  assert abs(g[0] + slope) < zq * se[0] and abs(g[1] - slope) < zq * se[1]
  assert se[0] < 0.03 * slope  # the check has power: a 3% standard error
  assert abs(est.regret - gap * exact_err) < zq * est.regret_se
  g, se = est.grad_regret["means"], est.grad_regret_se["means"]
  d_regret = exact_err - gap * slope
  assert abs(g[0] - d_regret) < zq * se[0] and abs(g[1] + d_regret) < zq * se[1]
  # jax.grad of the regret is its gradient, the pathwise part included
  d = jax.grad(lambda m: jbai.estimate(jax.random.key(7), "gaussian", m, "uniform", None,
                                       20_000, budget=n).regret)(means)
  np.testing.assert_allclose(d, est.grad_regret["means"], rtol=1e-10)


def test_a_run_to_a_budget_is_that_of_jbai_budget_as_a_pure_function():
  """rollout(budget=T, checkpoints=...) records the recommendations of jbai.budget
  (Successive Rejects: its phases end at the checkpoints), under jit; a stopped
  run's options are refused with a budget, and checkpoints without one."""
  args = (jax.random.key(3), "gaussian", [0.6, 0.5, 0.3])
  host = jbai.budget(*args, "successive-rejects", 90, 50, checkpoints=[20, 45])
  run = jax.jit(lambda m: jbai.rollout(args[0], args[1], m, "successive-rejects", None, 50,
                                       scores=False, budget=90, checkpoints=[20, 45]))
  trials = run(jnp.asarray(args[2]))
  np.testing.assert_array_equal(trials.answer, host.recommendation)
  np.testing.assert_array_equal(trials.tau, np.broadcast_to([20, 45, 90], (50, 3)))
  np.testing.assert_array_equal(np.mean(~np.asarray(trials.correct), axis=0), host.error)
  with pytest.raises(ValueError, match="no delta"):
    jbai.rollout(*args, "uniform", 0.1, 8, budget=90)
  with pytest.raises(ValueError, match="no max_steps"):
    jbai.estimate(*args, "uniform", None, 8, max_steps=100, budget=90)
  with pytest.raises(ValueError, match="checkpoints are the times of a run to a budget"):
    jbai.rollout(*args, "uniform", 0.1, 8, checkpoints=[5])
  with pytest.raises(ValueError, match="budget must be at least"):
    jbai.estimate(*args, "uniform", None, 8, budget=2)


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


def test_finite_difference_in_a_runtime_parameter():
  """TCB's eps: the central difference with common random numbers is finite, and
  a parameter the rule does not have is refused."""
  fd = jbai.finite_difference(jax.random.key(0), "gaussian", jnp.array([1.0, 0.5, 0.2]),
                              "tcb", 0.1, 64, wrt="eps", h=0.5)
  assert np.isfinite(fd.mean_tau) and fd.mean_tau_se > 0
  with pytest.raises(ValueError, match="no runtime parameter 'beta'"):
    jbai.finite_difference(jax.random.key(0), "gaussian", jnp.array([1.0, 0.5]), "tcb", 0.1,
                           8, wrt="beta", h=0.1)


def test_richardson_corrects_every_trial_by_the_first_quarter():
  """finite_difference(extrapolate=True) is mean(D(h)) - mean((D(2h) - D(h)) / 3),
  the second mean over the first ceil(n / 4) trials, which the runs at x +- 2h
  share with those at x +- h (trial j is the same at any n_trials)."""
  from jbai.core.finite_differences import BIAS_SHARE
  key, means, n, h = jax.random.key(1), jnp.array([1.0, 0.6, 0.5, 0.3]), 22, 0.1
  m = -(-n // BIAS_SHARE)
  args = (key, "gaussian", means, "t3c", [1e-1, 1e-3])
  tau = lambda beta, trials: np.asarray(jbai.rollout(*args, trials, params={"beta": beta},
                                                     scores=False).tau, np.float64)
  d1 = (tau(0.5 + h, n) - tau(0.5 - h, n)) / (2 * h)
  d2 = (tau(0.5 + 2 * h, m) - tau(0.5 - 2 * h, m)) / (4 * h)
  assert np.array_equal(tau(0.5 + h, m), tau(0.5 + h, n)[:m])
  terms = d1.copy()
  terms[:m] -= n / m * (d2 - d1[:m]) / 3
  fd = jbai.finite_difference(*args, n, wrt="beta", h=h, extrapolate=True)
  np.testing.assert_allclose(fd.mean_tau, d1.mean(0) - ((d2 - d1[:m]) / 3).mean(0), rtol=1e-5)
  np.testing.assert_allclose(fd.mean_tau_se, terms.std(0, ddof=1) / np.sqrt(n), rtol=1e-4)
  plain = jbai.finite_difference(*args, n, wrt="beta", h=h)
  np.testing.assert_allclose(plain.mean_tau, d1.mean(0), rtol=1e-5)
  assert np.all(fd.mean_tau != plain.mean_tau)


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


@pytest.mark.slow  # compiles a run to a budget with its scores; the refusals: below
def test_cli_grad_at_a_budget(capsys):
  """`jbai grad --budget`: P(error) and the simple regret with their gradients per
  rule and budget (an anytime rule runs once for both budgets)."""
  from jbai import cli
  code = cli.main(["grad", "--family", "bernoulli", "--means", "0.6,0.4,0.3", "--rule",
                   "uniform", "--budget", "30,60", "--trials", "200", "--json"])
  out = json.loads(capsys.readouterr().out)
  assert code == 0
  assert [(r["label"], r["budget"]) for r in out] == [("uniform", 30), ("uniform", 60)]
  for rec in out:
    for key in ("error_rate", "simple_regret", "grad_error_rate", "grad_simple_regret_se"):
      assert key in rec, key
    assert len(rec["grad_error_rate"]) == 3 and rec["trials"] == 200
  # raising the best mean makes the recommendation right more often
  assert out[1]["grad_error_rate"][0] + 3 * out[1]["grad_error_rate_se"][0] < 0
  code = cli.main(["grad", "--family", "bernoulli", "--means", "0.6,0.4,0.3", "--rule",
                   "uniform", "--budget", "30,60", "--trials", "200"])  # the program above
  text = capsys.readouterr().out
  assert code == 0 and text.count("P(error at T)") == 2 and "dP(error)/d (causal)" in text


def test_cli_grad_at_a_budget_refuses_the_options_of_a_run_that_stops(capsys):
  from jbai import cli
  code = cli.main(["grad", "--means", "1,0.5", "--rule", "uniform", "--budget", "20",
                   "--delta", "0.1"])
  err = capsys.readouterr().err
  assert code == 2 and "--delta belongs to a run that stops" in err and err.count("\n") == 1


def gradient_check() -> dict:
  """The namespace of experiments/gradient_check.py."""
  import os
  import runpy
  return runpy.run_path(os.path.join(os.path.dirname(__file__), "..", "experiments",
                                     "gradient_check.py"))


def on_bernoulli_arms_for_beta(cases: list) -> list:
  """The cases of gradient_check.py but the Gaussian one of T3C's beta: a rule's
  score in beta is that of its own random choices, whatever the family (the
  Bernoulli case checks it; the Gaussian ones, in the means)."""
  return [c for c in cases if not (c[3] is not None and c[0] == "gaussian")]


@pytest.mark.slow
def test_likelihood_ratio_agrees_with_finite_differences_on_every_case():
  """experiments/gradient_check.py: Gaussian and Bernoulli instances (K = 3), delta =
  0.1 and 1e-3, E[tau] and P(error), every mean for TCB and beta for T3C (on
  Bernoulli arms): every LR gradient within the Bonferroni bound of its finite
  difference (jointly 99%)."""
  check = gradient_check()
  rows = check["comparisons"](trials=10_000, cases=on_bernoulli_arms_for_beta(check["CASES"]))
  # At delta = 1e-3 no trial ends in error: both P(error) gradients are exactly 0.
  bound = check["bonferroni"](check["informative"](rows))
  bad = [r for r in rows if abs(r["z"]) > bound]
  assert not bad, bad
  # the comparisons have power: the LR standard errors are small against the values
  assert sum(r["lr_se"] < 0.25 * abs(r["lr"]) for r in rows if r["quantity"] == "E[tau]") >= 6


@pytest.mark.slow
def test_gradients_at_a_budget_agree_with_finite_differences():
  """experiments/gradient_check.py --budget: a Gaussian and a Bernoulli instance
  (K = 3) run to a budget, P(error) and the simple regret at two checkpoints, in
  every mean (round robin, TCB) and in T3C's beta (on Bernoulli arms): every
  likelihood-ratio gradient within the Bonferroni bound of its CRN finite
  difference (jointly 99%)."""
  check = gradient_check()
  rows = check["comparisons"](trials=10_000, cases=on_bernoulli_arms_for_beta(
      check["BUDGET_CASES"]), budget=True)
  bound = check["bonferroni"](check["informative"](rows))
  bad = [r for r in rows if abs(r["z"]) > bound]
  assert not bad, bad
  # the comparisons have power: most standard errors are small against the values
  means = [r for r in rows if r["input"] != "beta"]
  assert sum(r["lr_se"] < 0.25 * abs(r["lr"]) for r in means) >= 0.75 * len(means)


def test_causal_records_follow_the_summation_by_parts_identities():
  """The lane's causal records, against the identities they rest on: with S the
  score at tau and W = sum_{s < tau} s s_s (the control variate of phi = t),
  sum_{t < tau} S_t = (tau - 1) S - W, and the control variate of phi = 1 is S."""
  res = jbai.rollout(jax.random.key(3), "bernoulli", [0.7, 0.5, 0.4], jbai.rules.t3c(beta=0.5),
                     [0.1, 1e-3], 200)
  tau = np.asarray(res.tau, np.float64)
  for score, causal, cv, extra in (
      (res.reward_score, res.causal_score, np.moveaxis(np.asarray(res.score_cv), -2, -1),
       (slice(None),)),
      (res.policy_score["beta"], res.causal_policy_score["beta"],
       res.policy_score_cv["beta"], ())):
    score, causal, cv = (np.asarray(a) for a in (score, causal, cv))
    t = tau[(...,) + (None,) * len(extra)]
    scale = np.abs(causal).max() + 1
    np.testing.assert_allclose(cv[..., 0], score, atol=1e-9 * scale)
    np.testing.assert_allclose((t - 1) * score - cv[..., 1], causal, atol=1e-9 * scale)
  assert np.abs(np.asarray(res.policy_score["beta"])).max() > 0


def test_future_noise_control_variates_have_their_structure():
  """The columns after the state baselines (`jbai.core.lane._record_scores`): all
  N_CONTROLS recorded; the rule's-choice column group is exactly 0 for TCB (no coin)
  and not for T3C; the reward-noise groups are not 0; finite everywhere."""
  from jbai.core.lane import N_CONTROLS, N_FEATURES
  f = N_FEATURES
  for rule, coin in (("tcb", False), ("t3c", True)):
    res = jbai.rollout(jax.random.key(3), "bernoulli", [0.7, 0.5, 0.4], jbai.rules.get(rule),
                       [0.1, 1e-3], 200)
    cv = np.asarray(res.score_cv)  # [n, D, C, K]
    assert cv.shape[-2] == N_CONTROLS and np.all(np.isfinite(cv))
    assert np.abs(cv[..., f:3 * f, :]).max() > 0
    assert (np.abs(cv[..., 3 * f:, :]).max() > 0) == coin
    if coin:
      pcv = np.asarray(res.policy_score_cv["beta"])
      assert pcv.shape[-1] == N_CONTROLS and np.abs(pcv[..., 3 * f:]).max() > 0


@pytest.mark.parametrize("family, means", [
    ("gaussian", [1.0, 0.6, 0.4]),
    ("bernoulli", [0.7, 0.5, 0.4]),
])
def test_the_causal_estimator_agrees_with_the_score_estimator_with_less_variance(family, means):
  """Both estimators from the same trials (T3C, beta and the means, E[tau]): they
  agree within their joint 99% intervals (Bonferroni over the 4 gradients; the two
  are correlated, so the bound is conservative), and the causal one, the
  default, has the smaller standard error in the means."""
  key, means = jax.random.key(11), jnp.array(means)
  rule = jbai.rules.t3c(beta=0.5)
  causal = jbai.estimate(key, family, means, rule, 0.05, 2000, params={"beta": 0.5})
  score = jbai.estimate(key, family, means, rule, 0.05, 2000, params={"beta": 0.5},
                        estimator="score")
  zq = z_value(0.99, 4)
  for name in ("means", "beta"):
    g, se = np.atleast_1d(causal.grad_mean_tau[name]), np.atleast_1d(causal.grad_mean_tau_se[name])
    g0, se0 = np.atleast_1d(score.grad_mean_tau[name]), np.atleast_1d(score.grad_mean_tau_se[name])
    assert np.all(np.abs(g - g0) < zq * np.hypot(se, se0)), (name, g, se, g0, se0)
  assert np.all(np.asarray(causal.grad_mean_tau_se["means"]) <
                np.asarray(score.grad_mean_tau_se["means"]))
  assert np.all(np.isfinite(np.asarray(causal.grad_error_rate_se["means"])))
  with pytest.raises(ValueError, match="estimator must be one of"):
    jbai.estimate(key, family, means, rule, 0.05, 8, estimator="pathwise")


def test_no_silent_zero_through_rollout():
  """jax.grad and jax.jvp through rollout's tau, answer and counts raise an error
  naming jbai.estimate (a pathwise derivative would be a silent 0); inputs under
  stop_gradient pass."""
  from jbai.core.guard import NoPathwiseDerivative
  key, means = jax.random.key(0), jnp.array([1.0, 0.5, 0.0])

  def run(m, field, beta=0.5):
    res = jbai.rollout(key, "gaussian", m, jbai.rules.t3c(), 0.1, 16, params={"beta": beta})
    return jnp.mean(getattr(res, field).astype(m.dtype))

  for field in ("tau", "answer", "counts"):
    with pytest.raises(NoPathwiseDerivative, match="jbai.estimate"):
      jax.grad(run)(means, field)
  with pytest.raises(NoPathwiseDerivative, match="jbai.estimate"):
    jax.jvp(lambda m: run(m, "tau"), (means,), (jnp.ones(3),))
  with pytest.raises(NoPathwiseDerivative, match="jbai.estimate"):
    jax.grad(lambda b: run(means, "tau", b))(0.5)
  assert jax.grad(lambda m: run(jax.lax.stop_gradient(m), "tau") + jnp.sum(m))(means)[0] == 1
  assert np.isfinite(jax.jit(run, static_argnums=1)(means, "tau"))


@pytest.mark.slow
def test_no_silent_zero_in_second_derivatives():
  """jax.hessian of estimate(...).mean_tau is NaN, not 0 (its first derivative is
  the likelihood-ratio estimate)."""
  key, means = jax.random.key(0), jnp.array([1.0, 0.5, 0.0])
  mean_tau = lambda m: jbai.estimate(key, "gaussian", m, "tcb", 0.1, 32).mean_tau
  assert np.all(np.isfinite(jax.grad(mean_tau)(means)))
  assert np.all(np.isnan(jax.hessian(mean_tau)(means)))


def test_cli_grad_in_beta_and_eps_with_each_estimator(capsys):
  """`jbai grad --wrt beta|eps --estimator ...`: one entry per parameter, the
  simulated steps, and eps refused without finite differences."""
  from jbai import cli
  base = ["grad", "--means", "1,0.5,0.2", "--delta", "0.1", "--trials", "200", "--json"]
  for estimator in ("causal", "score", "fd", "richardson"):
    assert cli.main(base + ["--rule", "t3c", "--beta", "0.5", "--wrt", "beta",
                            "--estimator", estimator]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["wrt"] == "beta" and out["estimator"] == estimator
    assert len(out["grad_mean_tau"]) == len(out["grad_mean_tau_se"]) == 1
    assert np.isfinite(out["grad_mean_tau"][0]) and out["grad_mean_tau_se"][0] > 0
    # the run with scores, then the points (Richardson's at beta +- 2h on a quarter)
    runs = {"fd": 3, "richardson": 3.5}.get(estimator, 1)
    assert out["simulated_steps"] >= 200 * runs
  assert cli.main(base + ["--rule", "tcb", "--eps", "0.5", "--wrt", "eps",
                          "--estimator", "fd", "--h", "0.2"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert len(out["grad_mean_tau"]) == 1 and out["simulated_steps"] > 0
  assert cli.main(base + ["--rule", "tcb", "--wrt", "eps", "--estimator", "causal"]) == 2
  # the default, auto: Richardson in beta, the CRN finite difference in eps (with
  # their h), causal in the means
  assert cli.main(base + ["--rule", "t3c", "--beta", "0.5", "--wrt", "beta"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert out["estimator"] == "richardson" and out["h"] == 0.1
  assert cli.main(base + ["--rule", "tcb", "--eps", "0.5", "--wrt", "eps"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert out["estimator"] == "fd" and out["h"] == 0.02
  assert cli.main(base + ["--rule", "tcb"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert len(out["grad_mean_tau"]) == 3 and out["estimator"] == "causal"


@pytest.mark.parametrize("wrt, h, fragment", [
    ("beta", 0.3, "beta + 2h = 1.1 is outside the domain (beta must be in (0, 1)"),
    (1, 0.2, "means[1] - 2h = -0.1 is outside the domain"),
])
def test_a_step_outside_the_domain_is_refused_before_anything_runs(monkeypatch, wrt, h,
                                                                    fragment):
  """Richardson's points x +- 2h are checked before the first run: the message names
  the point and h, not a value the user never typed found seconds later."""
  from jbai.core import finite_differences
  monkeypatch.setattr(finite_differences, "rollout", lambda *a, **k: pytest.fail("ran"))
  family = jbai.families.bernoulli() if wrt == 1 else "gaussian"
  with pytest.raises(ValueError, match=re.escape(fragment)):
    jbai.finite_difference(jax.random.key(0), family, [0.9, 0.3, 0.2] if wrt == 1 else
                           [1.0, 0.5, 0.0], "t3c", 0.1, 20, wrt, h, extrapolate=True)


@pytest.mark.slow  # compiles for several seconds: the fast tier stays within 5 min cold
def test_estimate_takes_instances_as_rollout_does_each_row_with_its_own_gradient():
  """[I, K] means: a leading [I] axis on every field, and jax.grad of the sum puts
  each row's likelihood-ratio gradient in its row (the surrogate row by row)."""
  table = jnp.array([[1.0, 0.5, 0.0], [1.0, 0.8, 0.0]])

  def total(m):
    est = jbai.estimate(jax.random.key(0), "gaussian", m, "tcb", 0.1, 32)
    return est.mean_tau.sum(), est

  grad, both = jax.grad(total, has_aux=True)(table)
  assert both.mean_tau.shape == (2,) and both.grad_mean_tau["means"].shape == (2, 3)
  assert both.trials.tau.shape == (2, 32)
  np.testing.assert_allclose(both.mean_tau, both.trials.tau.mean(axis=1), rtol=1e-6)
  np.testing.assert_allclose(grad, both.grad_mean_tau["means"], rtol=1e-5)
  assert not np.allclose(grad[0], grad[1])  # each row its own instance's
  with pytest.raises(ValueError, match=r"means must have shape \[K\] or \[I, K\]"):
    jbai.estimate(jax.random.key(0), "gaussian", jnp.ones((2, 2, 3)), "tcb", 0.1, 32)


def test_finite_difference_to_a_budget_needs_no_delta():
  """delta is left out of a run to a budget (the arguments after it by name); wrt
  and h are still required, each named in one line."""
  means = jnp.array([0.5, 0.4, 0.3])
  diff = jbai.finite_difference(jax.random.key(0), "gaussian", means, "uniform", n_trials=16,
                                wrt=0, h=0.05, budget=30)
  assert diff.regret is not None and np.isfinite(diff.error_rate)
  with pytest.raises(TypeError, match="finite_difference needs h"):
    jbai.finite_difference(jax.random.key(0), "gaussian", means, "uniform", n_trials=16,
                           wrt=0, budget=30)
