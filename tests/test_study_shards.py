"""`jbai study --shard I/N`: a study's jobs in disjoint parts (a job array's tasks),
each into its own files, then the plain run's tables byte for byte those of a run
without shards; the refusals (a bad --shard, a shard running twice, shards of
another spec)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from jbai import cli
from jbai.studies import shards

from helpers import write
from test_study import LAUNCH, launch_env

# Two listed instances, two rules, two levels of delta: 6 jobs (lucb1 one a level),
# with trials enough that a job spans several chunks (a kill lands mid-job).
SPEC = """
[study]
name = "shards"
seed = 7
trials = 96
delta = [0.1, 0.01]

[[instances]]
family = "bernoulli"
means = [0.6, 0.5, 0.3]

[[instances]]
family = "bernoulli"
means = [0.7, 0.5, 0.45, 0.2]

[[rules]]
name = "tcb"
[[rules]]
name = "lucb1"
"""

TABLES = ("cells.csv", "trials.csv")


def study(spec, out, *extra) -> int:
  return cli.main(["study", spec, "--out", str(out), "--quiet", *extra])


# Fast tier: the refusals, each before any compilation.

@pytest.mark.parametrize("value, says", [
    ("3/3", "I must be in 0..2"), ("5/2", "I must be in 0..1"), ("0/0", "N must be at least 1"),
    ("-1/3", "I must be in 0..2"), ("1", "must be I/N"), ("1/2/3", "must be I/N"),
    ("a/3", "whole number"), ("1/", "whole number"), ("", "must be I/N")])
def test_a_bad_shard_is_one_line_and_exit_2(tmp_path, capsys, value, says):
  spec = write(tmp_path, SPEC)
  assert study(spec, tmp_path / "out", "--shard", value) == 2
  err = capsys.readouterr().err
  assert says in err and err.count("\n") == 1, err
  assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_slurm_array_variables_stand_in_for_i_and_n():
  env = {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"}
  assert shards.parse_shard("slurm", env) == shards.Shard(2, 4)
  env = {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "3",
         "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "2"}  # --array=1-5:2
  assert shards.parse_shard("slurm", env) == shards.Shard(2, 3)
  assert shards.parse_shard(" 1/2 ") == shards.Shard(1, 2)
  with pytest.raises(ValueError, match=r"SLURM_ARRAY_TASK_ID.*not set"):
    shards.parse_shard("slurm", {})
  with pytest.raises(ValueError, match="not on the array's steps"):
    shards.parse_shard("slurm", dict(env, SLURM_ARRAY_TASK_ID="4"))
  with pytest.raises(ValueError, match=r"I must be in 0\.\.2"):
    shards.parse_shard("slurm", {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3"})


def test_shards_split_the_full_plan_with_nothing_left_over():
  jobs = [{"j": j} for j in range(10)]
  parts = [shards.share(jobs, shards.Shard(i, 3)) for i in range(3)]
  assert [len(p) for p in parts] == [4, 3, 3]
  assert sorted(j["j"] for p in parts for j in p) == list(range(10))
  assert shards.Files.of(shards.Shard(1, 3)) == (
      "runs.shard-1-of-3.jsonl", "partial.shard-1-of-3.jsonl", "shard-1-of-3.lock",
      "shard-1-of-3.json")


def test_a_shard_already_running_is_refused(tmp_path, capsys):
  spec, out = write(tmp_path, SPEC), tmp_path / "out"
  out.mkdir()
  with shards.exclusive(str(out), shards.Shard(0, 2)):  # as another process would hold it
    assert study(spec, out, "--shard", "0/2") == 2
  err = capsys.readouterr().err
  assert "shard 0/2" in err and "already running" in err and err.count("\n") == 1, err
  assert not (out / "runs.shard-0-of-2.jsonl").exists()


def test_shards_of_another_spec_are_refused(tmp_path, capsys):
  spec, out = write(tmp_path, SPEC), tmp_path / "out"
  out.mkdir()
  (out / "shard-1-of-2.json").write_text(json.dumps(
      {"shard": "1/2", "spec_sha256": "0" * 64, "jobs": 2, "done": True}))
  for extra in (("--shard", "0/2"), ()):  # a shard, and the merge
    assert study(spec, out, *extra) == 2
    err = capsys.readouterr().err
    assert "holds shards of another spec (shard-1-of-2.json" in err, err
    assert err.count("\n") == 1, err
  assert sorted(os.listdir(out)) == ["shard-0-of-2.lock", "shard-1-of-2.json"]


# Slow tier: the bytes.

@pytest.fixture(scope="module")
def reference(tmp_path_factory):
  """The spec's file and the folder of its run without shards."""
  tmp = tmp_path_factory.mktemp("shards")
  spec = write(tmp, SPEC)
  assert study(spec, tmp / "ref") == 0
  return spec, tmp / "ref"


