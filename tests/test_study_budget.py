"""Budget studies (`[study] budget`): the plan's runs, the tables against
`jbai.budget` with the study's seed, a job interrupted part-way and resumed to the
same bytes, `jbai plot` on a budget study's folder, and the refusals of specs that
mix a stop with a budget."""

import json
import os
import re

import jax
import numpy as np
import pandas as pd
import pytest

import jbai
from jbai import cli
from jbai.host.atomic import write_csv
from jbai.host.progress import Progress
from jbai.studies import (figures as figures_lib, jobs as jobs_lib, plan as plan_lib,
                          spec as spec_lib, tables)

from helpers import refused_study_error, write

# Two budgets and four log-spaced checkpoints; a listed instance and a drawn block
# with the same K, so that each run's program serves both (float32, 8 lanes).
SPEC = """
[study]
name = "budget"
seed = 2
trials = 8
budget = [30, 90]
checkpoints = 4

[[instances]]
name = "mu"
family = "bernoulli"
means = [0.5, 0.4, 0.3]

[[instances]]
family = "bernoulli"
draw = { count = 2, arms = 3, low = 0.1, high = 0.9, min_gap = 0.1 }

[[rules]]
name = "uniform"
[[rules]]
name = "successive-rejects"
"""


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_an_anytime_rule_runs_once_and_a_fixed_budget_rule_once_per_budget():
  resolved = spec_lib.load(SPEC)
  assert resolved["study"]["budget"] == [30, 90] and resolved["study"]["delta"] is None
  assert resolved["settings"] == [{"rule": "uniform", "params": {}},
                                  {"rule": "successive-rejects", "params": {}}]
  runs = [(members, s["rule"], t, job["checkpoints"])
          for members, s, t, job in plan_lib.plan(resolved)]
  assert [(m, r, t) for m, r, t, _ in runs] == [
      ([0], "uniform", 90), ([0], "successive-rejects", 30), ([0], "successive-rejects", 90),
      ([1, 2], "uniform", 90), ([1, 2], "successive-rejects", 30),
      ([1, 2], "successive-rejects", 90)]
  # Four log-spaced times from K to each run's T, and the anytime run records the
  # other budget too.
  spaced = {t: jbai.core.budget.checkpoint_times(t, 4, 3).tolist() for t in (30, 90)}
  assert runs[0][3] == sorted(set(spaced[90] + [30]))
  assert runs[1][3] == spaced[30] and runs[2][3] == spaced[90]
  job = plan_lib.plan(resolved)[3][-1]
  assert job["kind"] == "budget" and np.shape(job["means"]) == (2, 3) and job["seed"] == 2
  assert "delta" not in job and job["dtype"] == "float32"


def test_the_docs_budget_example_resolves_to_its_jobs():
  """docs/guide/study.md's budget study: 9 instances, 5 settings; 2 groups x (3
  anytime rules + 2 fixed-budget rules x 3 budgets) = 18 jobs."""
  with open(os.path.join(ROOT, "docs", "guide", "study.md"), encoding="utf-8") as f:
    blocks = re.findall(r"```toml\n(.*?)```", f.read(), re.S)
  (text,) = [b for b in blocks if "budget" in b]
  resolved = spec_lib.load(text)
  assert resolved["study"]["budget"] == [100, 400, 1600]
  assert resolved["study"]["checkpoints"] == 20 and len(resolved["instances"]) == 9
  assert len(plan_lib.plan(resolved)) == 2 * (3 + 2 * 3)


def _budget(means, rule, horizon, times, problem=None, family="bernoulli"):
  """`jbai.budget` with the study's seed, trials and dtype."""
  with jax.enable_x64(False):
    return jbai.budget(jax.random.key(2), family, means, rule, horizon, 8,
                       checkpoints=times, problem=problem)


