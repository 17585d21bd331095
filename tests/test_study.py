"""`jbai study`: the spec, the tables, resuming after SIGINT or SIGKILL, the figures,
the Python API and the refusals of bad specs."""

import os
import re
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pandas as pd
import pytest

import jbai
from jbai import cli
from jbai.host.jsonlines import JsonLines
from jbai.host.progress import Progress
from jbai.studies import (figures as figures_lib, jobs as jobs_lib, plan as plan_lib,
                          spec as spec_lib, tables)
from jbai.studies.store import Checkpoint

from helpers import refused_study_error, suite_cache_dir, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "guide", "study.md")

# The docs' example's instances and two of its rules (the same compiled programs),
# with trials long enough that a job spans several chunks: a kill lands mid-job.
RESUME_SPEC = """
[study]
name = "resume"
seed = 3
trials = 8
delta = [0.1, 0.01]

[[instances]]
preset = "gk16-mu1"

[[instances]]
family = "bernoulli"
draw = { count = 3, arms = 4, low = 0.1, high = 0.9, min_gap = 0.05 }

[[rules]]
name = "tcb"
[[rules]]
name = "lucb1"
"""


def doc_specs() -> list:
  """The TOML blocks of docs/guide/study.md: the example, then the issue's study."""
  with open(DOC, encoding="utf-8") as f:
    return re.findall(r"```toml\n(.*?)```", f.read(), re.S)


def test_the_issue_spec_resolves_to_its_size():
  resolved = spec_lib.load(doc_specs()[1])
  assert len(resolved["instances"]) == 201
  assert len(resolved["settings"]) == 7
  plan = plan_lib.plan(resolved)
  # 6 rules sample without delta (one job for both levels), lucb1 once per level.
  assert len(plan) == 2 * (6 + 2)
  drawn = np.asarray([i["means"] for i in resolved["instances"][:200]])
  gaps = np.sort(drawn, axis=1)[:, -1:] - drawn
  assert np.all((gaps == 0).sum(axis=1) == 1) and np.all(gaps[gaps > 0] >= 0.01)
  assert spec_lib.load(doc_specs()[1])["instances"] == resolved["instances"]  # seeded draws


def test_the_docs_example_runs_and_pandas_reads_its_tables(tmp_path, monkeypatch):
  out = tmp_path / "out"
  argv = ["study", write(tmp_path, doc_specs()[0]), "--out", str(out), "--quiet"]
  assert cli.main(argv) == 0
  cells = pd.read_csv(out / "cells.csv", keep_default_na=False)
  for column in ("instance", "family", "K", "rule", "params", "delta", "threshold", "trials",
                 "mean_tau", "tau_ci_low", "tau_ci_high", "median_tau", "error_rate",
                 "error_ci_low", "error_ci_high", "at_cap", "t_star", "ratio"):
    assert column in cells.columns
  assert len(cells) == (1 + 8) * 4 * 2
  assert set(cells["params"]) == {"", "beta=0.3", "beta=0.5"}
  assert set(cells.loc[cells["rule"] == "lucb1", "threshold"]) == {"own"}
  assert (cells["tau_ci_low"] <= cells["mean_tau"]).all()
  assert np.allclose(cells["ratio"], cells["mean_tau"] / (cells["t_star"] *
                                                          np.log(1 / cells["delta"])))
  trials = pd.read_csv(out / "trials.csv", keep_default_na=False)
  assert len(trials) == len(cells) * 8
  mean = trials.groupby(["instance", "rule", "params", "delta"], sort=False)["tau"].mean()
  assert np.allclose(mean.values, cells["mean_tau"].values)
  for name in ("tau_box.png", "tau_log_delta.png", "error_rate.png", "drawn_ratio.png",
               "study.json"):
    assert (out / name).stat().st_size > 0
  for png in out.glob("*.png"):
    png.unlink()
  assert cli.main(["plot", str(out)]) == 0
  assert len(list(out.glob("*.png"))) == 4
  # A rerun that computes nothing draws nothing (the digest of the tables and of the
  # code that draws them is study.json's); a missing figure, or other tables, redraw.
  drawn = []
  monkeypatch.setattr(figures_lib, "draw", lambda folder: drawn.append(folder) or [])
  assert cli.main(argv) == 0 and drawn == []
  (out / "tau_box.png").unlink()
  assert cli.main(argv) == 0 and drawn == [str(out)]
  before = jbai.studies.figure_digest(str(out))
  (out / "cells.csv").write_bytes((out / "cells.csv").read_bytes().replace(b"tcb", b"tcc"))
  assert jbai.studies.figure_digest(str(out)) != before


