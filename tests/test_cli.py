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


# ---------------------------------------------------------------- numbers and lists

def test_negative_numbers_are_values_for_every_subcommand(capsys, monkeypatch):
  args = cli.build_parser().parse_args(
      ["run", "--means", "-1,0,1", "--lo", "-5", "--hi", "-.5e-1", "--delta", "1e-2,1e-8",
       "--beta", "0.3,0.5", "--sigma", "2"])
  assert args.means == [-1.0, 0.0, 1.0] and args.lo == -5.0 and args.hi == -0.05
  assert args.delta == ["1e-2", "1e-8"]  # kept as typed (jbai.cli.args.delta_list)
  assert args.beta == [0.3, 0.5] and args.sigma == [2.0]
  args = cli.build_parser().parse_args(["oracle", "--means", "-1.5,-2", "--lo", "-inf"])
  assert args.means == [-1.5, -2.0] and args.lo == float("-inf")
  # In-process and as the console script (argv from sys.argv).
  code, out, _ = run_cli(capsys, "oracle", "--family", "gaussian", "--means", "-1,0,1",
                         "--json")
  assert code == 0 and json.loads(out)["means"] == [-1.0, 0.0, 1.0]
  monkeypatch.setattr("sys.argv", ["jbai", "oracle", "--means", "-1,-2", "--lo", "-5",
                                   "--json"])
  assert cli.main() == 0
  assert json.loads(capsys.readouterr().out)["family"].startswith("gaussian(lo=-5.0")


@pytest.mark.parametrize("argv, bad", [
    (["run", "--means", ",,,"], "',,,'"),
    (["run", "--means", "1,,2"], "'1,,2'"),
    (["run", "--means", "1,a"], "'a' in '1,a'"),
    (["run", "--means", ""], "''"),
    (["run", "--delta", "1e-2,"], "'1e-2,'"),
    (["run", "--beta", "0.3,x"], "'x' in '0.3,x'"),
    (["run", "--rule", "tcb,,itcb"], "'tcb,,itcb'"),
    (["run", "--lo", "-5,1"], "'-5,1'"),
    (["run", "--trials", "1.5"], "'1.5'"),
    (["oracle", "--means", "-1,,0"], "'-1,,0'"),
    (["oracle", "--delta", "0.1,2"], "delta must be in (0, 1), got 2"),  # as typed
    (["run", "--means"], "--means: expected one argument"),
    (["run", "--means", "1,0", "--json", "-1"], "--json"),
    (["runn"], "unknown command 'runn'"),
    (["--rule", "nope"], "unknown rule 'nope'"),  # no subcommand: `jbai run`
])
def test_malformed_input_names_the_bad_text(capsys, argv, bad):
  code, out, err = run_cli(capsys, *argv)
  assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
  assert err.startswith("jbai: error: ") and bad in err


def test_refusal_names_options_that_work(capsys):
  code, _, err = run_cli(capsys, "run", "--family", "weibull", "--means", "3,2,1",
                         "--threshold", "paper")
  assert code == 2 and err.strip().endswith("; use --threshold kk")
  code, _, err = run_cli(capsys, "run", "--family", "logcosh", "--means", "1,0",
                         "--threshold", "kk", "--rule", "tcb,t3c")
  assert code == 2 and err.strip().endswith("; use --rule tcb,ebtci --threshold paper")


# ---------------------------------------------------------------- comparisons

