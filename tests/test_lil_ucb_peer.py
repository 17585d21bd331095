"""lil'UCB against the `best-arm` package (0.1.1): its loop, transcribed from
best_arm/algorithms/lil_ucb.py (mode "theory") and LilUCBStoppingCondition, run
on jbai's own reward streams (the n-th reward of arm a of trial j,
`jbai.core.lane.reward_key`), stops at jbai's tau trial for trial once its
c_eps is Lemma 3's; best-arm's own c_eps (the whole product to the power
1 + eps) is the one difference (`jbai.rules.lil_ucb`'s docstring)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai.core.lane import reward_key


def reward_streams(key, means, n_max: int, trial: int) -> np.ndarray:
  """[K, n_max] the first n_max rewards of each arm of Bernoulli trial `trial`,
  as jbai.simulate draws them (trial key fold_in(key, trial))."""
  family = jbai.families.bernoulli()
  trial_key = jax.random.key_data(jax.random.fold_in(key, trial))
  mu = jnp.asarray(means, float)

  def draw(arm, n):
    return family.sample(reward_key(trial_key, arm, n), mu[arm])
  grid = jax.vmap(lambda a: jax.vmap(lambda n: draw(a, n))(jnp.arange(n_max, dtype=jnp.int32)))
  return np.asarray(jax.jit(grid)(jnp.arange(len(means))))


def best_arm_lil_ucb(stream, confidence, whole_power, eps=0.01, beta=1.0, sigma2=0.25):
  """(tau, answer) of best-arm 0.1.1's LilUCB.run on `stream`, transcribed; with
  whole_power=False, Lemma 3's c_eps in place of its own."""
  num_arms = stream.shape[0]
  lam = ((2.0 + beta) / beta) ** 2
  ratio, inv_log = (2.0 + eps) / eps, 1.0 / math.log(1.0 + eps)
  c_e = (ratio * inv_log) ** (1.0 + eps) if whole_power else ratio * inv_log ** (1.0 + eps)
  delta = ((math.sqrt(1.0 + confidence) - 1.0) ** 2) / (4.0 * c_e)
  counts, rewards = np.ones(num_arms, int), stream[:, 0].astype(float)
  while not any(counts[i] >= 1 + lam * (counts.sum() - counts[i]) for i in range(num_arms)):
    p_hat, scores = rewards / counts, np.empty(num_arms)
    for i in range(num_arms):
      term = np.log(np.log((1.0 + eps) * counts[i]) / delta)
      scores[i] = p_hat[i] + (1.0 + beta) * (1.0 + np.sqrt(eps)) * np.sqrt(
          2.0 * sigma2 * (1.0 + eps) * term / counts[i])
    arm = int(np.argmax(scores))
    rewards[arm] += stream[arm, counts[arm]]
    counts[arm] += 1
  return int(counts.sum()), int(np.argmax(rewards / counts))


@pytest.mark.slow  # one compilation of lil-ucb in float64 and 3 x 2 Python loops of ~3,000 steps
def test_best_arms_lil_ucb_on_jbais_rewards_stops_at_jbais_tau():
  """Three trials on [0.9, 0.5, 0.4] at delta = 0.05 in float64: best-arm's loop
  with Lemma 3's c_eps gives jbai's tau and answer in each; with its own c_eps it
  needs no fewer rewards in all (its delta' is smaller) and more in some."""
  means, delta, n, key = [0.9, 0.5, 0.4], 0.05, 3, jax.random.key(7)
  with jax.enable_x64(True):
    res = jbai.simulate(key, "bernoulli", [means], "lil-ucb", delta=delta, n_trials=n,
                        max_steps=1_000_000)
    tau, answer = np.asarray(res.tau).reshape(-1), np.asarray(res.answer).reshape(-1)
    extra = []
    for j in range(n):
      stream = reward_streams(key, means, int(tau.max()) + 1000, j)
      assert best_arm_lil_ucb(stream, delta, whole_power=False) == (tau[j], answer[j])
      extra.append(best_arm_lil_ucb(stream, delta, whole_power=True)[0] - tau[j])
  assert min(extra) >= 0 and max(extra) > 0, extra
