"""One process per core: the shares of a run's trials (`simulate_share`), the worker
processes (`jbai.host.processes`) and `jbai study --processes`."""

import signal
import sys

import jax
import numpy as np
import pytest

import jbai
from jbai import cli
from jbai.host.processes import Workers
from jbai.host.simulate import simulate_share
from jbai.studies import jobs as jobs_lib

from helpers import write
from test_study import LAUNCH, RESUME_SPEC, _interrupt, _lines, launch_env


def test_the_shares_of_a_run_are_its_trials_and_a_run_of_them_computes_nothing():
  """Three shares (every third trial each) run each trial once; their records are
  the `done` of a run that runs nothing and returns the whole run's Result, bit
  for bit (float64)."""
  args = (jax.random.key(7), "gaussian", [[1.0, 0.6, 0.5], [0.9, 0.5, 0.1]], "tcb", [0.1, 0.01],
          30)
  whole = jbai.simulate(*args, lanes=8)
  chunks, stats = [], []
  for r in range(3):
    stats.append(simulate_share(*args, lanes=8, share=(r, 3), on_chunk=chunks.append))
  done = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
  assert sorted(done["index"]) == list(range(60))
  assert all(len(set(c["index"] % 3)) == 1 for c in chunks)  # a chunk is one share's
  # another share's finished trials (a resumed study's) leave this share's alone
  again = []
  simulate_share(*args, lanes=8, share=(1, 3), on_chunk=again.append,
                 done={k: v[done["index"] % 3 == 0] for k, v in done.items()})
  mine = done["index"] % 3 == 1
  order = np.argsort(np.concatenate([c["index"] for c in again]))
  for k in done:
    np.testing.assert_array_equal(np.concatenate([c[k] for c in again])[order],
                                  done[k][mine][np.argsort(done["index"][mine])])
  merged = jbai.simulate(*args, lanes=8, done=done)
  for field in ("tau", "answer", "correct", "hit_cap", "counts"):
    np.testing.assert_array_equal(getattr(merged, field), getattr(whole, field))
  assert merged.summary == whole.summary and merged.stats["useful_steps"] == 0
  assert sum(s["useful_steps"] for s in stats) == whole.stats["useful_steps"]
  with pytest.raises(ValueError, match=r"share \(3, 3\): r must be in \[0, 3\)"):
    simulate_share(*args, share=(3, 3))


def test_a_workers_refusal_is_a_value_error_in_the_parent():
  """A call that raises ValueError in a worker raises it in the parent with its
  message, and the workers serve the next call."""
  job = jobs_lib.simulate_job("gaussian", [[1.0, 0.5]], "no-such-rule", {}, [0.1], 4, "gk16",
                              100, 0, "float64")
  with Workers(1) as workers:
    for _ in range(2):
      with pytest.raises(ValueError, match="no-such-rule"):
        workers.map("jbai.studies.jobs:simulate_share", [((job, (0, 1), None), {})])
  assert not any(p.is_alive() for p in workers.processes)
  with pytest.raises(ValueError, match="at least 1"):
    Workers(0)


@pytest.mark.slow  # two worker processes that each compile their programs: about a minute
def test_a_study_in_two_processes_writes_the_bytes_of_one_and_resumes_after_ctrl_c(tmp_path):
  """`jbai study --processes 2`: the tables of the study in one process, byte for
  byte; interrupted part-way (SIGINT: the workers stop with it), the rerun resumes
  from the trials both workers saved, to the same bytes."""
  spec = write(tmp_path, RESUME_SPEC)
  ref = tmp_path / "ref"
  assert cli.main(["study", spec, "--out", str(ref), "--quiet"]) == 0
  both = tmp_path / "both"
  assert cli.main(["study", spec, "--out", str(both), "--quiet", "--processes", "2"]) == 0
  for name in ("cells.csv", "trials.csv"):
    assert (both / name).read_bytes() == (ref / name).read_bytes()
  out = tmp_path / "out"
  cmd = [sys.executable, "-c", LAUNCH, "study", spec, "--out", str(out), "--quiet",
         "--processes", "2"]
  env = launch_env()
  _interrupt(cmd, env, out, 2, signal.SIGINT)
  assert not (out / "cells.csv").exists() and _lines(out / "partial.jsonl") >= 1
  assert cli.main(["study", spec, "--out", str(out), "--quiet", "--processes", "2"]) == 0
  for name in ("cells.csv", "trials.csv"):
    assert (out / name).read_bytes() == (ref / name).read_bytes()
