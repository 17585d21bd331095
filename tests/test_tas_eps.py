"""Track-and-Stop for eps-good answers (tas-d-eps, tas-c-eps) and its warm oracle.

The warm oracle (`jbai.oracle.eps_warm`) against the nested bisection
(`jbai.oracle.eps_solve`): from a cold start, and along trajectories of sample
means as the rules see them; then the rules: their stop, their validation, one
key one result through `jbai run`, `simulate` and `rollout`, x64 off.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import families, oracle, rules
from jbai.oracle.eps_warm import eps_warm_solve, eps_warm_start

from helpers import eps_run_three_ways, trajectory

MEANS = [1.0, 0.97, 0.95, 0.5, 0.3]  # issue 39's instance: eps-good {0, 1, 2}
EPS = 0.1
INSTANCES = [("gaussian", MEANS, EPS), ("bernoulli", [0.9, 0.85, 0.6, 0.3, 0.05], EPS)]



def best_arm_changed(mus, within):
  """[T] bool: the best arm of mus[s] changed at some s in (t - within, t] (the
  first step counts as a change: a cold start)."""
  top = np.argmax(np.asarray(mus), -1)
  fresh = np.r_[True, top[1:] != top[:-1]].astype(float)
  return np.convolve(fresh, np.ones(within), "full")[:len(top)] > 0


@pytest.mark.parametrize("name, means, eps", INSTANCES)
def test_warm_oracle_tracks_the_nested_bisection(name, means, eps):
  """From a cold start, 8 Newton steps reach eps_solve's w to 1e-9. Along 2,000
  steps of a trajectory, two steps per call (the rules' setting): w is
  eps_solve's to 1e-12 at the median step and, after the first 200 steps (where
  the means jump), within 1e-6 of it at all steps but those within 3 steps of a
  change of the best arm (a cold start) and under 5% of the others, in runs of
  at most 3 steps (a mean that jumps: the next calls go on from the iterate);
  the same criterion as tests/test_oracle_warm.py's for the exact problem, with
  5% for its 2%: issue 39's instance has three arms within 0.05."""
  fam = families.get(name)
  k = len(means)
  ref = oracle.eps_solve(fam, jnp.asarray(means), eps)
  cold = eps_warm_solve(fam, jnp.asarray(means), eps, eps_warm_start(k), newton_steps=8)
  np.testing.assert_allclose(np.asarray(cold.w), np.asarray(ref.w), atol=1e-9)
  assert bool(cold.converged) and float(cold.gamma) == pytest.approx(float(ref.gamma), rel=1e-9)

  mus = trajectory(fam, means, 2000)

  def body(start, mu):
    sol = eps_warm_solve(fam, mu, eps, start)
    return sol.start, sol.w

  _, warm = jax.jit(lambda m: jax.lax.scan(body, eps_warm_start(k), m))(mus)
  err = np.max(np.abs(np.asarray(warm) - np.asarray(oracle.eps_solve(fam, mus, eps).w)), -1)
  assert np.median(err) <= 1e-12
  far = (err > 1e-6) & ~best_arm_changed(mus, 3)
  far[:200] = False
  assert far.mean() < 0.05, far.mean()
  runs = "".join("1" if f else "0" for f in far).split("0")
  assert max(len(r) for r in runs) <= 3


def test_degenerate_instances_follow_the_nested_bisection():
  """Two Bernoulli arms at 1 (the code's special case: w the answer's vertex,
  T*_eps = 1 / d(1, 1 - eps)), in both solvers."""
  fam, mu = families.bernoulli(), jnp.asarray([1.0, 0.5, 1.0, 0.2])
  ref = oracle.eps_solve(fam, mu, EPS)
  warm = eps_warm_solve(fam, mu, EPS, eps_warm_start(4))
  for sol in (ref, warm):
    np.testing.assert_array_equal(np.asarray(sol.w), [1.0, 0.0, 0.0, 0.0])
    assert 1 / float(sol.gamma) == pytest.approx(1 / np.log(1 / (1 - EPS)), rel=1e-12)


def test_rules_carry_their_stop_and_validate():
  rule = rules.tas_d_eps(EPS)
  assert rule.stop == jbai.stops.eps_gllr(EPS, "gk16")
  assert repr(rules.get("tas-c-eps", eps_good=0.05)) == (
      "tas-c-eps(eps_good=0.05, lazy_factor=None, solver=warm)")
  assert rules.get("tas-d-eps", eps_good=EPS, solver="exact").params[2] == ("solver", "exact")
  with pytest.raises(ValueError, match="use rule 'tas-d'"):
    rules.tas_d_eps(0.0)
  with pytest.raises(ValueError, match="use rule 'tas-c'"):
    rules.tas_c_eps(-1.0)
  with pytest.raises(ValueError, match="solver"):
    rules.tas_d_eps(EPS, solver="warm-converged")
  with pytest.raises(ValueError, match="projection"):
    rules.tas_c_eps(EPS, projection="l1")


@pytest.mark.parametrize("name", ["tas-d-eps", "tas-c-eps"])
def test_same_key_same_result_through_run_simulate_and_rollout(name, tmp_path, capsys):
  """Per trial, `jbai run`, `simulate` and `rollout` agree; every answer is eps-good;
  the summary's T* is T*_eps."""
  rec, sim = eps_run_three_ways(name, MEANS, EPS, 6, tmp_path, capsys)
  assert rec["t_star"] == pytest.approx(621.0768, abs=1e-3)
  assert set(np.unique(sim.answer)) <= {0, 1, 2} and not sim.hit_cap.any()


def test_float32_bernoulli_run():
  """x64 off: a short Bernoulli run (the warm oracle in float32) answers eps-good
  arms, and the tracker's dtype is float32."""
  means = [0.9, 0.85, 0.6, 0.3]
  with jax.enable_x64(False):
    rule = rules.tas_d_eps(EPS)
    res = jbai.simulate(jax.random.key(5), "bernoulli", means, rule, 0.01, 6)
    assert res.correct.all() and not res.hit_cap.any()
    assert rule.init(4).warm.c.dtype == jnp.float32