def test_a_block_rule_finishes_on_its_own_default_cap():
  """No max_steps in the spec: each rule's default cap, so exp-gap (whose pulls
  come in blocks; issue 38's instance, about 4e6 pulls a trial) reaches none."""
  spec = {"study": {"trials": 4, "delta": 0.1},
          "instances": [{"family": "bernoulli", "means": [0.66, 0.58, 0.5, 0.41, 0.3]}],
          "rules": [{"name": "exp-gap"}]}
  cells = jbai.study(spec)
  assert (cells["at_cap"] == 0).all() and (cells["error_rate"] == 0).all()


def test_a_study_of_eps_good_answers_reports_t_star_eps():
  """[study] eps_good: the rules built for it run with it, the GLLR rules with the
  eps-GLLR, and t_star is T*_eps (621.08 on issue 39's instance, not T*'s 9,875)."""
  spec = {"study": {"trials": 4, "delta": 0.01, "eps_good": 0.1},
          "instances": [{"family": "gaussian", "means": [1.0, 0.97, 0.95, 0.5, 0.3]}],
          "rules": [{"name": "ebtc-eps"}, {"name": "tcb"}]}
  cells = jbai.study(spec)
  assert list(cells["rule"]) == ["ebtc-eps", "tcb"]
  np.testing.assert_allclose(cells["t_star"], 621.0768, rtol=1e-5)
  assert (cells["error_rate"] == 0).all() and (cells["at_cap"] == 0).all()


def test_a_listed_instance_has_the_trials_of_simulate_with_the_same_seed():
  means = [0.5, 0.45, 0.43, 0.4]
  spec = {"study": {"seed": 7, "trials": 8, "delta": [0.1, 0.01]},
          "instances": [{"family": "bernoulli", "means": means, "name": "mu1"}],
          "rules": [{"name": "tcb"}]}
  cells = jbai.study(spec)
  assert isinstance(cells, pd.DataFrame)
  with jax.enable_x64(False):  # the study's dtype, float32
    res = jbai.simulate(jax.random.key(7), "bernoulli", means, "tcb", [0.1, 0.01], 8,
                        lanes=jobs_lib.lanes_for(8))
  np.testing.assert_allclose(cells["mean_tau"].to_numpy(), res.tau.mean(axis=0))
  # Result.cells(): the same columns (a study adds source and group) and numbers.
  mine = res.cells()
  assert set(cells.columns) - set(mine.columns) == {"source", "group"}
  for column in ("rule", "threshold", "family", "K", "delta", "trials", "wrong", "at_cap"):
    assert list(mine[column]) == list(cells[column]), column
  for column in ("mean_tau", "tau_ci_low", "tau_ci_high", "median_tau", "error_rate",
                 "error_ci_low", "error_ci_high"):  # the study rounds to 10 digits
    np.testing.assert_allclose(mine[column], cells[column], rtol=1e-9, err_msg=column)
  np.testing.assert_allclose(mine["t_star"], cells["t_star"], rtol=1e-4)  # float32 oracle


