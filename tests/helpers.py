"""Helpers shared by several test modules (not a test module itself)."""

import json
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import jbai
from jbai import cli, rules
from jbai.state import empty_stats, observe


def suite_cache_dir() -> str:
  """The suite's persistent compilation cache (conftest.py): $JBAI_COMPILATION_CACHE_DIR,
  else `tests` beside the per-user default; subprocesses given it load the suite's
  programs."""
  from jbai.host import caches
  return os.environ.get(caches.ENV_DIR) or os.path.join(
      os.path.dirname(caches.default_dir()), "tests")


def assert_delta_correct(run, delta: float, n: int = 2000, level: float = 0.01):
  """The suite's check of a rule's P(error) <= delta, one-sided at `level`, in two
  looks; no trial may reach the cap (it would count as an error).

  `run(n_trials)` returns a `jbai.simulate` Result of one instance. A trial depends
  on its index alone, so the first n / 4 trials of a run of n are a run of n / 4. The check
  passes at that first look if its errors already show an error rate below delta,
  P(Binomial(n / 4, delta) <= errors) < level. Otherwise it runs all n trials and
  fails if P(Binomial(n, delta) >= errors) < level. So a rule whose error rate is
  at most delta fails with probability at most `level` (the second look's test
  alone), and one whose error rate is delta or more passes at the first look with
  probability at most `level`. Most rules are far inside delta, and a quarter of
  the trials settles them (at n = 2,000 and delta = 0.1: up to 34 errors in 500).
  Returns the last look's Result.
  """
  for n_trials in (n // 4, n):
    res = run(n_trials)
    assert not np.any(res.hit_cap), f"{int(np.sum(res.hit_cap))} trials at the cap"
    errors = int(np.sum(~np.asarray(res.correct)))
    if n_trials < n and stats.binom.cdf(errors, n_trials, delta) < level:
      return res
  assert stats.binom.sf(errors - 1, n, delta) >= level, f"{errors} errors in {n} trials"
  return res


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


def uniform_error(means, t: int, sigma: float = 1.0) -> float:
  """The exact P(error) of round-robin sampling on Gaussian arms after t rewards:
  arm i has n_i = t // K (+1 for the first t mod K arms) and the answer is the
  largest sample mean: int phi_0(x) (1 - prod_{j>0} Phi_j(x)) dx, to a relative
  1e-10 however small it is."""
  k = len(means)
  n = [t // k + (1 if i < t % k else 0) for i in range(k)]
  sd = [sigma / math.sqrt(m) for m in n]
  f = lambda x: stats.norm.pdf(x, means[0], sd[0]) * -math.expm1(sum(
      stats.norm.logcdf(x, means[j], sd[j]) for j in range(1, k)))
  lo, hi = means[0] - 40 * sd[0], means[0] + 12 * sd[0]
  return integrate.quad(f, lo, hi, limit=400, epsabs=0.0, epsrel=1e-10,
                        points=[means[0], max(means[1:])])[0]


def write(tmp_path, text, name="spec.toml"):
  """A study spec `text` written to tmp_path / name: its path."""
  path = tmp_path / name
  path.write_text(text)
  return str(path)


def refused_study_error(tmp_path, capsys, text) -> str:
  """`jbai study` of the spec `text`: asserts it is refused before any work (exit
  code 2, one line on stderr, no output folder) and returns that line."""
  out = tmp_path / "out"
  assert cli.main(["study", write(tmp_path, text), "--out", str(out)]) == 2
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and err.startswith("jbai: error: "), err
  assert not out.exists()  # refused before any work
  return err
