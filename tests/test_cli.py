"""The command line: run, oracle, rules, and one-line errors with exit code 2."""

import json

import pytest

from jbai import cli


def run_cli(capsys, *argv):
  code = cli.main(list(argv))
  out, err = capsys.readouterr()
  return code, out, err


def test_run_json_has_the_documented_keys(capsys, tmp_path):
  out_file = tmp_path / "run.json"
  code, out, _ = run_cli(capsys, "run", "--family", "gaussian", "--means", "1,0.5,0.4",
                         "--rule", "tcb", "--delta", "0.1", "--trials", "50", "--json",
                         "--out", str(out_file))
  assert code == 0
  res = json.loads(out)
  for key in ("trials", "mean_tau", "tau_ci95", "error_rate", "hit_cap", "t_star",
              "ratio", "wall_seconds", "compile_seconds"):
    assert key in res
  assert res["trials"] == 50 and res["tau_ci95"][0] <= res["mean_tau"] <= res["tau_ci95"][1]
  assert json.loads(out_file.read_text())["mean_tau"] == res["mean_tau"]
  assert (tmp_path / "run.npz").exists()


def test_run_prints_a_table(capsys):
  code, out, _ = run_cli(capsys, "run", "--means", "1,0.2", "--trials", "20",
                         "--delta", "0.1", "--rule", "uniform")
  assert code == 0 and "mean tau" in out and "E[tau] / T* log(1/delta)" in out


def test_oracle_json_and_table(capsys):
  code, out, _ = run_cli(capsys, "oracle", "--family", "bernoulli", "--means",
                         "0.8,0.45,0.45,0.45", "--json")
  assert code == 0
  res = json.loads(out)
  assert abs(res["w"][0] - 0.385348) < 2e-4 and abs(res["t_star"] - 1 / res["gamma"]) < 1e-9
  code, out, _ = run_cli(capsys, "oracle", "--family", "gaussian", "--sigma", "2",
                         "--means", "1,0")
  assert code == 0 and "T*(nu) log(1/delta)" in out


def test_rules_lists_every_rule(capsys):
  from jbai import rules
  code, out, _ = run_cli(capsys, "rules")
  assert code == 0
  for name in rules.RULES:
    assert name in out


@pytest.mark.parametrize("argv, fragment", [
    (["run", "--rule", "nope"], "unknown rule 'nope'"),
    (["run", "--family", "nope"], "unknown family 'nope'"),
    (["run", "--threshold", "nope"], "unknown threshold 'nope'"),
    (["run", "--delta", "1.5"], "delta must be in (0, 1), got 1.5"),
    (["run", "--means", "1,1,0"], "tie for the best arm"),
    (["run", "--family", "bernoulli", "--means", "1.2,0.5"], "mean 1.2 is outside Theta"),
    (["oracle", "--means", "1"], "at least two arms"),
    (["oracle", "--family", "bernoulli", "--sigma", "2", "--means", "0.5,0.2"],
     "takes no parameter --sigma"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, fragment):
  code, out, err = run_cli(capsys, *argv)
  assert code == 2 and out == ""
  assert fragment in err and len(err.strip().splitlines()) == 1