def test_a_study_of_the_top_m_has_the_trials_of_simulate_and_the_questions_t_star(tmp_path):
  """[study] top = 2: the rules that take m are built for it, the trials stop with
  the top-2 GLLR and are those of `jbai.simulate(problem=top_m(2))` with the same
  seed; the cells name the question and give its T*, the trials their answer sets."""
  means = [1.0, 0.8, 0.5, 0.2]
  spec = {"study": {"seed": 2, "trials": 8, "delta": 0.05, "top": 2},
          "instances": [{"family": "gaussian", "means": means, "name": "g"}],
          "rules": [{"name": "ebtc-top-m"}]}
  assert plan_lib.plan(spec_lib.load(spec))[0][-1]["question"] == {"top": 2}
  jbai.studies.run(spec, str(tmp_path), progress=False)
  cells = jbai.studies.read_table(str(tmp_path / "cells.csv"))
  trials = jbai.studies.read_table(str(tmp_path / "trials.csv"))
  assert cells.columns[5] == "question" and list(cells["question"]) == ["top-m(m=2)"]
  problem = jbai.problems.top_m(2)
  with jax.enable_x64(False):  # the study's dtype, float32
    res = jbai.simulate(jax.random.key(2), "gaussian", means, jbai.rules.ebtc_top_m(2), 0.05,
                        8, lanes=jobs_lib.lanes_for(8), problem=problem)
  assert list(trials["tau"]) == res.tau.tolist()
  assert list(trials["answer_set"]) == [";".join(map(str, np.flatnonzero(a))) for a in res.answer]
  np.testing.assert_allclose(cells["t_star"],
                             float(jbai.problems.oracle(problem, "gaussian", means).t_star),
                             rtol=1e-9)


def test_the_beyond_guides_study_resolves():
  with open(os.path.join(os.path.dirname(DOC), "beyond.md"), encoding="utf-8") as f:
    text, = re.findall(r"```toml\n(.*?)```", f.read(), re.S)
  resolved = spec_lib.load(text)
  assert len(resolved["instances"]) == 20 and spec_lib.question(resolved["study"]) == {"top": 2}
  assert [job["question"] for *_, job in plan_lib.plan(resolved)] == [{"top": 2}] * 2


@pytest.mark.slow  # the top m's study is in the fast tier
def test_a_thresholding_study_answers_the_arms_above_its_level(tmp_path):
  """[study] above = 0.45 on two Bernoulli instances: APT and tas-above built for
  the level, uniform with the GLLR of the question. Every rule is delta-correct at
  delta = 0.01: at most 10 wrong sets of 400 a cell (a binomial(400, 0.01) count
  exceeds 10 with probability 0.002), none at the cap; T* is the closed form
  sum_a 1 / kl(mu_a, level), and most answer sets are the arms above the level."""
  spec = {"study": {"seed": 4, "trials": 400, "delta": 0.01, "above": 0.45,
                    "dtype": "float64"},
          "instances": [{"family": "bernoulli", "name": "b0", "means": [0.7, 0.55, 0.35, 0.2]},
                        {"family": "bernoulli", "name": "b1", "means": [0.3, 0.6, 0.5, 0.25]}],
          "rules": [{"name": "apt"}, {"name": "tas-above"}, {"name": "uniform"}]}
  jbai.studies.run(spec, str(tmp_path), progress=False)
  cells = jbai.studies.read_table(str(tmp_path / "cells.csv"))
  trials = jbai.studies.read_table(str(tmp_path / "trials.csv"))
  assert set(cells["question"]) == {"above(level=0.45)"} and len(cells) == 6
  assert (cells["wrong"] <= 10).all() and (cells["at_cap"] == 0).all(), cells
  for inst in spec["instances"]:
    mu = np.asarray(inst["means"])
    kl = mu * np.log(mu / 0.45) + (1 - mu) * np.log((1 - mu) / 0.55)
    mine = cells[cells["instance"] == inst["name"]]
    np.testing.assert_allclose(mine["t_star"], np.sum(1 / kl), rtol=1e-9)
    truth = ";".join(map(str, np.flatnonzero(mu > 0.45)))
    answers = trials[trials["instance"] == inst["name"]]["answer_set"]
    assert (answers == truth).mean() >= 0.97