def same_tables(out, ref) -> None:
  for name in TABLES:
    assert (out / name).read_bytes() == (ref / name).read_bytes(), name


@pytest.mark.slow  # a few seconds: the reference run compiles the study's programs
def test_three_shards_then_the_merge_give_the_bytes_of_one_run(tmp_path, reference):
  spec, ref = reference
  out = tmp_path / "out"
  for i in range(3):
    before = set(os.listdir(out)) if out.exists() else set()
    assert study(spec, out, "--shard", f"{i}/3") == 0
    assert set(os.listdir(out)) - before == set(shards.Files.of(shards.Shard(i, 3))) - {
        f"partial.shard-{i}-of-3.jsonl"}  # its own files, and no tables
  assert not any(name.startswith("partial") for name in os.listdir(out))
  assert all(json.loads((out / f"shard-{i}-of-3.json").read_text())["done"] for i in range(3))
  assert study(spec, out, "--shard", "1/3") == 0  # a rerun finds its jobs stored
  assert study(spec, out) == 0
  same_tables(out, ref)
  timings = json.loads((out / "study.json").read_text())["timings"]
  assert timings["jobs_run"] == 0 and timings["jobs_found"] == 6
  assert not (out / "runs.jsonl").exists()  # the merge ran nothing


def _lines(path) -> int:
  return sum(1 for _ in open(path)) if os.path.exists(path) else 0


@pytest.mark.slow  # a subprocess killed part-way: 10 to 30 s
def test_a_killed_shard_rerun_gives_the_same_bytes(tmp_path, reference, capsys):
  """Shard 0/2 in a subprocess: a second 0/2 is refused while it runs; SIGKILL
  mid-job; rerun at once (the kernel released its lock), shard 1/2 and a merge
  that runs what a shard left (here, nothing): the bytes of one run."""
  spec, ref = reference
  out = tmp_path / "out"
  cmd = [sys.executable, "-c", LAUNCH, "study", spec, "--out", str(out), "--quiet",
         "--shard", "0/2"]
  proc = subprocess.Popen(cmd, env=launch_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  deadline = time.time() + 240
  while (_lines(out / "partial.shard-0-of-2.jsonl") < 1 and proc.poll() is None and
         time.time() < deadline):
    time.sleep(0.01)
  assert proc.poll() is None, "the shard ended before it could be killed"
  assert study(spec, out, "--shard", "0/2") == 2
  assert "already running" in capsys.readouterr().err
  proc.send_signal(signal.SIGKILL)
  _, err = proc.communicate(timeout=120)
  assert proc.returncode == -signal.SIGKILL, err
  marker = json.loads((out / "shard-0-of-2.json").read_text())
  assert not marker["done"] and marker["jobs"] == 3
  assert study(spec, out, "--shard", "0/2") == 0
  assert study(spec, out, "--shard", "1/2") == 0
  assert study(spec, out) == 0
  same_tables(out, ref)
