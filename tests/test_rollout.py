"""The functional core `jbai.rollout`: the same trials as `jbai.simulate`, inside a
user's jit and vmap, compiled once, and its recorded scores."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai.core import pool
from jbai.core import rollout as rollout_lib

FIELDS = ("tau", "answer", "correct", "hit_cap", "counts", "steps")


@pytest.mark.parametrize("family, means, rule", [
    ("gaussian", [1.0, 0.5, 0.4], "tcb"),
    ("bernoulli", [0.7, 0.5, 0.3], "ebtci"),
])
def test_rollout_gives_the_trials_of_simulate(family, means, rule):
  """Bit-identical per-trial results for the same key, whatever the pool sizes,
  with and without scores, for a delta vector and a batch of instances."""
  key = jax.random.key(3)
  sim = jbai.simulate(key, family, means, rule, [0.1, 1e-3], 40, lanes=9, chunk=37,
                      scores=True)
  core = jbai.rollout(key, family, means, rule, [0.1, 1e-3], 40, lanes=32)
  for name in FIELDS + ("final_stats", "reward_score", "causal_score"):
    np.testing.assert_array_equal(getattr(sim, name), np.asarray(getattr(core, name)),
                                  err_msg=name)
  # The control-variate records sum features of the state (the GLLR, the threshold)
  # that no decision reads; XLA:CPU may round such an expression differently in
  # programs for other pool sizes (docs/design/ties.md), so they agree to rounding.
  np.testing.assert_allclose(sim.score_cv, np.asarray(core.score_cv), rtol=1e-9, atol=0)
  batch = [means, list(np.roll(means, 1))]
  sim = jbai.simulate(key, family, batch, rule, 0.1, 10)
  core = jbai.rollout(key, family, batch, rule, 0.1, 10, scores=False)
  assert core.tau.shape == (2, 10) and core.final_stats is None
  for name in FIELDS:
    np.testing.assert_array_equal(getattr(sim, name), np.asarray(getattr(core, name)))


def test_rollout_inside_jit_and_vmap_over_beta_compiles_once(monkeypatch):
  rollout_lib._program.cache_clear()
  build = pool.build_chunk
  monkeypatch.setattr(pool, "build_chunk",
                      lambda *a: chex.assert_max_traces(build(*a), n=1))
  key = jax.random.key(0)
  rule = jbai.rules.ebtc()

  @jax.jit
  def leader_share(beta):
    res = jbai.rollout(key, "gaussian", [1.0, 0.5, 0.0], rule, 0.05, 30,  # one pool size
                       params={"beta": beta}, lanes=pool.MIN_LANES, scores=False)
    return jnp.mean(res.counts[:, 0] / res.counts.sum(-1))

  betas = jnp.array([0.2, 0.5, 0.8])
  shares = jax.vmap(leader_share)(betas)
  shares_again = jax.vmap(leader_share)(betas + 0.01)  # new values: no new trace
  assert rollout_lib._program.cache_info().misses == 1
  assert shares[0] + 0.2 < shares[2] and shares_again.shape == (3,)
  # each beta of the vmap gives the trials of a rule built with that beta
  alone = jbai.simulate(key, "gaussian", [1.0, 0.5, 0.0], jbai.rules.ebtc(beta=0.8), 0.05, 30,
                        lanes=8)
  np.testing.assert_allclose(shares[2], np.mean(alone.counts[:, 0] / alone.counts.sum(-1)),
                             rtol=1e-6)
  rollout_lib._program.cache_clear()


def test_rollout_vmaps_over_instances_and_deltas():
  key = jax.random.key(1)
  means = jnp.array([[1.0, 0.5, 0.0], [1.0, 0.8, 0.0]])
  per_instance = jax.vmap(lambda m: jbai.rollout(key, "gaussian", m, "tcb", 0.1, 16,
                                                 scores=False).tau)(means)
  np.testing.assert_array_equal(
      per_instance[1], jbai.simulate(key, "gaussian", [1.0, 0.8, 0.0], "tcb", 0.1, 16).tau)
  per_delta = jax.vmap(lambda d: jbai.rollout(key, "gaussian", means[0], "tcb", d, 16,
                                              scores=False).tau)(jnp.array([0.1, 1e-3]))
  vector = jbai.rollout(key, "gaussian", means[0], "tcb", [0.1, 1e-3], 16, scores=False).tau
  np.testing.assert_array_equal(per_delta.T, vector)


def test_scores_are_the_derivative_of_the_log_likelihood():
  """For exponential families the score comes from the final statistics, for the
  others it is summed reward by reward from the log-density: both agree, and a
  capped trial's score covers every reward."""
  key = jax.random.key(2)
  closed = jbai.families.weibull(shape=2.0)
  summed = closed._replace(name="weibull-summed-score", score=None)
  a = jbai.rollout(key, closed, [2.0, 1.5, 1.0], "tcb", [0.1, 1e-3], 12)
  b = jbai.rollout(key, summed, [2.0, 1.5, 1.0], "tcb", [0.1, 1e-3], 12)
  np.testing.assert_array_equal(a.tau, b.tau)
  np.testing.assert_allclose(a.reward_score, b.reward_score, rtol=1e-9, atol=1e-9)
  # at the largest tau, the score is that of the final statistics
  last = jnp.argmax(a.tau, axis=1)
  np.testing.assert_allclose(
      a.reward_score[jnp.arange(12), last],
      closed.score(a.counts, a.final_stats, jnp.array([2.0, 1.5, 1.0])), rtol=1e-9)
  capped = jbai.rollout(key, "gaussian", [1.0, 0.9], "uniform", 1e-9, 4, max_steps=20)
  assert capped.hit_cap.all() and np.all(capped.steps == 20)
  np.testing.assert_allclose(capped.reward_score,
                             capped.final_stats[..., 0] - capped.counts * jnp.array([1.0, 0.9]))