def test_an_instance_entry_sets_its_own_trials_and_cap():
  """trials and max_steps of an [[instances]] entry override the study's on every
  instance it gives (a drawn block's too); the other entries keep the study's."""
  spec = {"study": {"seed": 3, "trials": 6, "delta": 0.1},
          "instances": [{"family": "gaussian", "means": [1.0, 0.0], "name": "easy"},
                        {"family": "gaussian", "name": "few", "trials": 2, "max_steps": 10,
                         "draw": {"count": 2, "arms": 3, "low": 0.0, "high": 1.0,
                                  "min_gap": 0.1}}],
          "rules": [{"name": "tcb"}]}
  cells = jbai.study(spec).set_index("instance")
  assert cells.loc["easy", "trials"] == 6 and cells.loc["easy", "at_cap"] == 0
  few = cells.drop(index="easy")
  assert len(few) == 2 and (few["trials"] == 2).all() and (few["at_cap"] == 2).all()


def test_an_interrupted_job_resumes_from_its_checkpoint(tmp_path):
  """A job stopped after its first chunk resumes from the saved trials, to the
  records of an uninterrupted job."""
  # The program of the docs' example (8 lanes, two levels): compiled once.
  job = jobs_lib.simulate_job("bernoulli", [[0.5, 0.45, 0.43, 0.4]], "tcb", {}, [0.1, 0.01],
                              16, "gk16", 1_000_000, 0, "float32")
  whole = jobs_lib.KINDS["simulate"].run(job, Progress(enabled=False))

  class Stop(Progress):
    def update(self, done, total, unit=None):
      if done:  # the first chunk's trials are saved once this returns
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == 2:
          raise KeyboardInterrupt

  store = JsonLines(str(tmp_path / "partial.jsonl"), fsync=False)
  with pytest.raises(KeyboardInterrupt):
    jobs_lib.KINDS["simulate"].run(job, Stop(enabled=False), Checkpoint(store, job))
  kept = Checkpoint(JsonLines(str(tmp_path / "partial.jsonl")), job)
  assert 0 < len(kept.done()["index"]) < 16
  resumed = jobs_lib.KINDS["simulate"].run(job, Progress(enabled=False), kept)
  assert resumed["records"] == whole["records"]


LAUNCH = ("import runpy, signal, sys; "
          "signal.signal(signal.SIGINT, signal.default_int_handler); "
          "sys.argv[0] = 'jbai'; runpy.run_module('jbai.cli', run_name='__main__')")


def launch_env() -> dict:
  """The environment of a `jbai study` subprocess: this checkout first on the path,
  and the suite's compilation cache, which holds the programs of the runs before it."""
  from jbai.host import caches
  return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
              **{caches.ENV_DIR: suite_cache_dir()})


def _lines(path) -> int:
  return sum(1 for _ in open(path)) if os.path.exists(path) else 0


def _interrupt(cmd, env, out, lines: int, sig) -> None:
  """Starts the study, and sends `sig` once the store and the checkpoints of `out`
  hold `lines` lines."""
  proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  deadline = time.time() + 240
  while (_lines(out / "partial.jsonl") + _lines(out / "runs.jsonl") < lines and
         proc.poll() is None and time.time() < deadline):
    time.sleep(0.01)
  assert proc.poll() is None, "the study ended before it could be interrupted"
  proc.send_signal(sig)
  _, err = proc.communicate(timeout=120)
  assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL), err


@pytest.mark.slow  # subprocesses killed part-way: 30 to 90 s
def test_a_killed_then_interrupted_study_resumes_to_the_same_bytes(tmp_path):
  """SIGKILL part-way, then SIGINT part-way through the rerun, then a rerun to the
  end: the tables are byte for byte those of an uninterrupted run."""
  spec = write(tmp_path, RESUME_SPEC)
  ref = tmp_path / "ref"
  assert cli.main(["study", spec, "--out", str(ref), "--quiet"]) == 0
  out = tmp_path / "out"
  cmd = [sys.executable, "-c", LAUNCH, "study", spec, "--out", str(out), "--quiet"]
  env = launch_env()  # the programs the reference run compiled
  _interrupt(cmd, env, out, 2, signal.SIGKILL)
  _interrupt(cmd, env, out, _lines(out / "partial.jsonl") + _lines(out / "runs.jsonl") + 2,
             signal.SIGINT)
  assert not (out / "cells.csv").exists()
  assert cli.main(["study", spec, "--out", str(out), "--quiet"]) == 0
  for name in ("cells.csv", "trials.csv"):
    assert (out / name).read_bytes() == (ref / name).read_bytes()
  assert not (out / "partial.jsonl").exists()


