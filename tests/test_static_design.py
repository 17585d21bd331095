"""The static randomized design (`jbai.rules.static`) and runtime parameters with a
shape: pulls drawn from softmax(logits), likelihood-ratio gradients in the logits."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

import jbai

MEANS = np.array([1.0, 0.6, 0.4])
LOGITS = np.array([0.4, -0.3, 0.1], np.float32)


@pytest.mark.slow  # 400 trials of a statistical check; the design's trials: below
def test_pulls_follow_the_design_proportions():
  """N_i(tau) - w_i tau is a martingale stopped at tau, so by Wald's identities the
  sum over trials of N_i - w_i tau has mean 0 and variance w_i (1 - w_i) sum tau:
  each arm's z within 4.5 (a false alarm below 1e-5 per arm)."""
  r = jbai.rollout(jax.random.key(0), "gaussian", MEANS, jbai.rules.static(), 0.05, 400,
                   params={"logits": LOGITS}, scores=False)
  w = np.asarray(jax.nn.softmax(LOGITS), np.float64)
  tau = np.asarray(r.tau, np.float64)
  counts = np.asarray(r.counts, np.float64)
  z = (counts - tau[:, None] * w).sum(0) / np.sqrt(w * (1 - w) * tau.sum())
  assert tau.sum() > 20_000
  assert np.all(np.abs(z) < 4.5), z


def test_logits_in_the_factory_and_as_a_runtime_parameter_give_the_same_trials():
  key = jax.random.key(1)
  built = jbai.rollout(key, "gaussian", MEANS, jbai.rules.static(tuple(LOGITS)), 0.1, 32)
  given = jbai.rollout(key, "gaussian", MEANS, jbai.rules.static(), 0.1, 32,
                       params={"logits": LOGITS})
  np.testing.assert_array_equal(built.tau, given.tau)
  np.testing.assert_array_equal(built.counts, given.counts)


def test_the_gradient_in_the_logits_has_their_shape_and_is_what_jax_grad_returns():
  key = jax.random.key(2)
  est = jbai.estimate(key, "gaussian", MEANS, jbai.rules.static(), [0.1, 1e-3], 200,
                      params={"logits": LOGITS})
  assert est.grad_mean_tau["logits"].shape == (2, 3)
  assert est.grad_mean_tau_se["logits"].shape == (2, 3)
  assert est.grad_error_rate["logits"].shape == (2, 3)
  assert np.all(np.asarray(est.grad_mean_tau_se["logits"]) > 0)

  def mean_tau(theta):
    return jbai.estimate(key, "gaussian", MEANS, jbai.rules.static(), 1e-3, 200,
                         params={"logits": theta}).mean_tau

  g = jax.jit(jax.grad(mean_tau))(jnp.asarray(LOGITS))
  np.testing.assert_allclose(g, est.grad_mean_tau["logits"][1], rtol=1e-4, atol=1e-3)
  score = jbai.estimate(key, "gaussian", MEANS, jbai.rules.static(), 1e-3, 200,
                        params={"logits": LOGITS}, estimator="score")
  assert score.grad_mean_tau["logits"].shape == (3,)


@pytest.mark.parametrize("logits, message", [
    (np.zeros(4), r"params\['logits'\] must be of shape \(3,\), got shape \(4,\)"),
    (0.0, r"params\['logits'\] must be of shape \(3,\), got shape \(\)"),
    (np.array([0.0, np.nan, 1.0]), "logits must be finite"),
])
def test_a_bad_design_is_refused_naming_it(logits, message):
  with pytest.raises(ValueError, match=message):
    jbai.rollout(jax.random.key(0), "gaussian", MEANS, jbai.rules.static(), 0.1, 8,
                 params={"logits": logits})


def test_the_factory_refuses_bad_logits():
  with pytest.raises(ValueError, match="logits must be finite"):
    jbai.rules.static((0.0, float("inf")))
  with pytest.raises(ValueError, match="2 logits for 3 arms"):
    jbai.rollout(jax.random.key(0), "gaussian", MEANS, jbai.rules.static((0.0, 1.0)), 0.1, 8)


@pytest.mark.slow
def test_the_logits_gradient_agrees_with_finite_differences():
  """Along three directions v, v . (causal likelihood-ratio gradient) against the
  central difference of E[tau] at theta +- h v with common random numbers (h =
  0.05: its O(h^2) bias is far below the standard errors here), each from
  20,000 trials with independent keys; |z| within the Bonferroni bound for the
  six comparisons jointly at 99% (z taken with an upper bound on the projected
  gradient's se, so the test is conservative)."""
  trials, h, deltas = 20_000, 0.05, [0.1, 1e-3]
  key = jax.random.key(7)
  est = jbai.estimate(key, "gaussian", MEANS, jbai.rules.static(), deltas, trials,
                      params={"logits": LOGITS})
  directions = np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0], [1.0, 0.0, 0.0]], np.float32)
  bound = norm.ppf(1 - 0.01 / (2 * len(directions) * len(deltas)))
  for i, v in enumerate(directions):
    runs = [jbai.rollout(jax.random.fold_in(key, 1 + i), "gaussian", MEANS,
                         jbai.rules.static(), deltas, trials,
                         params={"logits": LOGITS + s * h * v}, scores=False) for s in (1, -1)]
    d = (np.asarray(runs[0].tau, np.float64) - np.asarray(runs[1].tau, np.float64)) / (2 * h)
    fd, fd_se = d.mean(0), d.std(0, ddof=1) / np.sqrt(trials)
    lr = np.asarray(est.grad_mean_tau["logits"]) @ v
    # The entries come from the same trials: sum |v_i| se_i bounds the se of v . g.
    lr_se = np.asarray(est.grad_mean_tau_se["logits"]) @ np.abs(v)
    z = (lr - fd) / np.sqrt(lr_se ** 2 + fd_se ** 2)
    assert np.all(np.abs(z) < bound), (v, lr, fd, z)