def test_rules_and_deltas_side_by_side_with_common_random_numbers(capsys, tmp_path):
  import numpy as np
  common = ["run", "--means", "1,0.5,0.4", "--trials", "24", "--seed", "3", "--json"]
  code, out, _ = run_cli(capsys, *common, "--rule", "tcb,uniform", "--delta", "0.1,0.01",
                         "--out", str(tmp_path / "both.json"))
  assert code == 0
  records = json.loads(out)
  assert [(r["rule"].split("(")[0], r["delta"]) for r in records] == [
      ("tcb", 0.1), ("tcb", 0.01), ("uniform", 0.1), ("uniform", 0.01)]
  for r in records:
    assert r["trials"] == 24 and r["complete"] and "steps_per_second" in r
  assert json.loads((tmp_path / "both.json").read_text()) == records
  both = np.load(tmp_path / "both.npz")
  assert both["tau"].shape == (2, 24, 2) and both["counts"].shape == (2, 24, 3)
  # One trajectory per trial serves every delta: the smaller delta stops later.
  assert np.all(both["tau"][..., 1] >= both["tau"][..., 0])
  # The same key for every rule: each row equals the rule run alone.
  code, out, _ = run_cli(capsys, *common, "--rule", "uniform", "--delta", "0.01",
                         "--out", str(tmp_path / "alone.json"))
  assert code == 0 and isinstance(json.loads(out), dict)
  alone = np.load(tmp_path / "alone.npz")
  for name in ("tau", "answer", "correct", "hit_cap"):  # [runs, trials, deltas]
    np.testing.assert_array_equal(alone[name], both[name][1, :, 1])
  for name in ("counts", "steps"):                       # [runs, trials, ...]
    np.testing.assert_array_equal(alone[name], both[name][1])
  assert json.loads(out)["mean_tau"] == records[3]["mean_tau"]


def test_beta_sweep_compiles_one_program_and_prints_one_table(capsys):
  from jbai.host.programs import chunk_program
  before = chunk_program.cache_info()
  code, out, _ = run_cli(capsys, "run", "--family", "bernoulli", "--means",
                         "0.7,0.5,0.45,0.2", "--rule", "ebtc", "--beta", "0.3,0.5,0.7",
                         "--delta", "0.1", "--trials", "12", "--max-steps", "1e5")
  after = chunk_program.cache_info()
  assert code == 0
  assert after.misses - before.misses == 1 and after.hits - before.hits == 2
  lines = out.splitlines()
  head = next(i for i, line in enumerate(lines) if line.startswith("rule"))
  for column in ("mean tau (95% CI)", "error rate (95% CI)", "at cap", "ratio", "steps/s"):
    assert column in lines[head]
  rows = lines[head + 1:head + 4]
  assert [row.split()[0] for row in rows] == [
      "ebtc(beta=0.3)", "ebtc(beta=0.5)", "ebtc(beta=0.7)"]
  assert "common random numbers" in out and "delta       0.1" in out


# ---------------------------------------------------------------- finished-trial log

def test_trial_log_drops_a_truncated_line_and_refuses_another_command(tmp_path):
  import numpy as np
  path = str(tmp_path / "run.partial.jsonl")
  specs = {"a": {"rule": "tcb(eps=1.0)", "trials": 4}}
  log = cli.TrialLog(path, specs)
  save = log.saver("a")
  save({"index": np.array([2, 0]), "tau": np.array([[5], [7]]), "answer": np.array([[0], [0]]),
        "counts": np.array([[3, 2], [4, 3]]), "steps": np.array([5, 7])})
  save({"index": np.array([], int), "tau": np.zeros((0, 1)), "answer": np.zeros((0, 1)),
        "counts": np.zeros((0, 2)), "steps": np.zeros(0)})
  with open(path, "a") as f:
    f.write('{"run": "a", "index": [1], "ta')  # killed mid-write
  log = cli.TrialLog(path, specs)
  done = log.done("a")
  assert done["index"].tolist() == [0, 2] and done["tau"].tolist() == [[7], [5]]
  assert open(path).read().endswith("\n")
  log.saver("a")({"index": np.array([1]), "tau": np.array([[9]]), "answer": np.array([[1]]),
                  "counts": np.array([[5, 4]]), "steps": np.array([9])})
  assert cli.TrialLog(path, specs).done("a")["index"].tolist() == [0, 1, 2]
  with pytest.raises(ValueError, match="another command .*trials=4.*delete"):
    cli.TrialLog(path, {"b": {}})
  assert cli.TrialLog(None, specs).done("a") is None


