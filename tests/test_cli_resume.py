"""Ctrl-C during `jbai run --out`: the finished trials are summarised and kept,
and the same command resumes to the result of an uninterrupted run.

The command runs as a subprocess (`python -m jbai.cli`, as the console script
does), interrupted by a SIGINT sent once some finished trials are saved, and is
compared, array by array, with an uninterrupted run of the same command.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGV = ["run", "--rule", "tcb", "--means", "1,0.8,0.6", "--delta", "1e-2,1e-4",
        "--trials", "1000", "--seed", "5", "--chunk", "64"]


# `python -m jbai.cli`, with SIGINT turned into KeyboardInterrupt as in a terminal
# (a shell without job control starts background jobs with SIGINT ignored, and
# Python keeps an ignored SIGINT, so the test's own environment may lack it).
LAUNCH = ("import runpy, signal, sys; "
          "signal.signal(signal.SIGINT, signal.default_int_handler); "
          "sys.argv[0] = 'jbai'; runpy.run_module('jbai.cli', run_name='__main__')")


def command(out):
  return [sys.executable, "-c", LAUNCH, *ARGV, "--out", str(out)]


def env():
  return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def saved_chunks(path) -> int:
  if not os.path.exists(path):
    return 0
  with open(path) as f:
    return sum(1 for line in f if '"index"' in line)


def test_ctrl_c_then_resume_gives_the_uninterrupted_result(tmp_path):
  ref = subprocess.run(command(tmp_path / "ref.json"), env=env(), capture_output=True,
                       text=True, timeout=600)
  assert ref.returncode == 0, ref.stderr

  out = tmp_path / "run.json"
  partial = tmp_path / "run.partial.jsonl"
  proc = subprocess.Popen(command(out), env=env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
  deadline = time.time() + 300
  while saved_chunks(partial) < 20 and proc.poll() is None and time.time() < deadline:
    time.sleep(0.02)
  proc.send_signal(signal.SIGINT)
  stdout, stderr = proc.communicate(timeout=300)
  assert proc.returncode == 130, (stdout, stderr)
  assert "biased towards short trials" in stdout and "rerun the same command" in stdout
  summary = json.loads(out.read_text())  # one record per delta
  finished = summary[0]["trials"]
  assert [r["delta"] for r in summary] == [1e-2, 1e-4]
  assert all(not r["complete"] and r["trials"] == finished for r in summary)
  assert 0 < finished < 1000
  print(f"interrupted after {finished} of 1000 trials; resumed to the same arrays")
  assert f"{finished} of 1000 trials finished" in stdout
  assert not (tmp_path / "run.npz").exists()

  resumed = subprocess.run(command(out), env=env(), capture_output=True, text=True,
                           timeout=600)
  assert resumed.returncode == 0, resumed.stderr
  assert f"resuming: {finished} finished trial(s)" in resumed.stderr
  assert not partial.exists()
  a, b = np.load(tmp_path / "ref.npz"), np.load(tmp_path / "run.npz")
  for name in ("tau", "answer", "correct", "hit_cap", "counts", "steps"):
    np.testing.assert_array_equal(a[name], b[name], err_msg=name)
  want, got = json.loads((tmp_path / "ref.json").read_text()), json.loads(out.read_text())
  for key in ("trials", "mean_tau", "tau_ci95", "error_rate", "hit_cap", "ratio"):
    assert [r[key] for r in want] == [r[key] for r in got], key


def test_an_interrupted_budget_run_of_a_question_resumes_without_repair(tmp_path, monkeypatch,
                                                                          capsys):
  """`jbai run --budget --above` (answers are [C, K] sets): Ctrl-C after the first
  saved chunk (KeyboardInterrupt from its save), then the same command resumes
  what it wrote, no --repair, to the rows of an uninterrupted run."""
  from jbai import cli
  from jbai.cli import trials
  argv = ["run", "--means", "1,0.5,0.3,0.2", "--above", "0.4", "--budget", "60",
          "--trials", "48", "--chunk", "8", "--json"]
  assert cli.main(argv + ["--out", str(tmp_path / "ref.json")]) == 0
  saver = trials.TrialLog.saver

  def interrupted(self, key):
    save = saver(self, key)

    def on_chunk(records):
      save(records)
      if len(records["index"]):
        raise KeyboardInterrupt
    return on_chunk

  out = str(tmp_path / "r.json")
  monkeypatch.setattr(trials.TrialLog, "saver", interrupted)
  assert cli.main(argv + ["--out", out]) == 130
  monkeypatch.setattr(trials.TrialLog, "saver", saver)
  assert saved_chunks(tmp_path / "r.partial.jsonl") == 1  # the trials of one chunk
  assert cli.main(argv + ["--out", out]) == 0, capsys.readouterr().err
  assert not (tmp_path / "r.partial.jsonl").exists()
  want, got = (json.loads((tmp_path / name).read_text()) for name in ("ref.json", "r.json"))
  assert got["complete"] and got["rows"] == [dict(r, steps_per_second=g["steps_per_second"])
                                            for r, g in zip(want["rows"], got["rows"])]