def test_a_budget_study_has_the_rows_of_jbai_budget_and_plot_redraws_them(tmp_path):
  out = tmp_path / "out"
  assert cli.main(["study", write(tmp_path, SPEC), "--out", str(out), "--quiet"]) == 0
  cells = jbai.studies.read_table(str(out / "cells.csv"))
  assert list(cells.columns) == tables.BUDGET_CELL_COLUMNS
  assert cells["budget"].dtype == np.int64 and cells["t"].dtype == np.int64
  assert cells["error_rate"].between(0, 1).all() and (cells["simple_regret"] >= 0).all()
  assert (cells["error_ci_low"] <= cells["error_rate"]).all()
  assert (cells["error_rate"] <= cells["error_ci_high"]).all()
  resolved = spec_lib.load(SPEC)
  plan = plan_lib.plan(resolved)
  per_instance = sum(len(job["checkpoints"]) for members, *_, job in plan if members == [0])
  assert len(cells) == 3 * per_instance  # one row per (instance, setting, run, t)
  assert not cells.duplicated(["instance", "rule", "params", "budget", "t"]).any()
  # The anytime rule's rows are jbai.budget's on the job's batch of instances.
  for members, setting, horizon, job in plan:
    if setting["rule"] != "uniform":
      continue
    res = _budget(job["means"], "uniform", horizon, job["checkpoints"])
    for local, i in enumerate(members):
      name = resolved["instances"][i]["name"]
      mine = cells[(cells["instance"] == name) & (cells["rule"] == "uniform")]
      assert list(mine["t"]) == res.checkpoints.tolist()
      np.testing.assert_allclose(mine["error_rate"], res.error[local], rtol=1e-9)
      np.testing.assert_allclose(mine[["error_ci_low", "error_ci_high"]], res.error_ci[local],
                                 rtol=1e-9)
      np.testing.assert_allclose(mine["simple_regret"], res.regret[local], rtol=1e-6,
                                 atol=1e-9)
      at_budgets = mine[mine["t"].isin(resolved["study"]["budget"])]
      assert list(at_budgets["t"]) == [30, 90]
  # trials.csv: one row per (cell, trial), in the cells' order.
  trials = jbai.studies.read_table(str(out / "trials.csv"))
  assert list(trials.columns) == tables.BUDGET_TRIAL_COLUMNS and len(trials) == 8 * len(cells)
  keys = ["instance", "rule", "params", "budget", "t"]
  error = 1 - trials.groupby(keys, sort=False)["correct"].mean()
  np.testing.assert_allclose(error.values, cells["error_rate"].values)
  regret = trials.groupby(keys, sort=False)["regret"].mean()
  np.testing.assert_allclose(regret.values, cells["simple_regret"].values, atol=1e-9)
  record = json.loads((out / "study.json").read_text())
  assert record["budget"] == [30, 90] and record["spec"]["study"]["checkpoints"] == 4
  for png in ("error_over_t.png", "regret_over_t.png"):
    assert (out / png).stat().st_size > 0
    (out / png).unlink()
  assert cli.main(["plot", str(out)]) == 0
  assert sorted(p.name for p in out.glob("*.png")) == ["error_over_t.png", "regret_over_t.png"]


# Trials longer than a chunk of the pool (2,048 steps): a job spans two chunks.
RESUME = """
[study]
seed = 5
trials = 16
budget = 3000
checkpoints = 3

[[instances]]
family = "exponential"
means = [1.0, 0.9, 0.8]

[[rules]]
name = "uniform"
"""