def test_repair_without_out_is_refused_before_anything_runs(capsys):
  code, out, err = run_cli(capsys, "run", "--repair", "--trials", "5", "--means", "1,0")
  assert code == 2 and "--repair" in err and "--out" in err and out == ""


def test_a_huge_count_is_echoed_as_typed(capsys):
  code, _, err = run_cli(capsys, "run", "--max-steps", "9223372036854775807",
                         "--trials", "5", "--means", "1,0")
  assert code == 2 and "9223372036854775807" in err and "9223372036854775808" not in err


def test_json_with_progress_shows_progress_on_stderr(capsys):
  code, out, err = run_cli(capsys, "run", "--json", "--progress", "--trials", "20",
                           "--means", "1,0.2", "--delta", "0.1", "--rule", "uniform")
  assert code == 0 and json.loads(out)["trials"] == 20
  assert "20/20" in err


def test_rerunning_over_finished_files_says_they_are_replaced(capsys, tmp_path):
  out = tmp_path / "r.json"
  argv = ("run", "--means", "1,0", "--rule", "uniform", "--delta", "0.1", "--trials", "6",
          "--json", "--out", str(out))
  code, _, err = run_cli(capsys, *argv)
  assert code == 0 and "replaced" not in err
  out.write_text(out.read_text().replace('"trials": 6', '"trials": 7'))  # hand-edited
  code, _, err = run_cli(capsys, *argv)
  assert code == 0 and f"{out} and {tmp_path / 'r.npz'} exist and will be replaced" in err
  assert json.loads(out.read_text())["trials"] == 6


# ---------------------------------------------------------------- a new user's command lines

def _planned(argv):
  """The parsed and defaulted options of `jbai ARGV`, and its rule names (planned
  and checked as the command plans them, nothing run)."""
  from jbai.cli import budget as budget_cli
  from jbai.cli.args import fill_defaults
  args = cli.build_parser().parse_args(argv)
  fill_defaults(args)
  if args.budget is None:
    return args, [run.rule.name for run in cli.plan_command(args).runs]
  return args, [run.rule.name for run in budget_cli.plan_budget(args)[2]]


@pytest.mark.parametrize("question, confidence, at_budget", [
    ([], "itcb", "sequential-halving"),
    (["--top", "2"], "ebtc-top-m", "ebtc-top-m"),
    (["--above", "0.5"], "tas-above", "apt"),
    (["--eps-good", "0.1"], "ebtc-eps", "ebtc-eps"),
    (["--eps-good", "0"], "itcb", "sequential-halving"),  # eps = 0: the best arm
])
def test_each_question_has_a_default_rule(question, confidence, at_budget):
  """Without --rule a question runs its own rule (cli.args.QUESTIONS), planned and
  checked like a typed one, at a fixed confidence and at a budget."""
  args, rules = _planned(["run"] + question)
  assert rules == [confidence] and args.rule == [confidence]
  assert _planned(["run", "--budget", "1000"] + question)[1] == [at_budget]
  if question[:1] == ["--top"]:  # the default means have a unique top m for every m
    assert len(set(args.means)) == len(args.means)
  assert _planned(["run", "--rule", "uniform"] + question)[1] == ["uniform"]  # typed wins


