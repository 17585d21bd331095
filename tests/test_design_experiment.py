"""experiments/design.py: a static design learned by gradient, against SPSA and
random search, on a small config (the table's shape and invariants, not its
statistics)."""

import os
import runpy

import numpy as np

PATH = os.path.join(os.path.dirname(__file__), "..", "experiments", "design.py")


def test_design_rows_on_a_small_config(capsys):
  experiment = runpy.run_path(PATH)
  config = dict(experiment["CONFIG"], means=[1.0, 0.6, 0.5], delta=0.1, trials=16, steps=2,
                average=2, check_trials=32, repeats=2, learning_rates=[0.1])
  rows = experiment["main"](config)
  text = capsys.readouterr().out
  assert "| adam 0.1 |" in text and "| w* |" in text  # the summary over the repeats
  assert [r["repeat"] for r in rows] == [0] * 5 + [1] * 5
  rows = rows[:5]
  methods = [r["method"] for r in rows]
  assert methods[:2] == ["adam", "spsa"] and methods[2].startswith("random (")
  assert methods[3:] == ["uniform", "w*"]
  assert text.count("\n| 0 |") == len(rows)
  by = {r["method"]: r for r in rows}
  assert abs(by["w*"]["efficiency"] - 1) < 1e-3  # Gamma(nu, w*) = Gamma(nu)
  for r in rows:
    assert 0 < r["efficiency"] <= 1 + 1e-3
    assert np.isclose(np.sum(r["w"]), 1) and np.all(r["w"] > 0)
    assert np.isfinite(r["tau"]) and r["tau_ci"] > 0
  steps = [r["steps"] for r in rows[:2]]
  assert min(steps) > 0 and rows[2]["steps"] >= max(steps)  # random search: at least as many


def test_budget_design_rows_on_a_small_config(capsys):
  """experiments/budget_design.py: every allocation and rule evaluated, the rates of
  the static designs with w_FB's the largest (it maximises Gamma_FB)."""
  path = os.path.join(os.path.dirname(PATH), "budget_design.py")
  experiment = runpy.run_path(path)
  config = dict(experiment["CONFIG"], means=[0.9, 0.6, 0.3, 0.1], budget=40, trials=32,
                steps=2, average=2, check_trials=64)
  rows = experiment["main"](config)
  text = capsys.readouterr().out
  assert [r["method"] for r in rows] == [
      "uniform (static)", "w* (fixed confidence)", "w_FB (Glynn & Juneja)",
      "descent on P(error at T)", "round robin", "successive-rejects", "sequential-halving"]
  assert text.count("\n| ") == len(rows) + 1  # the header, then a row each
  static = rows[:4]
  assert max(static, key=lambda r: r["rate"])["method"].startswith("w_FB")
  for r in rows:
    assert 0 <= r["ci"][0] <= r["error"] <= r["ci"][1] <= 1
  for r in static:
    assert np.isclose(np.sum(r["w"]), 1) and np.all(r["w"] > 0)
