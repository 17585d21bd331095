"""jbai.linear's statistics (rank-one updates), GLLRs and thresholds."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from jbai.linear import (best_arm_gllr, empty_linear_stats, from_counts, level_gllr,
                         log_det_ratio, observe_linear, thresholds, top_m_gllr)

RNG = np.random.default_rng(7)
X = RNG.normal(size=(6, 3))
SIGMA = RNG.uniform(0.5, 1.5, 6)
THETA = RNG.normal(size=3)


def _pulls(n, rng):
  arms = rng.integers(0, 6, n)
  rewards = X[arms] @ THETA + SIGMA[arms] * rng.normal(size=n)
  return arms, rewards


def _run(stats, arms, rewards):
  step = lambda s, ar: (observe_linear(s, jnp.asarray(X), jnp.asarray(SIGMA), ar[0], ar[1]), None)
  return jax.jit(lambda s, a, r: jax.lax.scan(step, s, (a, r))[0])(stats, arms, rewards)


def test_rank_one_updates_match_the_counts():
  """200 Sherman-Morrison steps from lambda I = the state rebuilt from per-arm
  counts and sums (V = lambda I + X^T diag(N / sigma^2) X), and numpy's weighted
  ridge regression on the raw pulls."""
  arms, rewards = _pulls(200, np.random.default_rng(0))
  s = _run(empty_linear_stats(6, 3, 1.0), jnp.asarray(arms), jnp.asarray(rewards))
  counts = np.bincount(arms, minlength=6)
  sums = np.bincount(arms, rewards, minlength=6)
  ref = from_counts(X, SIGMA, counts, sums, ridge=1.0)
  np.testing.assert_allclose(np.asarray(s.v_inv), np.asarray(ref.v_inv), rtol=1e-10, atol=1e-13)
  np.testing.assert_allclose(np.asarray(s.theta), np.asarray(ref.theta), rtol=1e-9)
  np.testing.assert_array_equal(np.asarray(s.counts), counts)
  assert int(s.t) == 200
  w = 1 / SIGMA[arms] ** 2
  v = np.eye(3) + (X[arms] * w[:, None]).T @ X[arms]
  np.testing.assert_allclose(np.asarray(s.theta), np.linalg.solve(v, X[arms].T @ (w * rewards)),
                             rtol=1e-9)
  assert abs(float(log_det_ratio(s, 1.0)) - np.linalg.slogdet(v)[1]) <= 1e-9


def test_no_ridge_after_a_spanning_pull():
  """lambda = 0: the state starts from one pull of each arm (as FWS's and
  LinBAI.jl's codes do, there with lambda = 1), then rank-one updates give
  ordinary weighted least squares."""
  rng = np.random.default_rng(1)
  first = np.arange(6)
  r0 = X @ THETA + SIGMA * rng.normal(size=6)
  s = from_counts(X, SIGMA, np.ones(6, int), r0, ridge=0.0)
  arms, rewards = _pulls(50, rng)
  s = _run(s, jnp.asarray(arms), jnp.asarray(rewards))
  all_arms, all_r = np.concatenate([first, arms]), np.concatenate([r0, rewards])
  w = 1 / SIGMA[all_arms]
  ref = np.linalg.lstsq(X[all_arms] * w[:, None], all_r * w, rcond=None)[0]
  np.testing.assert_allclose(np.asarray(s.theta), ref, rtol=1e-9)
  with pytest.raises(ValueError, match="needs a ridge > 0, got 0.0"):
    empty_linear_stats(6, 3, 0.0)


def _brute_force(arms, rewards, ridge, alternative):
  """inf over the alternative of the penalised negative log-likelihood, minus its
  minimum: SLSQP on the raw pulls, with the alternative's constraints."""
  w = 1 / SIGMA[arms] ** 2
  nll = lambda lam: 0.5 * np.sum(w * (rewards - X[arms] @ lam) ** 2) + 0.5 * ridge * lam @ lam
  v = ridge * np.eye(3) + (X[arms] * w[:, None]).T @ X[arms]
  theta = np.linalg.solve(v, X[arms].T @ (w * rewards))
  res = optimize.minimize(nll, theta, method="SLSQP", constraints=alternative,
                          options={"ftol": 1e-14, "maxiter": 500})
  return res.fun - nll(theta)


def test_gllrs_against_brute_force():
  """Best arm, top 2 and above a level: the closed forms against the penalised
  likelihood minimised over each half-space alternative, from the raw pulls."""
  arms, rewards = _pulls(40, np.random.default_rng(2))
  s = _run(empty_linear_stats(6, 3, 0.5), jnp.asarray(arms), jnp.asarray(rewards))
  th = np.asarray(s.theta)
  mu = X @ th
  best = int(np.argmax(mu))
  g = best_arm_gllr(jnp.asarray(X), s.v_inv, s.theta)
  want = [_brute_force(arms, rewards, 0.5,
                       [{"type": "ineq", "fun": lambda lam, i=i: X[i] @ lam - X[best] @ lam}])
          for i in range(6) if i != best]
  assert int(g.answer) == best
  np.testing.assert_allclose(np.delete(np.asarray(g.costs), best), want, rtol=1e-5, atol=1e-9)
  assert abs(float(g.value) - min(want)) <= 1e-5 * min(want)

  top = np.argsort(-mu)[:2]
  g2 = top_m_gllr(jnp.asarray(X), s.v_inv, s.theta, 2)
  pairs = [_brute_force(arms, rewards, 0.5,
                        [{"type": "ineq", "fun": lambda lam, i=i, j=j: X[i] @ lam - X[j] @ lam}])
           for j in top for i in range(6) if i not in top]
  assert abs(float(g2.value) / min(pairs) - 1) <= 1e-5

  tau = float(np.median(mu))
  g3 = level_gllr(jnp.asarray(X), s.v_inv, s.theta, tau)
  flips = [_brute_force(arms, rewards, 0.5, [{"type": "ineq", "fun": lambda lam, a=a: (
      -1 if mu[a] >= tau else 1) * (X[a] @ lam - tau)}]) for a in range(6)]
  np.testing.assert_allclose(np.asarray(g3.costs), flips, rtol=1e-5, atol=1e-9)
  with pytest.raises(ValueError, match="m must be in"):
    top_m_gllr(jnp.asarray(X), s.v_inv, s.theta, 6)


@pytest.mark.slow
def test_self_normalized_threshold_covers_theta():
  """Abbasi-Yadkori et al.'s beta(t, delta): P(exists t <= 300: (1/2) ||theta_hat -
  theta||^2_{V_t} > beta(t, delta)) <= delta = 0.1, over 2,000 uniform-sampling
  trials (numpy, per-arm noise, ridge 1, S = ||theta||); the Wilson 99.9% upper
  bound on the violation rate must be below delta."""
  rng = np.random.default_rng(4)
  n, horizon, delta, ridge = 2000, 300, 0.1, 1.0
  arms = rng.integers(0, 6, (n, horizon))
  noise = SIGMA[arms] * rng.normal(size=(n, horizon))
  xw = X[arms] / SIGMA[arms][..., None]           # x / sigma   [n, T, d]
  v = ridge * np.eye(3) + np.cumsum(xw[..., :, None] * xw[..., None, :], axis=1)
  s_t = np.cumsum(xw * (noise / SIGMA[arms])[..., None], axis=1)  # sum x eta / sigma^2
  err = np.linalg.solve(v, (s_t - ridge * THETA)[..., None])[..., 0]  # theta_hat - theta
  stat = 0.5 * np.einsum("ntd,ntde,nte->nt", err, v, err)
  beta = thresholds.self_normalized(np.linalg.slogdet(v)[1] - 3 * math.log(ridge), delta,
                                    ridge, np.linalg.norm(THETA))
  bad = np.mean(np.any(stat > np.asarray(beta), axis=1))
  z = 3.29
  upper = (bad + z * z / (2 * n) + z * math.sqrt(bad * (1 - bad) / n + z * z / (4 * n * n))) / (
      1 + z * z / n)
  assert upper <= delta


def test_heuristic_threshold():
  """log((1 + log t) / delta): log 4 at t = e, delta = 1/2; t < 1 is read as 1."""
  assert float(thresholds.heuristic(math.e, 0.5)) == pytest.approx(math.log(4), rel=1e-12)
  assert float(thresholds.heuristic(0, 0.1)) == pytest.approx(math.log(10), rel=1e-12)
