"""Anytime Sequential Halving against an independent doubling-trick implementation.

`doubling_trick_sh` below is plain numpy, written from the definitions (Karnin,
Koren & Somekh 2013, Algorithm 1, restarted on budgets B_j = B_0 2^j), not from
jbai's code: each phase runs Sequential Halving from scratch on its own rewards
(round r: t_r = floor(B_j / (|S_r| R)) rewards of each arm of S_r, round-robin in
index order; the ceil(|S_r|/2) best averages of the round stay), then pulls its
one arm to the end of B_j. The answer at time t is the arm of the latest phase
whose last round has closed by t, else the empirical best arm.

Both read the same rewards: the n-th reward of arm a in trial j is jbai's
(`jbai.core.lane.reward_key` of trial j's key), Gaussian, so no averages tie and
the comparison is exact, trial for trial, at every t from K to T.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai.core.inputs import raw_key
from jbai.core.lane import reward_key
from jbai.random import prng
from jbai.state import count_dtype

HORIZON = 460  # past the end of 3 or more phases for every K below
TRIALS = 40


def doubling_trick_sh(rewards: np.ndarray, horizon: int) -> np.ndarray:
  """[horizon + 1] the answer after t rewards (-1 before any), from per-arm
  reward stacks `rewards` [K, N]."""
  num_arms = rewards.shape[0]
  rounds = max(1, math.ceil(math.log2(num_arms)))
  budget = num_arms * rounds
  used = np.zeros(num_arms, int)
  total, seen = np.zeros(num_arms), []   # every reward's sum; the arms pulled, in order
  answers = np.full(horizon + 1, -1)
  done_at, done_arm = [], []

  def pull(arm):
    reward = rewards[arm, used[arm]]
    used[arm] += 1
    total[arm] += reward
    seen.append(arm)
    t = len(seen)
    if t <= horizon and not done_at:  # no phase done: the empirical best
      answers[t] = int(np.argmax(np.where(used > 0, total / np.maximum(used, 1), -np.inf)))
    return reward

  while len(seen) < horizon:
    start, alive = len(seen), list(range(num_arms))
    for _ in range(rounds):
      if len(alive) == 1:
        break
      share = budget // (len(alive) * rounds)
      sums = {arm: 0.0 for arm in alive}
      for _ in range(share):
        for arm in sorted(alive):
          sums[arm] += pull(arm)
      ranked = sorted(alive, key=lambda arm: -sums[arm] / share)
      alive = sorted(ranked[:(len(alive) + 1) // 2])
    done_at.append(len(seen))
    done_arm.append(alive[0])
    while len(seen) - start < budget:
      pull(alive[0])
    budget *= 2
  for at, arm in zip(done_at, done_arm):
    answers[at:] = arm
  return answers


def jbai_rewards(key, means, n_trials: int, n_rewards: int) -> np.ndarray:
  """[n_trials, K, n_rewards] the rewards jbai's trial j draws from arm a."""
  family = jbai.families.gaussian()
  means = jnp.asarray(means, jnp.result_type(float))  # the dtype of jbai's run

  def one(j, arm, n):
    trial = jax.random.key_data(jax.random.fold_in(prng.wrap(raw_key(key)), j))
    return family.sample(reward_key(trial, arm, n.astype(count_dtype())), means[arm])

  grid = np.meshgrid(np.arange(n_trials), np.arange(len(means)), np.arange(n_rewards),
                     indexing="ij")
  return np.asarray(jax.jit(jax.vmap(one))(*(g.reshape(-1) for g in grid))).reshape(
      grid[0].shape)


@pytest.mark.parametrize("num_arms", [2, 3, 4, 8, 16])
def test_anytime_halving_is_the_doubling_trick_trial_for_trial(num_arms):
  """Every recommendation at every t in [K, T], every trial, equals the numpy
  doubling trick's on the same rewards (K = 2, 4, 8, 16, whose rounds use a
  phase's budget exactly, and K = 3, whose do from the second phase on)."""
  means = np.linspace(0.6, 0.0, num_arms)
  key = jax.random.key(num_arms)
  res = jbai.budget(key, "gaussian", means, "anytime-halving", budget=HORIZON,
                    checkpoints=list(range(1, HORIZON + 1)), n_trials=TRIALS)
  rewards = jbai_rewards(key, means, TRIALS, HORIZON)
  expected = np.stack([doubling_trick_sh(r, HORIZON)[1:] for r in rewards])
  ours = np.asarray(res.recommendation)
  np.testing.assert_array_equal(ours[:, num_arms - 1:], expected[:, num_arms - 1:])
  assert (np.diff(expected, axis=1) != 0).any()  # the answers change over time
