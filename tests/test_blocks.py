"""A block's rewards do not depend on where it is cut (issue 79).

Successive Rejects and Sequential Halving take an arm's share of a phase as one
block of pulls (`jbai.rules.base.Rule.pulls`); a run to a budget must stop inside
a block at each checkpoint, and a run with scores takes it a reward a step. The
lane reads every prefix of a block off its total by halving splits under the
family's conditional law (`jbai.core.blocks.prefix`), so the same key gives
the same trials whatever the checkpoints, the chunks, or the scores.

The statistical tests (slow) reject at p < 1e-3 each, with fixed keys (a run is
reproducible).
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jbai
from jbai.core import blocks, lane as lane_lib

MEANS = {"bernoulli": [0.5, 0.45, 0.43, 0.4, 0.3], "gaussian": [0.5, 0.45, 0.43, 0.4, 0.3]}
T, TRIALS, LANES = 2000, 64, 4  # one pool size: one program a run
ALPHA = 1e-3


def _at(res, times):
  """The recommendations of a budget result at `times` ([n, len(times)])."""
  where = [list(res.checkpoints).index(t) for t in times]
  return np.asarray(res.recommendation)[:, where]


# The fast tier runs one pair (SR on Bernoulli arms compiles a scores program of
# about 20 s of CPU: slow tier, with the other six pairs).
FAST = {("sequential-halving", "gaussian")}


@pytest.mark.parametrize("rule, family", [
    pytest.param(rule, family, marks=() if (rule, family) in FAST else pytest.mark.slow)
    for rule, family in itertools.product(
        ["successive-rejects", "sequential-halving", "uniform", "anytime-halving"],
        ["bernoulli", "gaussian"])])
def test_checkpoints_chunks_and_scores_give_the_same_trials(rule, family):
  """The same key with checkpoints T alone (through `jbai.estimate`'s run, which
  records scores), 3 and 15 (chunks of 2,048 and of 7 steps) gives the same
  answers and counts at T, and the same recommendations at the checkpoints the
  runs share. Before issue 79, SR on Bernoulli arms differed in about 8% of the
  trials between 15 checkpoints and T alone."""
  key, means = jax.random.key(1), MEANS[family]
  three = jbai.budget(key, family, means, rule, budget=T, n_trials=TRIALS, checkpoints=3,
                      lanes=LANES)
  fifteen = jbai.budget(key, family, means, rule, budget=T, n_trials=TRIALS,
                        checkpoints=15, chunk=7, lanes=LANES)
  scored = jbai.estimate(key, family, means, rule, None, TRIALS, budget=T, lanes=LANES)
  for res in (three, fifteen):
    np.testing.assert_array_equal(np.asarray(res.recommendation)[:, -1],
                                  np.asarray(scored.trials.answer))
    np.testing.assert_array_equal(np.asarray(res.counts), np.asarray(scored.trials.counts))
  shared = sorted(set(three.checkpoints.tolist()) & set(fifteen.checkpoints.tolist()))
  assert len(shared) >= 2
  np.testing.assert_array_equal(_at(three, shared), _at(fifteen, shared))
  assert (np.asarray(scored.trials.counts).sum(-1) == T).all()


def _block(family, key, mean, length, first=3):
  """A block of arm 1 of `length` rewards, its first numbered `first`, in the trial
  of key data `key`, and key_at, the key of the arm's n-th reward."""
  fam = jbai.families.get(family)
  arm = jnp.asarray(1, jnp.int32)
  first, length = (jnp.asarray(x, lane_lib.count_dtype()) for x in (first, length))
  total = fam.sample_block(lane_lib.reward_key(key, arm, first), jnp.asarray(mean), length)
  block = blocks.Block(arm=arm, first=first, length=length, total=total,
                       base=jnp.zeros_like(total))
  return fam, block, lambda n: lane_lib.reward_key(key, arm, n)


def _prefixes(family, mean, length, n_keys, seed=0):
  """[n_keys, length + 1] the first statistic of each prefix 0..length of one
  block, one trial key per row."""
  def one(key):
    fam, block, key_at = _block(family, jax.random.key_data(key), mean, length)
    return jax.vmap(lambda q: blocks.prefix(fam, key_at, block, q)[0])(
        jnp.arange(length + 1, dtype=lane_lib.count_dtype()))

  keys = jax.random.split(jax.random.key(seed), n_keys)
  return np.asarray(jax.jit(jax.vmap(one))(keys), np.float64)


def test_a_blocks_prefixes_are_one_path_whatever_is_read():
  """A prefix is the same read alone or beside the others, the first is 0, and
  Bernoulli prefixes climb by 0 or 1 to the block's total."""
  full = _prefixes("bernoulli", 0.3, 13, 64)
  assert (full[:, 0] == 0).all() and np.isin(np.diff(full, axis=1), (0.0, 1.0)).all()
  assert 0 < full[:, -1].mean() < 13

  def alone(key):
    fam, block, key_at = _block("bernoulli", jax.random.key_data(key), 0.3, 13)
    return blocks.prefix(fam, key_at, block, jnp.asarray(6, lane_lib.count_dtype()))[0]

  keys = jax.random.split(jax.random.key(0), 64)
  np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(alone))(keys)), full[:, 6])


@pytest.mark.slow
def test_a_bernoulli_blocks_rewards_are_independent_with_the_arms_law():
  """The 5 rewards of a Bernoulli(0.3) block, read off its prefixes, fall on each
  of the 32 patterns with probability 0.3^k 0.7^(5-k) (chi-square, 40,000 blocks):
  the total's binomial and the hypergeometric splits make them iid."""
  p, length, n = 0.3, 5, 40_000
  rewards = np.diff(_prefixes("bernoulli", p, length, n, seed=1), axis=1).astype(int)
  pattern = rewards @ (1 << np.arange(length))
  observed = np.bincount(pattern, minlength=2**length)
  ones = np.array([bin(i).count("1") for i in range(2**length)])
  expected = n * p**ones * (1 - p)**(length - ones)
  assert stats.chisquare(observed, expected).pvalue > ALPHA


@pytest.mark.slow
def test_a_gaussian_blocks_rewards_are_independent_with_the_arms_law():
  """The 6 rewards of a Gaussian block of mean -0.4, read off its prefixes (the
  Brownian-bridge splits), are N(-0.4, 1) each (Kolmogorov-Smirnov) and
  uncorrelated (each of the 15 correlations within 4.5 / sqrt(n), Bonferroni-safe
  at 1e-3), over 20,000 blocks."""
  mean, length, n = -0.4, 6, 20_000
  rewards = np.diff(_prefixes("gaussian", mean, length, n, seed=2), axis=1)
  for j in range(length):
    assert stats.kstest(rewards[:, j] - mean, "norm").pvalue > ALPHA / length, j
  corr = np.corrcoef(rewards.T)[np.triu_indices(length, 1)]
  assert np.abs(corr).max() < 4.5 / math.sqrt(n)


def test_a_block_is_never_cut_past_the_cap():
  """A budget run's blocks end by T: every trial takes exactly T rewards, in float32
  with int32 counts (float64 in the test above), checkpoints inside blocks."""
  with jax.enable_x64(False):
    res = jbai.budget(jax.random.key(3), "bernoulli", [0.6, 0.5, 0.4], "successive-rejects",
                      budget=101, n_trials=8, checkpoints=[7, 50], lanes=LANES)
    assert (np.asarray(res.counts).sum(-1) == 101).all()
    assert np.asarray(res.counts).dtype == np.int32