def test_a_job_interrupted_part_way_resumes_to_the_same_bytes(tmp_path, monkeypatch):
  """A Ctrl-C after the job's first chunk keeps its trials (partial.jsonl); the
  rerun resumes from them to the tables of an uninterrupted run. (Exponential arms:
  uniform draws them reward by reward, over many chunks; on Bernoulli arms it
  takes each arm's share as a block, a trial in a few steps.)"""
  ref = tmp_path / "ref"
  jbai.studies.run(RESUME, str(ref), progress=False, figures=False)

  class Stop(Progress):
    def update(self, done, total, unit=None):
      if done:  # the first chunk's trials are saved once this returns
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == 2:
          raise KeyboardInterrupt

  kind = jobs_lib.KINDS["budget"]
  monkeypatch.setitem(jobs_lib.KINDS, "budget", jobs_lib.Kind(
      lambda job, progress, checkpoint: kind.run(job, Stop(enabled=False), checkpoint),
      kind.label))
  out = tmp_path / "out"
  with pytest.raises(KeyboardInterrupt):
    jbai.studies.run(RESUME, str(out), progress=False, figures=False)
  assert not (out / "cells.csv").exists()
  kept = [json.loads(line) for line in open(out / "partial.jsonl")]
  assert 0 < sum(len(r["trials"]["index"]) for r in kept if "trials" in r) < 16
  monkeypatch.setitem(jobs_lib.KINDS, "budget", kind)
  summary = jbai.studies.run(RESUME, str(out), progress=False, figures=False)
  assert summary["computed"] == 1
  for name in ("cells.csv", "trials.csv"):
    assert (out / name).read_bytes() == (ref / name).read_bytes()
  assert not (out / "partial.jsonl").exists()
  again = jbai.studies.run(RESUME, str(out), progress=False, figures=False)
  assert again["computed"] == 0 and (out / "cells.csv").read_bytes() == (
      ref / "cells.csv").read_bytes()


def _budget_folder(path, regret="0.05") -> str:
  """A budget study's two tables written by hand: a listed instance and a block of
  two drawn ones, an anytime rule (one run) and a fixed-budget one (two runs)."""
  cells, rows = [], []
  for instance, source, group in (("a", "listed", "a"), ("d-0", "drawn", "d"),
                                  ("d-1", "drawn", "d")):
    for rule, runs in (("uniform", [(100, [3, 10, 50, 100])]),
                       ("successive-rejects", [(50, [3, 50]), (100, [3, 100])])):
      for horizon, times in runs:
        for t in times:
          cells.append([instance, source, group, "bernoulli", 3, rule, "", horizon, t, 4,
                        0.25, 0.0456, 0.6994, float(regret), -0.02, 0.12])
          rows += [[instance, rule, "", horizon, t, j, int(j == 0), int(j != 0),
                    0.2 if j == 0 else 0.0] for j in range(4)]
  write_csv(os.path.join(path, "cells.csv"), tables.BUDGET_CELL_COLUMNS, cells)
  write_csv(os.path.join(path, "trials.csv"), tables.BUDGET_TRIAL_COLUMNS, rows)
  return str(path)


def test_plot_draws_hand_written_budget_tables_and_refuses_a_damaged_one(tmp_path, capsys):
  good = tmp_path / "good"
  good.mkdir()
  assert cli.main(["plot", _budget_folder(good)]) == 0
  assert "2 figure(s)" in capsys.readouterr().out
  bad = tmp_path / "bad"
  bad.mkdir()
  assert cli.main(["plot", _budget_folder(bad, regret="-1")]) == 2
  err = capsys.readouterr().err
  assert len(err.strip().splitlines()) == 1 and "cells.csv line 2, column 'simple_regret'" in err
  assert not list(bad.glob("*.png"))


LISTED = '[[instances]]\nname = "mu"\nfamily = "bernoulli"\nmeans = [0.5, 0.4, 0.3]\n'
UNIFORM = '[[rules]]\nname = "uniform"\n'
BUDGET = "[study]\nbudget = [60, 120]\n"