def test_top_m_with_no_rule_runs(capsys):
  assert cli.main(["run", "--top", "2", "--trials", "8", "--delta", "0.1", "--json"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert out["rule"].startswith("ebtc-top-m(m=2") and out["trials"] == 8


def test_help_names_the_default_rules_and_every_question(capsys):
  assert cli.main(["run", "--help"]) == 0
  text = capsys.readouterr().out
  for rule in ("itcb", "sequential-halving", "ebtc-top-m", "tas-above", "apt", "ebtc-eps"):
    assert rule in text
  assert cli.main(["--help"]) == 0
  text = capsys.readouterr().out
  assert "Fixed-confidence" not in text and "fixed budget" in text


@pytest.mark.parametrize("argv, shown", [
    (["--top", "2", "--rule", "ebtc-top-m", "--beta", "0.3"], "beta=0.3"),
    (["--above", "0.5", "--rule", "apt", "--eps", "0.05"], "eps=0.05"),
    (["--rule", "ttts", "--param", "max_redraws=10"], "max_redraws=10"),
    (["--rule", "tas-d", "--param", "solver=exact"], "solver=exact"),
    (["--rule", "tcb,ttts", "--param", "max_redraws=7"], "tcb(eps=1.0)"),  # tcb ignores it
])
def test_every_rule_parameter_reaches_its_rule(argv, shown):
  args = cli.build_parser().parse_args(["run"] + argv)
  from jbai.cli.args import fill_defaults
  fill_defaults(args)
  assert shown in repr(cli.plan_command(args).runs[0].rule)


@pytest.mark.parametrize("argv, message", [
    (["--budget", "100,100"], "argument --budget: 100 appears twice in '100,100'"),
    (["--budget", "100,1e2"], "100 appears twice"),
    (["--budget", "0"], "argument --budget: '0' must be >= 1"),
    (["--budget", "100", "--repair"], "--repair mends the finished-trial file of --out"),
    (["--repair"], "--repair mends the finished-trial file of --out"),
    (["--eps-good", "-0.1"], "--eps-good must be a finite number >= 0, got -0.1"),
    (["--above", "0.5", "--rule", "apt", "--beta", "0.3"], "--beta is taken by none of"),
    (["--rule", "tcb", "--param", "h1=4"], "--param h1 is taken by none of --rule tcb; "
     "the rules with h1: ucb-e"),
    (["--rule", "tcb", "--param", "beta=0.3"], "beta has its own option: use --beta"),
    (["--rule", "tcb", "--param", "h1"], "'h1' is not NAME=VALUE"),
    (["--rule", "ucb-e", "--param", "h1=4", "--param", "h1=5"], "--param h1 is given twice"),
])
def test_bad_budget_param_and_repair_input_is_one_line(capsys, argv, message):
  assert cli.main(["run", "--trials", "4"] + argv) == 2
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and message in err, err


def test_a_run_to_a_budget_shows_rewards_and_the_time_left(capsys):
  """StepProgress: the bar counts rewards against trials x budget; without a bar,
  one line once more than StepProgress.LONG seconds are left (rate after the
  first chunk, so the compile is not counted)."""
  from jbai.cli.budget import StepProgress
  drawn = []

  class Bar:
    label = "uniform"

    def update(self, done, total, unit):
      drawn.append((done, total, unit))

  step = StepProgress(Bar(), left=10**12, show=False)
  import time
  step.first = (time.perf_counter() - 10, 0)  # as if the first chunk came 10 s ago
  step(0, 1, 10**6)
  assert drawn == [(10**6, 10**12, "rewards")]
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and "1e+05 rewards/s" in err and "left for" in err
  step(0, 1, 2 * 10**6)  # said once
  assert capsys.readouterr().err == ""


def test_eps_with_above_is_the_questions_tolerance():
  """--above L --eps E asks Locatelli et al.'s question above(L, E), which APT's
  eps matches (a run of apt at a budget is not refused); several values are."""
  from jbai import problems
  from jbai.cli.args import fill_defaults
  from jbai.cli.plan import problem_of
  args = cli.build_parser().parse_args(["run", "--above", "0.5", "--eps", "0.05",
                                        "--rule", "apt", "--budget", "200"])
  fill_defaults(args)
  assert problem_of(args) == problems.above(0.5, 0.05)
  args = cli.build_parser().parse_args(["run", "--above", "0.5", "--eps", "0.1,0.2"])
  with pytest.raises(ValueError, match="give one value, got 0.1,0.2"):
    problem_of(args)