def test_rollout_rejects_bad_input():
  with pytest.raises(ValueError, match="tie for the best arm"):
    jbai.rollout(jax.random.key(0), "gaussian", [1.0, 1.0], "tcb", 0.1, 4)
  with pytest.raises(ValueError, match="delta must be in"):
    jbai.rollout(jax.random.key(0), "gaussian", [1.0, 0.0], "tcb", 1.5, 4)
  with pytest.raises(ValueError, match="no runtime parameter 'beta'"):
    jbai.rollout(jax.random.key(0), "gaussian", [1.0, 0.0], "tcb", 0.1, 4,
                 params={"beta": 0.5})


def test_a_traced_budget_reuses_the_program_and_gives_the_trials_of_a_concrete_one():
  """jbai.budget's T is a runtime value; so is rollout's, under the caller's jit:
  one trace serves every T, and its trials are those of a concrete T."""
  traces = []

  def correct(horizon):
    traces.append(horizon)
    return jbai.rollout(jax.random.key(3), "gaussian", [0.5, 0.4, 0.3], "sequential-halving",
                        None, 32, budget=horizon, scores=False).answer

  run = jax.jit(correct)
  for horizon in (40, 90):
    np.testing.assert_array_equal(run(horizon), jbai.rollout(
        jax.random.key(3), "gaussian", [0.5, 0.4, 0.3], "sequential-halving", None, 32,
        budget=horizon, scores=False).answer)
  assert len(traces) == 1  # one program for both budgets
  with pytest.raises(TypeError, match="'successive-rejects' computes its phases from the budget"):
    jax.jit(lambda t: jbai.rollout(jax.random.key(0), "bernoulli", [0.5, 0.4, 0.3],
                                   "successive-rejects", None, 4, budget=t))(30)
  with pytest.raises(TypeError, match=r"checkpoints=\[10\] need the budget's value"):
    jax.jit(lambda t: jbai.rollout(jax.random.key(0), "bernoulli", [0.5, 0.4, 0.3], "uniform",
                                   None, 4, budget=t, checkpoints=[10]))(30)
  with pytest.raises(TypeError, match="a traced budget must be an integer scalar"):
    jax.jit(lambda t: jbai.rollout(jax.random.key(0), "bernoulli", [0.5, 0.4, 0.3], "uniform",
                                   None, 4, budget=t))(30.0)
