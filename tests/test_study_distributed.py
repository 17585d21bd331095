"""`jbai study` over the processes of a jax.distributed job: process I of N runs
shard I/N, process 0 writes the tables, byte for byte those of one process, for 2
and 3 processes and after a process is killed and the job rerun on another N; the
refusals (the options, a coordinator that cannot be reached)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from jbai.studies import distributed

from helpers import write
from test_study import LAUNCH, launch_env
from test_study_shards import same_tables, study

# A budget study of three drawn instances (one batch), an anytime rule (one job)
# and a fixed-budget one (one job a budget): 3 jobs, few programs to compile.
SPEC = """
[study]
name = "distributed"
seed = 3
trials = 16
budget = [30, 90]
checkpoints = 3

[[instances]]
family = "gaussian"
draw = { count = 3, arms = 3, low = 0.1, high = 0.9, min_gap = 0.1 }

[[rules]]
name = "uniform"
[[rules]]
name = "successive-rejects"
"""

# Fast tier: the refusals, each before any process starts.

@pytest.mark.parametrize("extra, says", [
    (("--shard", "0/2", "--coordinator", "localhost:1234"), "give one"),
    (("--shard", "0/2", "--distributed"), "give one"),
    (("--coordinator", "localhost"), "must be HOST:PORT"),
    (("--coordinator", "localhost:70000"), "must be HOST:PORT"),
    (("--coordinator", ":1234"), "must be HOST:PORT"),
    (("--coordinator", "a b:1234"), "must be HOST:PORT"),
    (("--coordinator", "h:1", "--num-processes", "0", "--process-id", "0"),
     "--num-processes must be at least 1, got 0"),
    (("--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"),
     "--process-id must be in 0..1"),
    (("--coordinator", "h:1", "--num-processes", "2", "--process-id", "-1"),
     "--process-id must be in 0..1"),
    (("--distributed", "--timeout", "0.5"), "--timeout must be at least 1 second"),
    (("--timeout", "5"), "give it with --coordinator or --distributed")])
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, extra, says):
  spec = write(tmp_path, SPEC)
  assert study(spec, tmp_path / "out", *extra) == 2
  err = capsys.readouterr().err
  assert says in err and err.count("\n") == 1, err
  assert not (tmp_path / "out").exists()


def test_the_options_as_jax_distributed_takes_them():
  where = distributed.coordinates("[::1]:8476", 4, 3, None)
  assert where == distributed.Coordinates("[::1]:8476", 4, 3, distributed.DEFAULT_TIMEOUT)
  assert distributed.coordinates(distributed=True, timeout=7.2) == (None, None, None, 7)
  assert distributed.coordinates() is None
  assert distributed.check_coordinator(" node-01.cluster:65535 ") == "node-01.cluster:65535"


# Slow tier: processes on loopback.

def free_port() -> int:
  """A port that the kernel has just handed out, so free (the test's, not jbai's)."""
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def start(spec, out, n: int, port: int, timeout: int = 120) -> list:
  """The n processes of a job on loopback, each a `jbai study` command."""
  return [subprocess.Popen(
      [sys.executable, "-c", LAUNCH, "study", spec, "--out", str(out), "--quiet",
       "--coordinator", f"127.0.0.1:{port}", "--num-processes", str(n), "--process-id", str(i),
       "--timeout", str(timeout)],
      env=launch_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
      for i in range(n)]


def finish(procs) -> list:
  """Each process's (exit code, stdout, stderr), once all have ended."""
  outs = [p.communicate(timeout=600) for p in procs]
  return [(p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
  """The spec's file and the folder of its one-process run."""
  tmp = tmp_path_factory.mktemp("distributed")
  spec = write(tmp, SPEC)
  assert study(spec, tmp / "ref") == 0
  return spec, tmp / "ref"


@pytest.mark.slow  # three jobs of processes, each compiling its share: about 3 min
def test_processes_give_the_bytes_of_one_and_resume_after_a_kill(tmp_path, reference):
  """Two processes, then three, give the one-process run's tables; then a job killed
  part-way resumes on two (`_killed_then_rerun_on_two`). One test, so that one
  worker runs the reference and no two jobs of processes share the CPU."""
  spec, ref = reference
  for n in (2, 3):
    out = tmp_path / f"n{n}"
    results = finish(start(spec, out, n, free_port()))
    assert [code for code, _, _ in results] == [0] * n, results
    assert "every process done" in results[0][1]
    same_tables(out, ref)
    timings = json.loads((out / "study.json").read_text())["timings"]
    assert timings["jobs_run"] == 0 and timings["jobs_found"] == 3  # the shards ran all
    assert not (out / "runs.jsonl").exists()
    for i in range(n):  # each process its own share: job j when j mod n == i
      lines = (out / f"runs.shard-{i}-of-{n}.jsonl").read_text().splitlines()
      assert len(lines) == len(range(i, 3, n))
  _killed_then_rerun_on_two(spec, ref, tmp_path / "killed")


def _killed_then_rerun_on_two(spec, ref, out):
  """Three processes; once one job is stored, process 1 is killed (SIGKILL: its
  process of the job dies with it), then the others, as a scheduler ends a job
  whose task died; the same command on two processes resumes."""
  procs = start(spec, out, 3, free_port())
  deadline = time.time() + 300
  stored = lambda: sum(len(open(os.path.join(out, f)).read().splitlines())  # jobs stored
                       for f in (os.listdir(out) if out.exists() else ())
                       if f.startswith("runs.shard-"))
  while stored() < 1 and time.time() < deadline and all(p.poll() is None for p in procs):
    time.sleep(0.05)
  ended = [(i, p.returncode, p.communicate()) for i, p in enumerate(procs) if p.poll() is not None]
  assert not ended, f"processes ended before one was killed: {ended}"
  for i in (1, 0, 2):
    procs[i].send_signal(signal.SIGKILL)
  finish(procs)
  assert not (out / "cells.csv").exists() and stored() >= 1  # before process 0's tables
  results = finish(start(spec, out, 2, free_port()))
  assert [code for code, _, _ in results] == [0, 0], results
  same_tables(out, ref)
  trials = pd.read_csv(out / "trials.csv")
  keys = [c for c in trials.columns if c in ("instance", "rule", "params", "budget", "t", "trial")]
  assert "trial" in keys and not trials.duplicated(subset=keys).any()


@pytest.mark.slow  # a subprocess that imports JAX and waits out a 2 s timeout: 15 s
def test_a_coordinator_that_cannot_be_reached_is_one_line_and_exit_2(tmp_path):
  spec = write(tmp_path, SPEC)
  port = free_port()  # nobody listens there
  t0 = time.time()
  proc = subprocess.run(
      [sys.executable, "-c", LAUNCH, "study", spec, "--out", str(tmp_path / "out"), "--quiet",
       "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", "1",
       "--timeout", "2"], env=launch_env(), capture_output=True, text=True, timeout=120)
  assert proc.returncode == 2, proc.stderr
  assert proc.stderr == f"jbai: error: coordinator 127.0.0.1:{port} not reachable within 2 s\n"
  assert time.time() - t0 < 60
