"""Several steps per iteration of the pool's loop (`unroll`): every trial is still a
pure function of its key, bit for bit, whatever the pool size and the unroll."""

import jax
import numpy as np
import pytest

import jbai
from jbai.core import pool

FIELDS = ("tau", "answer", "correct", "hit_cap", "counts", "steps")


def _trials(unroll, lanes, rule="tcb", family="gaussian", means=(1.0, 0.5, 0.4)):
  res = jbai.rollout(jax.random.key(7), family, list(means), rule, [0.1, 1e-3], 24,
                     lanes=lanes, unroll=unroll, scores=False)
  return {k: np.asarray(getattr(res, k)) for k in FIELDS}


@pytest.mark.parametrize("unroll, lanes", [
    (8, 5),
    pytest.param(2, 8, marks=pytest.mark.slow),
    pytest.param(16, 3, marks=pytest.mark.slow)])
def test_unrolled_pools_run_the_trials_of_one_step_per_iteration(unroll, lanes):
  """unroll 8 (the accelerators' default: a refill after each iteration), 2 (a
  refill due every 4th iteration) and 16 (two per iteration) against one step
  per iteration, on pools of other sizes (the same results are exact, so one
  differing bit fails)."""
  base = _trials(1, 8)
  got = _trials(unroll, lanes)
  assert base["tau"].shape == (24, 2) and np.all(base["tau"][:, 1] > 0)
  for name in FIELDS:
    np.testing.assert_array_equal(got[name], base[name], err_msg=name)


@pytest.mark.slow
def test_unrolled_bernoulli_itcb_is_bit_identical():
  means = (0.7, 0.5, 0.45, 0.2)
  base = _trials(1, 8, "itcb", "bernoulli", means)
  got = _trials(8, 4, "itcb", "bernoulli", means)
  for name in FIELDS:
    np.testing.assert_array_equal(got[name], base[name], err_msg=name)


@pytest.mark.parametrize("bad", [0, 3, 12, -8, 2.0, True])
def test_unroll_must_divide_or_be_a_multiple_of_the_refill_period(bad):
  with pytest.raises(ValueError, match="unroll"):
    pool.check_unroll(bad)


def test_default_unroll_by_platform():
  assert pool.default_unroll("cpu") == pool.UNROLL_CPU
  assert pool.default_unroll("gpu") == pool.UNROLL_ACCELERATOR
  for platform in ("cpu", "gpu"):
    pool.check_unroll(pool.default_unroll(platform))


@pytest.mark.slow
def test_gpu_benchmark_smoke_runs_on_the_cpu(tmp_path):
  """benchmarks/gpu.py --smoke: every code path of the GPU script, tiny sizes."""
  pytest.importorskip("numba")
  import json
  import os
  import subprocess
  import sys
  script = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "gpu.py")
  subprocess.run([sys.executable, script, "--smoke", "--out", str(tmp_path)], check=True,
                 timeout=900, capture_output=True)
  rows = json.load(open(tmp_path / "gpu.json"))["rows"]
  assert {r["what"] for r in rows} >= {"steady", "every rule"}
  assert all(r["jbai"] > 0 for r in rows if r["what"] == "steady")
  assert (tmp_path / "gpu.md").read_text().count("\n") == len(rows) + 3
