"""Helpers shared by several test modules (not a test module itself)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import cli, rules
from jbai.state import empty_stats, observe


def trajectory(family, means, steps, seed=0):
  """Projected sample means after each of `steps` pulls (round robin with random
  tie-breaks), as a simulation's rule sees them; from the first step on which
  every arm has a pull."""
  means = jnp.asarray(means)
  k = means.shape[0]

  def step(st, key):
    k_arm, k_reward = jax.random.split(key)
    arm = jnp.argmin(st.counts - 0.5 * jax.random.uniform(k_arm, (k,), means.dtype))
    st = observe(family, st, arm, family.sample(k_reward, means[arm]))
    return st, st.mean

  keys = jax.random.split(jax.random.key(seed), steps)
  _, mus = jax.jit(lambda k_: jax.lax.scan(step, empty_stats(family, k, means.dtype), k_))(keys)
  return mus[k:]


def eps_run_three_ways(name, means, eps, n, tmp_path, capsys, delta=0.01, seed=3):
  """Rule `name` built for `eps` on Gaussian `means`, run by `jbai run`,
  `jbai.simulate` and `jbai.rollout` with the same seed; asserts that the three
  give the same tau, answer, correct and counts per trial, and that the run's
  JSON says what its error rate counts and its mean tau. Returns (the run's JSON
  record, the simulate Result)."""
  out = tmp_path / "r.json"
  assert cli.main(["run", "--family", "gaussian", "--means", ",".join(map(str, means)),
                   "--rule", name, "--eps-good", str(eps), "--delta", str(delta),
                   "--trials", str(n), "--seed", str(seed), "--json", "--out", str(out)]) == 0
  rec = json.loads(capsys.readouterr().out)
  arrays = np.load(tmp_path / "r.npz")
  key, rule = jax.random.key(seed), rules.get(name, eps_good=eps)
  sim = jbai.simulate(key, "gaussian", means, rule, delta, n, eps_good=eps)
  ro = jbai.rollout(key, "gaussian", means, rule, delta, n, eps_good=eps, scores=False)
  for field in ("tau", "answer", "correct", "counts"):
    np.testing.assert_array_equal(arrays[field], getattr(sim, field), err_msg=field)
    np.testing.assert_array_equal(np.asarray(getattr(ro, field)), getattr(sim, field),
                                  err_msg=field)
  assert rec["eps_good"] == eps and rec["mean_tau"] == pytest.approx(sim.tau.mean())
  return rec, sim