def test_presets_the_alpha_family_and_csv_files(tmp_path):
  (tmp_path / "set.csv").write_text("name,family,mu1,mu2,mu3\nx,bernoulli,0.6,0.5,0.4\n"
                                    "y,gaussian,1,0,\n")
  spec = f"""
[[instances]]
preset = "table1"
[[instances]]
preset = "gk16"
[[instances]]
preset = "alpha"
arms = 5
alpha = 2.0
[[instances]]
csv = "set.csv"
[[rules]]
name = "tcb"
"""
  resolved = spec_lib.load(write(tmp_path, spec))
  names = [i["name"] for i in resolved["instances"]]
  assert names == ["table1-nu1", "table1-nu2", "table1-nu3", "table1-nu4", "gk16-mu1",
                   "gk16-mu2", "alpha-2-K5", "x", "y"]
  assert resolved["instances"][6]["means"] == [1.0, 0.9375, 0.75, 0.4375, 0.0]
  assert resolved["instances"][8] == {"name": "y", "family": "gaussian", "family_params": {},
                                      "means": [1.0, 0.0], "source": "csv", "group": "y"}


def test_gaussian_draws_and_family_params():
  resolved = spec_lib.load({
      "instances": [{"family": "gaussian", "family_params": {"sigma": 0.5}, "name": "g",
                     "draw": {"count": 4, "arms": 6, "mean": 0.0, "sd": 1.0,
                              "min_gap": 0.2, "seed": 9}}],
      "rules": [{"name": "t3c", "beta": [0.2, 0.4, 0.6]}], "study": {"threshold": ["gk16", "kk"]}})
  assert [i["name"] for i in resolved["instances"]] == ["g-0", "g-1", "g-2", "g-3"]
  assert len(resolved["settings"]) == 6  # 3 betas x 2 thresholds
  job = plan_lib.plan(resolved)[0][-1]
  assert job["family_params"] == {"sigma": 0.5} and np.shape(job["means"]) == (4, 6)


LISTED = '[[instances]]\nfamily = "bernoulli"\nmeans = [0.5, 0.4]\n'
RULE = '[[rules]]\nname = "tcb"\n'
LISTED3 = '[[instances]]\nfamily = "bernoulli"\nmeans = [0.5, 0.4, 0.2]\n'