BAD = {
    "delta with a budget": (BUDGET + "delta = 0.1\n" + LISTED + UNIFORM,
                            "study.delta = 0.1: has no use in a budget study"),
    "threshold with a budget": (BUDGET + 'threshold = "kk"\n' + LISTED + UNIFORM,
                                "study.threshold = 'kk'"),
    "max_steps with a budget": (BUDGET + "max_steps = 1000\n" + LISTED + UNIFORM,
                                "study.max_steps = 1000"),
    "an instance's max_steps with a budget": (BUDGET + LISTED + "max_steps = 1000\n" + UNIFORM,
                                              "instances[0].max_steps = 1000"),
    "a rule's threshold with a budget": (BUDGET + LISTED + UNIFORM + 'threshold = "gk16"\n',
                                         "rules[0].threshold = 'gk16'"),
    "a fixed-budget rule without a budget": (
        LISTED + UNIFORM.replace("uniform", "tcb") + '[[rules]]\nname = "successive-rejects"\n',
        "rules[1].name = 'successive-rejects': samples with a fixed budget and never stops; "
        "give [study] budget"),
    "a rule that needs delta": (BUDGET + LISTED + '[[rules]]\nname = "lucb1"\n',
                                "rules[0].name = 'lucb1': on instance 'mu' (bernoulli, K = 3): "
                                "rule 'lucb1' samples with confidence bounds that depend on "
                                "delta"),
    "a budget below K": ("[study]\nbudget = [2, 60]\n" + LISTED + UNIFORM,
                         "rules[0].name = 'uniform': on instance 'mu' (bernoulli, K = 3): "
                         "budget must be at least the number of arms, K = 3, got 2"),
    "a budget below the rule's smallest": (
        "[study]\nbudget = 5\n" + LISTED + '[[rules]]\nname = "sequential-halving"\n',
        "rules[0].name = 'sequential-halving': on instance 'mu' (bernoulli, K = 3): budget "
        "must be at least"),
    "a budget of 0": ("[study]\nbudget = 0\n" + LISTED + UNIFORM, "study.budget = 0"),
    "a budget that is not whole": ("[study]\nbudget = 60.5\n" + LISTED + UNIFORM,
                                   "study.budget = 60.5: must be a whole number"),
    "an empty budget list": ("[study]\nbudget = []\n" + LISTED + UNIFORM, "study.budget = []"),
    "a budget twice": ("[study]\nbudget = [60, 60]\n" + LISTED + UNIFORM,
                       "study.budget = [60, 60]: repeats a budget"),
    "negative checkpoints": (BUDGET + "checkpoints = -1\n" + LISTED + UNIFORM,
                             "study.checkpoints = -1"),
    "checkpoints without a budget": ("[study]\ncheckpoints = 5\n" + LISTED + UNIFORM,
                                     "study.checkpoints = 5: records times of a run to a "
                                     "budget; give [study] budget"),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_budget_spec_gets_one_line_and_exit_2(tmp_path, capsys, kind):
  text, fragment = BAD[kind]
  err = refused_study_error(tmp_path, capsys, text)
  assert fragment in err, err


def test_jbai_study_returns_a_budget_study_cells_with_their_types():
  """The Python API on a dict, with no checkpoints besides the budgets: one row
  per budget of the anytime rule's one run, typed as written. (Gaussian arms:
  uniform's program in blocks compiles several times faster than on Bernoulli
  arms, where it holds binomial and hypergeometric draws.)"""
  cells = jbai.study({"study": {"trials": 8, "seed": 2, "budget": [30, 90], "checkpoints": 0},
                      "instances": [{"name": "mu", "family": "gaussian",
                                     "means": [0.5, 0.4, 0.3]}],
                      "rules": [{"name": "uniform"}]})
  assert list(cells["t"]) == [30, 90] and list(cells["budget"]) == [90, 90]
  assert list(cells["trials"]) == [8, 8] and cells["params"].tolist() == ["", ""]
  res = _budget([0.5, 0.4, 0.3], "uniform", 90, [30, 90], family="gaussian")
  np.testing.assert_allclose(cells["error_rate"], res.error, rtol=1e-9)
  assert isinstance(cells, pd.DataFrame)
  # With eps_good, the same recommendations scored as eps-good arms (0 and 1 here).
  good = jbai.study({"study": {"trials": 8, "seed": 2, "budget": [30, 90], "checkpoints": 0,
                               "eps_good": 0.15},
                     "instances": [{"name": "mu", "family": "gaussian",
                                    "means": [0.5, 0.4, 0.3]}],
                     "rules": [{"name": "uniform"}]})
  assert list(good.columns) == tables.BUDGET_QUESTION_CELL_COLUMNS
  assert set(good["question"]) == {"eps-good(eps=0.15)"}
  res = _budget([0.5, 0.4, 0.3], "uniform", 90, [30, 90], jbai.problems.eps_good(0.15),
                "gaussian")
  np.testing.assert_allclose(good["error_rate"], res.error, rtol=1e-9)
  np.testing.assert_allclose(good["simple_regret"], cells["simple_regret"], rtol=1e-9)


# The top 2 at a budget: a listed instance, the rules that sample for it.
TOP_2 = """
[study]
seed = 3
trials = 8
budget = 40
checkpoints = 3
top = 2

[[instances]]
name = "mu"
family = "bernoulli"
means = [0.6, 0.5, 0.4, 0.3]

[[rules]]
name = "uniform"
[[rules]]
name = "ebtc-top-m"
"""


@pytest.mark.slow  # a study of the top m that stops: tests/test_study.py (fast)
def test_a_budget_study_of_the_top_m_scores_answer_sets_as_jbai_budget_does(tmp_path):
  out = tmp_path / "out"
  assert cli.main(["study", write(tmp_path, TOP_2), "--out", str(out), "--quiet"]) == 0
  cells = jbai.studies.read_table(str(out / "cells.csv"))
  assert list(cells.columns) == tables.BUDGET_QUESTION_CELL_COLUMNS
  assert set(cells["question"]) == {"top-m(m=2)"}
  for (members, setting, horizon, job) in plan_lib.plan(spec_lib.load(TOP_2)):
    assert job["question"] == {"top": 2}
    with jax.enable_x64(False):
      res = jbai.budget(jax.random.key(3), "bernoulli", job["means"],
                        jbai.rules.get(setting["rule"], m=2), horizon, 8,
                        checkpoints=job["checkpoints"], problem=jbai.problems.top_m(2))
    mine = cells[cells["rule"] == setting["rule"]]
    np.testing.assert_allclose(mine["error_rate"], res.error[0], rtol=1e-9)
    np.testing.assert_allclose(mine["simple_regret"], res.regret[0], rtol=1e-6, atol=1e-9)
  trials = jbai.studies.read_table(str(out / "trials.csv"))
  assert list(trials.columns) == tables.BUDGET_QUESTION_TRIAL_COLUMNS
  assert trials["answer_set"].str.count(";").eq(1).all()  # two arms each
  keys = ["instance", "rule", "params", "budget", "t"]
  error = 1 - trials.groupby(keys, sort=False)["correct"].mean()
  np.testing.assert_allclose(error.values, cells["error_rate"].values)
  for png in out.glob("*.png"):
    png.unlink()
  assert cli.main(["plot", str(out)]) == 0
  assert sorted(p.name for p in out.glob("*.png")) == ["error_over_t.png", "regret_over_t.png"]


def test_figures_are_drawn_again_only_when_their_tables_or_files_change(tmp_path,
                                                                        monkeypatch):
  """`jbai.studies.figures_of` (a study's last step): the figures that study.json
  records when the digest of the tables and of the code that draws them is the
  same and every file is there; else it draws them (here a stand-in that counts)."""
  folder = _budget_folder(tmp_path)
  drawn = []

  def draw(out):
    drawn.append(out)
    (tmp_path / "error_over_t.png").write_bytes(b"png")
    return [os.path.join(out, "error_over_t.png")]

  monkeypatch.setattr(figures_lib, "draw", draw)
  first = jbai.studies.figures_of(folder)
  assert first["files"] == ["error_over_t.png"] and len(drawn) == 1
  (tmp_path / "study.json").write_text(json.dumps({jbai.studies.FIGURES_KEY: first}))
  assert jbai.studies.figures_of(folder) == first and len(drawn) == 1
  (tmp_path / "error_over_t.png").unlink()
  assert jbai.studies.figures_of(folder) == first and len(drawn) == 2
  cells = tmp_path / "cells.csv"
  cells.write_bytes(cells.read_bytes().replace(b"0.05", b"0.06"))
  assert jbai.studies.figures_of(folder)["digest"] != first["digest"] and len(drawn) == 3
