"""experiments/beta_tuning.py: tuning beta by gradient, with an interval over
independent repeats, on a small config (the table's shape and invariants, not its
statistics)."""

import os
import runpy

import numpy as np
import pytest

PATH = os.path.join(os.path.dirname(__file__), "..", "experiments", "beta_tuning.py")


@pytest.fixture(scope="module")
def experiment():
  return runpy.run_path(PATH)


def test_beta_tuning_rows_on_a_small_config(experiment, capsys):
  # equal trial counts: one compiled program per rule serves the tuning's beta +- h, the
  # slopes, the gap and the grid
  config = dict(experiment["CONFIG"], trials=20, steps=2, repeats=2, grid=[0.3, 0.5],
                grid_trials=20, check_trials=20)
  rows = experiment["main"](config)
  text = capsys.readouterr().out
  assert [r["rule"] for r in rows] == config["rules"]
  assert text.count("\n| ") == 1 + len(config["rules"])  # header and one line per rule
  for r in rows:
    assert abs(r["beta_star"] - 1 / (1 + np.sqrt(7))) < 1e-3
    assert len(r["betas"]) == 2 and all(0.109 <= b <= 0.891 for b in r["betas"])
    assert r["tuned"] == pytest.approx(np.mean(r["betas"]))
    # R = 2: the half-width is t_{0.975, 1} |b1 - b2| / 2, which holds both repeats
    assert r["half"] == pytest.approx(12.706204736174698 * abs(np.diff(r["betas"])[0]) / 2)
    assert r["tuned"] - r["half"] <= np.mean(r["betas"]) <= r["tuned"] + r["half"]
    assert r["tuned"] - r["half"] <= min(r["betas"]) <= max(r["betas"]) <= r["tuned"] + r["half"]
    assert r["star_inside"] == (abs(r["beta_star"] - r["tuned"]) <= r["half"])
    assert r["steps"] > 0
    assert r["grid_argmin"] in config["grid"] and len(r["grid"]) == 2
    assert all(np.isfinite(v) for v in r["slope_tuned"] + r["slope_star"] + r["gap"])


def test_t_interval_matches_student_t(experiment):
  mean, half = experiment["t_interval"]([0.2, 0.3, 0.25, 0.35])
  assert mean == pytest.approx(0.275)
  assert half == pytest.approx(3.182446305284263 * np.std([0.2, 0.3, 0.25, 0.35], ddof=1) / 2)
  with pytest.raises(ValueError, match="repeats = 1"):
    experiment["t_interval"]([0.3])
  with pytest.raises(ValueError, match="repeats = 1"):
    experiment["main"](dict(experiment["CONFIG"], repeats=1))