BAD = {
    "not TOML": ("[study\n", "not TOML"),
    "unknown top-level key": ("[runs]\nx = 1\n" + LISTED + RULE, "runs"),
    "unknown study key": ("[study]\ntrails = 10\n" + LISTED + RULE, "study.trails"),
    "unknown instance key": ('[[instances]]\nfamily = "bernoulli"\nmeans = [0.5, 0.4]\n'
                             'arm = 3\n' + RULE, "instances[0].arm"),
    "unknown rule": (LISTED + '[[rules]]\nname = "tbc"\n', "rules[0].name = 'tbc'"),
    "unknown rule parameter": (LISTED + '[[rules]]\nname = "tcb"\nbeta = 0.5\n',
                               "rules[0].beta"),
    "bad rule parameter": (LISTED + '[[rules]]\nname = "t3c"\nbeta = [0.5, 1.5]\n',
                           "beta must be in (0, 1)"),
    "mean outside the family's domain": ('[[instances]]\nfamily = "bernoulli"\n'
                                         'means = [0.5, 1.2]\n' + RULE, "instances[0].means"),
    "tie for the best arm": ('[[instances]]\nfamily = "bernoulli"\nmeans = [0.5, 0.5, 0.1]\n'
                             + RULE, "tie for the best arm"),
    "delta above 1": ("[study]\ndelta = [0.1, 1.5]\n" + LISTED + RULE, "study.delta = 1.5"),
    "empty delta list": ("[study]\ndelta = []\n" + LISTED + RULE, "study.delta = []"),
    "no instances": (RULE, "instances = None"),
    "no rules": (LISTED, "rules = None"),
    "empty sweep": (LISTED + '[[rules]]\nname = "t3c"\nbeta = []\n', "rules[0].beta = []"),
    "draw low above high": ('[[instances]]\nfamily = "bernoulli"\n'
                            'draw = {count = 3, arms = 4, low = 0.8, high = 0.2}\n' + RULE,
                            "instances[0].draw.high = 0.2"),
    "draw without count": ('[[instances]]\nfamily = "bernoulli"\n'
                           'draw = {arms = 4, low = 0.1, high = 0.9}\n' + RULE,
                           "instances[0].draw.count = None"),
    "impossible min_gap": ('[[instances]]\nfamily = "bernoulli"\n'
                           'draw = {count = 3, arms = 4, low = 0.4, high = 0.5, min_gap = 0.2}\n'
                           + RULE, "instances[0].draw.min_gap = 0.2"),
    "unknown family": ('[[instances]]\nfamily = "cauchy"\nmeans = [1, 0]\n' + RULE,
                       "instances[0].family = 'cauchy'"),
    "unknown preset": ('[[instances]]\npreset = "gk17-mu1"\n' + RULE,
                       "instances[0].preset = 'gk17-mu1'"),
    "unknown threshold": ('[study]\nthreshold = "gk61"\n' + LISTED + RULE,
                          "study.threshold = 'gk61'"),
    "trials not a whole number": ("[study]\ntrials = 10.5\n" + LISTED + RULE,
                                  "study.trials = 10.5"),
    "instance trials of zero": ('[[instances]]\nfamily = "bernoulli"\nmeans = [0.5, 0.4]\n'
                                'trials = 0\n' + RULE, "instances[0].trials = 0"),
    "bad dtype": ('[study]\ndtype = "float16"\n' + LISTED + RULE, "study.dtype = 'float16'"),
    "two sources": ('[[instances]]\nfamily = "bernoulli"\nmeans = [0.5, 0.4]\n'
                    'preset = "gk16-mu1"\n' + RULE, "give exactly one of"),
    "duplicate names": (LISTED.replace("[[instances]]", '[[instances]]\nname = "a"') * 2 + RULE,
                        "instances.name = 'a'"),
    "missing CSV file": ('[[instances]]\nfamily = "bernoulli"\ncsv = "nowhere.csv"\n' + RULE,
                         "instances[0].csv = 'nowhere.csv'"),
    "threshold that does not apply": ('[[instances]]\nfamily = "poisson"\nmeans = [3, 1]\n'
                                      '[[rules]]\nname = "tcb"\nthreshold = "paper"\n',
                                      "rules[0].name = 'tcb'"),
    "own stop a rule lacks": (LISTED + '[[rules]]\nname = "tcb"\nthreshold = "own"\n',
                              "rules[0].threshold = 'own'"),
    "negative eps_good": ("[study]\neps_good = -0.1\n" + LISTED + RULE,
                          "study.eps_good = -0.1"),
    "eps_good with a stop that has none": ("[study]\neps_good = 0.1\n" + LISTED +
                                           '[[rules]]\nname = "lucb1"\n',
                                           "rules[0].threshold = 'own'"),
    "top and above": ("[study]\ntop = 1\nabove = 0.45\n" + LISTED + RULE,
                      "study.above = 0.45"),
    "top of zero arms": ("[study]\ntop = 0\n" + LISTED + RULE, "study.top = 0"),
    "top of every arm": ("[study]\ntop = 2\n" + LISTED + RULE, "instances[0].means"),
    "a level at a mean": ("[study]\nabove = 0.4\n" + LISTED + RULE, "instances[0].means"),
    "a level outside Theta": ("[study]\nabove = 1.5\n" + LISTED + RULE, "instances[0].means"),
    "a best-arm rule asked the top m": ("[study]\ntop = 2\n" + LISTED3 + RULE,
                                        "rules[0].name = 'tcb'"),
    "a question with a rule's own stop": ("[study]\ntop = 2\n" + LISTED3 +
                                          '[[rules]]\nname = "lucb1"\n',
                                          "rules[0].threshold = 'own'"),
    "a best-arm rule asked the top m at a budget": ("[study]\nbudget = 100\ntop = 1\n" +
                                                    LISTED + '[[rules]]\nname = "tcb"\n',
                                                    "rules[0].name = 'tcb'"),
    "eps_good with a question at a budget": ("[study]\nbudget = 100\ntop = 1\neps_good = 0.1\n"
                                             + LISTED + '[[rules]]\nname = "uniform"\n',
                                             "study.top = 1: eps_good asks for"),
    "a drawn instance with m of its K arms": ("[study]\ntop = 3\n[[instances]]\n"
                                             'family = "bernoulli"\ndraw = {count = 2, '
                                             'arms = 3, low = 0.1, high = 0.9}\n' + RULE,
                                             "instances[0].draw[0]"),
    "a rule for another question, unasked": (LISTED3 + '[[rules]]\nname = "apt"\n',
                                              "rules[0].name = 'apt'"),
    "a question with eps_good": ("[study]\neps_good = 0.1\nabove = 0.45\n" + LISTED + RULE,
                                 "study.above = 0.45"),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_spec_gets_one_line_naming_key_and_value_and_exit_2(tmp_path, capsys, kind):
  text, names = BAD[kind]
  err = refused_study_error(tmp_path, capsys, text)
  assert names in err, err


def test_error_bars_are_never_negative():
  """An interval's end read back at 10 digits can round past its centre (an error
  rate of 1 pooled over drawn instances): the bars are clipped at 0."""
  from jbai.host.summary import wilson
  from jbai.studies.figures import _bars
  lo, hi = wilson(200, 200)
  bars = _bars(np.asarray([1.0]), np.asarray([lo]), np.asarray([hi]))
  assert (bars[0] >= 0).all() and (bars[1] >= 0).all()


def test_the_shipped_eps_ratio_study_resolves():
  """experiments/eps_ratio.toml (docs/guide/stops.md's table) is a valid spec."""
  path = os.path.join(os.path.dirname(__file__), "..", "experiments", "eps_ratio.toml")
  resolved = spec_lib.load(path)
  assert resolved["study"]["eps_good"] == 0.1 and len(resolved["settings"]) == 4


def test_a_shipped_study_loads_by_name_and_the_help_lists_it(tmp_path, capsys):
  from jbai.reproduce import specs
  assert "gk16" in spec_lib.shipped()
  resolved = spec_lib.load("gk16")
  assert resolved == spec_lib.resolve(specs.spec("gk16", "paper"))
  assert [i["name"] for i in resolved["instances"]] == ["gk16-1", "gk16-2"]
  assert len(resolved["settings"]) == 7 and len(plan_lib.plan(resolved)) == 2 * (4 + 3 * 2)
  # A file of that name comes first.
  write(tmp_path, "[[instances]]\npreset = \"gk16-mu2\"\n[[rules]]\nname = \"tcb\"\n", "gk16")
  cwd = os.getcwd()
  try:
    os.chdir(tmp_path)
    assert spec_lib.load("gk16")["instances"][0]["name"] == "gk16-mu2"
  finally:
    os.chdir(cwd)
  with pytest.raises(spec_lib.SpecError, match="name a shipped study: gk16"):
    spec_lib.load(str(tmp_path / "gk61"))
  assert cli.main(["study", "--help"]) == 0
  assert "shipped" in capsys.readouterr().out


def _item_then_study(name: str, trials: int, n_jobs: int, tmp_path) -> tuple:
  """Runs the reproduce item `name` at smoke scale with `trials` trials, then the
  same config as a study on the same folder, which must find all `n_jobs` jobs in
  the store: (cells.csv, the item's NAME.csv) as DataFrames."""
  from jbai import reproduce
  from jbai.reproduce import specs
  config = specs.spec(name, "smoke")
  config["study"]["trials"] = trials
  out = str(tmp_path)
  assert reproduce.run([name], out=out, progress=False, configs={name: config})[
      "computed"] == n_jobs
  summary = jbai.studies.run(config, out, progress=False, figures=False)
  assert summary["computed"] == 0 and summary["skipped"] == n_jobs
  return (pd.read_csv(os.path.join(out, "cells.csv"), keep_default_na=False),
          pd.read_csv(os.path.join(out, f"{name}.csv"), keep_default_na=False))


def test_the_gk16_study_is_the_reproduce_item(tmp_path):
  """`jbai reproduce --only gk16` and the study share their jobs (one store) and numbers;
  gk16.csv's T*(nu) is the simulation's float32 oracle, cells.csv's the float64 one."""
  cells, table = _item_then_study("gk16", 4, 2, tmp_path)
  assert list(cells["rule"]) == ["kl-racing", "tcb"]
  assert list(table["setting"]) == ["kl-racing(rate=gk16)", "tcb"]
  for ours, theirs in [("mean_tau", "mean_tau"), ("tau_lo", "tau_ci_low"),
                       ("tau_hi", "tau_ci_high"), ("error_rate", "error_rate"),
                       ("error_lo", "error_ci_low"), ("error_hi", "error_ci_high"),
                       ("wrong", "wrong"), ("hit_cap", "at_cap"), ("trials", "trials"),
                       ("delta", "delta")]:
    assert list(table[ours]) == list(cells[theirs]), ours
  np.testing.assert_allclose(table["t_star"], cells["t_star"], rtol=1e-4)


def test_the_ratio_study_is_the_reproduce_item(tmp_path):
  """`jbai reproduce --only ratio` and the shipped study ratio share their jobs (one
  store) and numbers: ratio.csv's mean tau, interval, error rate and ratio are the
  cells' (the ratio against the same float64 T*)."""
  from jbai import reproduce
  from jbai.reproduce import specs
  for name in ("ratio", "sensitivity", "gk16"):  # the items that are shipped studies
    assert spec_lib.resolve(specs.spec(name, "paper")) == spec_lib.load(name), name
  cells, table = _item_then_study("ratio", 6, 1, tmp_path)
  config = specs.spec("ratio", "smoke")
  config["study"]["trials"] = 6
  # An experiments/ script's edited CONFIG (scale "custom") runs on the same store.
  assert reproduce.run_experiment("ratio", config, str(tmp_path), progress=False)[
      "skipped"] == 1
  assert list(table["delta"]) == list(cells["delta"]) == config["study"]["delta"]
  for ours, theirs in [("mean_tau", "mean_tau"), ("ci95_lo", "tau_ci_low"),
                       ("ci95_hi", "tau_ci_high"), ("error_rate", "error_rate"),
                       ("hit_cap", "at_cap"), ("trials", "trials"), ("ratio", "ratio")]:
    np.testing.assert_allclose(table[ours], cells[theirs], rtol=1e-8, err_msg=ours)


def test_the_params_column_writes_small_and_large_values_alike():
  assert tables.params_text({"a": 4.07e-05}) == "a=0.0000407"
  assert tables.params_text({"a": 0.000163, "c": 0.5}) == "a=0.000163;c=0.5"
  assert tables.params_text({"beta": 0.5, "eps": 1e-300}) == "beta=0.5;eps=1e-300"
  assert tables.params_text({}) == ""


@pytest.mark.parametrize("rule", ["ucb-e", "adaptive-ucb-e"])
def test_a_study_without_a_budget_refuses_a_rule_that_never_stops(tmp_path, capsys, rule):
  text = ('[[instances]]\nname = "mu"\nfamily = "bernoulli"\nmeans = [0.5, 0.4, 0.3]\n'
          f'[[rules]]\nname = "{rule}"\n')
  err = refused_study_error(tmp_path, capsys, text)
  assert f"rules[0].name = '{rule}': samples with a fixed budget and never stops" in err
