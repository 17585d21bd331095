"""The user-facing corners of issue 52, one test (or one parameter) each: damaged
tables under `jbai plot`, a spec path that holds '=', the types of `jbai.study`'s
table, messages that named the wrong cause or option, a second Ctrl-C, and a
record of a store whose checksum was deleted. Each ends with a correct answer, or
with one line on stderr naming the bad value or file and exit code 2.

Nothing here compiles a simulation but the slow test of a second Ctrl-C: the
tables are written by hand, specs are only resolved, and the stores are filled
by their own `add`.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from jbai import cli
from jbai.cli import run as run_mod
from jbai.cli.trials import TrialLog, run_spec, spec_key
from jbai.host.atomic import write_csv
from jbai.host.jsonlines import FORMAT, FORMAT_VERSION, SUM, checksum
from jbai.host.paths import check_folder
from jbai.studies import read_table, spec as spec_lib, tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def refused(capsys, *argv, fragment=""):
  """The command exits 2 with one line on stderr that contains `fragment`."""
  code = cli.main([str(a) for a in argv])
  out, err = capsys.readouterr()
  assert code == 2, (code, out, err)
  assert len(err.strip().splitlines()) == 1 and err.startswith("jbai: error: "), err
  assert fragment in err, err
  return err


# ---------------------------------------------------------------- 1. jbai plot

def _cell(instance, source, delta, trials=3, mean=20.0, lo=15.0, hi=25.0):
  """A row of cells.csv (`tables.CELL_COLUMNS`) of a rule tcb on a 2-arm instance."""
  t_star = 8.0
  t_log = t_star * np.log(1 / delta)
  return [instance, source, "drawn-0" if source == "drawn" else instance, "gaussian", 2,
          "tcb", "", "gk16", delta, trials, mean, lo, hi, mean, 0.0, 0.0, 0.56, 0, 0, t_star,
          t_log, mean / t_log]


def study_folder(path, trials=3, lo=15.0, hi=25.0) -> str:
  """A study's folder with its two tables, written as `jbai study` writes them: a
  listed instance and two drawn ones, two levels of delta."""
  cells, rows = [], []
  for instance, source in (("a", "listed"), ("drawn-0-0", "drawn"), ("drawn-0-1", "drawn")):
    for delta in (0.1, 0.01):
      cells.append(_cell(instance, source, delta, trials, lo=lo, hi=hi))
      rows += [[instance, "tcb", "", "gk16", delta, j, 20 + j, 0, 1, 0] for j in range(trials)]
  write_csv(os.path.join(path, "cells.csv"), tables.CELL_COLUMNS, cells)
  write_csv(os.path.join(path, "trials.csv"), tables.TRIAL_COLUMNS, rows)
  return str(path)


def _rewrite(path, edit):
  with open(path, newline="", encoding="utf-8") as f:
    lines = f.read().split("\r\n")
  with open(path, "w", newline="", encoding="utf-8") as f:
    f.write("\r\n".join(edit(lines)))


def _drop_column(name):
  def edit(lines):
    header = lines[0].split(",")
    k = header.index(name)
    return [",".join(c for j, c in enumerate(line.split(",")) if j != k) if line else line
            for line in lines]
  return edit


def _set(line_index, column, value):
  def edit(lines):
    k = lines[0].split(",").index(column)
    cells = lines[line_index].split(",")
    cells[k] = value
    lines[line_index] = ",".join(cells)
    return lines
  return edit


DAMAGE = {  # file, how it is damaged, what the message names (after the file)
    "garbage trials (not UTF-8)": ("trials.csv", b"garbage\x00\xff\nxx", "is not UTF-8"),
    "garbage trials (text)": ("trials.csv", b"garbage\nxx\n", "has no column 'instance'"),
    "renamed tau": ("trials.csv", lambda ls: [ls[0].replace(",tau,", ",taux,")] + ls[1:],
                    "has no column 'tau'"),
    "dropped rule": ("trials.csv", _drop_column("rule"), "has no column 'rule'"),
    "cells without t_star": ("cells.csv", _drop_column("t_star"), "has no column 't_star'"),
    "missing trials": ("trials.csv", None, "holds no trials.csv"),
    "empty cells (header only)": ("cells.csv", lambda ls: ls[:1] + [""], "holds no cell"),
    "empty cells (no header)": ("cells.csv", b"", "is empty"),
    "a negative delta": ("cells.csv", _set(1, "delta", "-0.1"),
                         "line 2, column 'delta': '-0.1' is not a level"),
    "a rule's name for delta": ("cells.csv", _set(1, "delta", "gk16"),
                                "line 2, column 'delta': 'gk16'"),
    "an empty t_star": ("cells.csv", _set(2, "t_star", ""), "line 3, column 't_star': ''"),
    "a mean tau of 0": ("cells.csv", _set(1, "mean_tau", "0"), "column 'mean_tau': '0'"),
    "an error rate of 2": ("cells.csv", _set(1, "error_rate", "2"), "column 'error_rate'"),
    "a cell short of a field": ("cells.csv", lambda ls: ls[:2] + [ls[2].rsplit(",", 1)[0]]
                                + ls[3:], "line 3: 21 fields, the header has 22"),
    "a tau that is not whole": ("trials.csv", _set(1, "tau", "2.5"),
                                "line 2, column 'tau': '2.5' is not a whole number"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_plot_on_a_damaged_table_names_the_file_and_exits_2(tmp_path, capsys, kind):
  name, damage, fragment = DAMAGE[kind]
  folder = study_folder(tmp_path)
  path = os.path.join(folder, name)
  if damage is None:
    os.remove(path)
  elif isinstance(damage, bytes):
    with open(path, "wb") as f:
      f.write(damage)
  else:
    _rewrite(path, damage)
  err = refused(capsys, "plot", folder, fragment=fragment)
  assert (path if damage is not None else name) in err, err
  assert not any(f.endswith(".png") for f in os.listdir(folder))


def test_plot_draws_a_study_of_one_trial_per_cell(tmp_path, capsys):
  """One trial: the interval of E[tau] is NaN ("nan" in cells.csv), drawn without one."""
  folder = study_folder(tmp_path, trials=1, lo=float("nan"), hi=float("nan"))
  assert ",nan,nan," in open(os.path.join(folder, "cells.csv")).read()
  assert cli.main(["plot", folder]) == 0
  assert "4 figure(s)" in capsys.readouterr().out


# ---------------------------------------------------------------- 2. a spec's path

SPEC = '[[instances]]\nfamily = "bernoulli"\nmeans = [0.5, 0.4]\n[[rules]]\nname = "tcb"\n'


@pytest.mark.parametrize("folder", ["seed=1", "a b", "two\nlines"])
def test_an_existing_file_is_a_spec_path_whatever_its_name_holds(tmp_path, folder):
  (tmp_path / folder).mkdir()
  path = tmp_path / folder / "spec.toml"
  path.write_text(SPEC.replace("tcb", "itcb"))
  assert not spec_lib.is_toml_text(str(path))
  assert spec_lib.load(str(path))["settings"][0]["rule"] == "itcb"
  assert spec_lib.load(path)["settings"][0]["rule"] == "itcb"  # a path-like too


def test_a_missing_path_is_named_and_text_with_a_newline_is_toml(tmp_path, capsys):
  missing = str(tmp_path / "seed=2" / "spec.toml")
  refused(capsys, "study", missing, "--out", tmp_path / "out",
          fragment=f"{missing}: cannot read the spec (No such file or directory)")
  assert spec_lib.is_toml_text(SPEC)
  assert spec_lib.load(SPEC)["settings"][0]["rule"] == "tcb"


# ---------------------------------------------------------------- 3. the table's types

def test_the_cells_table_is_read_with_the_types_it_was_written_with(tmp_path, monkeypatch):
  """With one trial the interval is NaN (a float, not the text 'nan'); an instance
  named "1" stays text; the counts are integers, the rest floats."""
  write_csv(str(tmp_path / "cells.csv"), tables.CELL_COLUMNS,
            [_cell("1", "listed", 0.1, trials=1, mean=20.0, lo=float("nan"),
                   hi=float("nan"))])
  cells = read_table(str(tmp_path / "cells.csv"))
  assert cells["instance"][0] == "1" and cells["params"][0] == ""
  assert np.isnan(cells["tau_ci_low"][0]) and np.isnan(cells["tau_ci_high"][0])
  assert cells["tau_ci_low"].dtype == np.float64 and cells["mean_tau"].dtype == np.float64
  assert cells["K"].dtype == np.int64 and cells["trials"][0] == 1
  monkeypatch.setitem(sys.modules, "pandas", None)  # without pandas: a dict of lists
  columns = read_table(str(tmp_path / "cells.csv"))
  assert columns["instance"] == ["1"] and columns["params"] == [""]
  assert np.isnan(columns["tau_ci_low"][0]) and isinstance(columns["tau_ci_low"][0], float)
  assert columns["K"] == [2] and isinstance(columns["mean_tau"][0], float)


# ---------------------------------------------------------------- 4. messages

@pytest.mark.parametrize("argv", [
    ["run", "--out", ""], ["grad", "--out", " "], ["study", SPEC, "--out", ""],
    ["reproduce", "--out", ""], ["plot", ""]])
def test_an_empty_path_is_refused(capsys, argv):
  refused(capsys, *argv, fragment="is an empty path")


def test_an_empty_folder_is_refused_by_the_api():
  with pytest.raises(ValueError, match="--out is empty"):
    check_folder("")


BERNOULLI_DRAW = '[[instances]]\nfamily = "bernoulli"\ndraw = {{ {} }}\n' + SPEC.split(
    "\n", 3)[3]


@pytest.mark.parametrize("draw, fragment", [
    ("count = 3, arms = 4, low = 0.0, high = 5.0",
     "instances[0].draw.high = 5.0: is outside Theta = [0.0, 1.0] of the bernoulli family"),
    ("count = 3, arms = 4, low = -1.0, high = 0.5", "instances[0].draw.low = -1.0"),
    ("count = 3, arms = 4, mean = 5.0, sd = 0.1",
     "instances[0].draw.mean = 5.0: no valid instance in 10000 draws: 10000 of them put a "
     "mean outside Theta = [0.0, 1.0]"),
    ("count = 3, arms = 4, low = 0.4, high = 0.5, min_gap = 0.2",
     "instances[0].draw.min_gap = 0.2: no valid instance"),
])
def test_a_draw_is_refused_for_its_real_cause(tmp_path, capsys, draw, fragment):
  spec = tmp_path / "spec.toml"
  spec.write_text(BERNOULLI_DRAW.format(draw))
  refused(capsys, "study", spec, "--out", tmp_path / "out", fragment=fragment)
  assert not (tmp_path / "out").exists()


def test_a_draw_inside_theta_is_drawn_as_before():
  """The same means as before the causes were told apart (the draws are unchanged)."""
  from jbai.studies.instances import draw_means
  rows = draw_means(2, 3, 5, 0.0, 1.0, low=0.0, high=1.0, min_gap=0.1)
  rng = np.random.default_rng(5)
  first = rng.uniform(0.0, 1.0, 3)
  while np.sort(first)[-1] - np.sort(first)[-2] < 0.1:
    first = rng.uniform(0.0, 1.0, 3)
  np.testing.assert_array_equal(rows[0], first)


def test_a_study_out_of_memory_names_the_spec_trials(tmp_path, capsys, monkeypatch):
  def out_of_memory(args):
    raise MemoryError
  monkeypatch.setattr(cli, "cmd_study", out_of_memory)
  spec = tmp_path / "spec.toml"
  spec.write_text(SPEC)
  err = refused(capsys, "study", spec, "--out", tmp_path / "out",
                fragment="out of memory; lower the spec's trials ([study] trials")
  assert "--trials" not in err
  monkeypatch.setattr(cli, "cmd_oracle", out_of_memory)
  refused(capsys, "oracle", fragment="run fewer trials per command (--trials)")


@pytest.mark.parametrize("params, fragment", [
    ('{ sigma = "x" }', "instances[0].family_params.sigma = 'x': must be a number"),
    ("{ sigma = true }", "instances[0].family_params.sigma = True: must be a number"),
    ("{ sigma = nan }", "instances[0].family_params.sigma = nan: must be a number"),
    ("{ sigma = -1.0 }", "instances[0].family_params = {'sigma': -1.0}"),
])
def test_a_family_parameter_that_is_not_a_number_is_named(tmp_path, capsys, params, fragment):
  spec = tmp_path / "spec.toml"
  spec.write_text(f'[[instances]]\nfamily = "gaussian"\nfamily_params = {params}\n'
                  'means = [1.0, 0.0]\n[[rules]]\nname = "tcb"\n')
  refused(capsys, "study", spec, "--out", tmp_path / "out", fragment=fragment)


# A process that runs a block of `quiet_after_first_interrupt`, as the `jbai`
# script does, and sends itself SIGINT twice: the second inside the block (it
# ends the process at once) or after it (the process's shutdown: ignored).
TWICE = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from jbai.cli.run import EXIT_INTERRUPTED, quiet_after_first_interrupt
def press():
  os.kill(os.getpid(), signal.SIGINT)
  time.sleep(1)  # the handler runs before it ends, unless SIGINT is ignored
with quiet_after_first_interrupt():
  try:
    press()
  except KeyboardInterrupt:
    print("first", flush=True)
  if sys.argv[1] == "inside":
    press()
    print("not reached", flush=True)
press()
print("shut down", flush=True)
sys.exit(EXIT_INTERRUPTED)
"""


@pytest.mark.parametrize("where, printed", [("inside", "first\n"),
                                            ("after", "first\nshut down\n")],
                         ids=["inside", "after"])
def test_a_second_interrupt_ends_the_process_quietly(where, printed):
  proc = subprocess.run([sys.executable, "-c", TWICE, where], capture_output=True, text=True,
                        timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
  assert proc.returncode == run_mod.EXIT_INTERRUPTED, proc.stderr
  assert proc.stdout == printed and proc.stderr == ""


def test_the_script_handler_is_gone_after_an_uninterrupted_command():
  """`main()` without argv (the script) puts Python's handler back when no Ctrl-C came."""
  before = signal.getsignal(signal.SIGINT)
  signal.signal(signal.SIGINT, signal.default_int_handler)
  try:
    with run_mod.quiet_after_first_interrupt():
      assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
  finally:
    signal.signal(signal.SIGINT, before)


LAUNCH = ("import runpy, signal, sys; "
          "signal.signal(signal.SIGINT, signal.default_int_handler); "
          "sys.argv[0] = 'jbai'; runpy.run_module('jbai.cli', run_name='__main__')")


def _twice(argv, saved, gap=0.05) -> subprocess.CompletedProcess:
  """`jbai ARGV` in a subprocess, sent SIGINT twice `gap` seconds apart once the
  file `saved` holds finished trials."""
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  proc = subprocess.Popen([sys.executable, "-c", LAUNCH, *map(str, argv)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  deadline = time.time() + 240
  while not (os.path.exists(saved) and os.path.getsize(saved) > 2000) and \
      proc.poll() is None and time.time() < deadline:
    time.sleep(0.01)
  assert proc.poll() is None, "the command ended before it could be interrupted"
  proc.send_signal(signal.SIGINT)
  time.sleep(gap)
  proc.send_signal(signal.SIGINT)
  out, err = proc.communicate(timeout=120)
  return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@pytest.mark.slow  # subprocesses that compile and run: about 20 s
@pytest.mark.parametrize("gap", [0.01, 0.05, 0.3])
def test_two_ctrl_c_end_run_and_study_quietly_with_130(tmp_path, gap):
  out = tmp_path / f"r{gap}.json"
  done = _twice(["run", "--rule", "tcb", "--means", "1,0.8,0.6", "--delta", "1e-2",
                 "--trials", "100000", "--chunk", "64", "--out", out],
                tmp_path / f"r{gap}.partial.jsonl", gap)
  assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
  spec = tmp_path / "spec.toml"
  spec.write_text('[study]\ntrials = 3000\n[[instances]]\npreset = "gk16-mu1"\n'
                  '[[rules]]\nname = "tcb"\n')
  folder = tmp_path / f"study{gap}"
  done = _twice(["study", spec, "--out", folder, "--quiet"], folder / "partial.jsonl", gap)
  assert done.returncode == 130 and done.stderr.strip() == "jbai: interrupted", done.stderr


# ---------------------------------------------------------------- 5. the stores

RUN = ["run", "--means", "1,0.5", "--rule", "tcb", "--delta", "0.1", "--trials", "24"]
CHUNK = {"index": np.arange(4), "tau": np.array([[5], [7], [9], [6]]),
         "answer": np.zeros((4, 1), int), "counts": np.array([[3, 2], [4, 3], [5, 4], [3, 3]]),
         "steps": np.array([5, 7, 9, 6])}


def _specs(out) -> dict:
  """{run key: spec} of `jbai RUN --out out`, as `cmd_run` names its run."""
  args = cli.build_parser().parse_args(RUN + ["--out", str(out)])
  plan = cli.plan_command(args)
  spec = run_spec(args, plan, plan.runs[0])
  return {spec_key(spec): spec}


def test_a_tampered_record_without_its_checksum_is_refused(tmp_path, capsys):
  """Its checksum deleted and its tau edited: the file's first line marks it as
  written by this version, so the line is refused, and --repair can drop it."""
  out = tmp_path / "r.json"
  partial = tmp_path / "r.partial.jsonl"
  specs = _specs(out)
  key = next(iter(specs))
  TrialLog(str(partial), specs).saver(key)(CHUNK)
  lines = partial.read_text().splitlines()
  assert json.loads(lines[0])[FORMAT] == FORMAT_VERSION
  row = json.loads(lines[1])
  del row[SUM]
  row["tau"] = [[10 * t for t in taus] for taus in row["tau"]]
  partial.write_text("\n".join([lines[0], json.dumps(row)]) + "\n")
  err = refused(capsys, *RUN, "--out", out,
                fragment=f"{partial} line 2: has no checksum, in a store whose every record")
  assert "--repair" in err and not out.exists()
  repaired = TrialLog(str(partial), specs, repair=True)
  assert repaired.done(key) is None and repaired.dropped[0].line == 2
  assert partial.read_text().splitlines() == lines[:1]  # cut before the line


def test_a_store_of_an_earlier_version_still_resumes(tmp_path):
  """No format mark: its lines with a checksum and those without (from before
  checksums) are read, and the chunks appended to it keep it unmarked."""
  out = tmp_path / "r.json"
  partial = tmp_path / "r.partial.jsonl"
  specs = _specs(out)
  key = next(iter(specs))
  old = {"run": key, **{k: v[:2].tolist() for k, v in CHUNK.items()}}
  spec_line = {"run": key, "spec": specs[key]}
  partial.write_text(json.dumps({**spec_line, SUM: checksum(spec_line)}) + "\n" +
                     json.dumps(old) + "\n")
  log = TrialLog(str(partial), specs)
  assert log.done(key)["index"].tolist() == [0, 1] and not log.store.marked
  log.saver(key)({k: v[2:] for k, v in CHUNK.items()})
  again = TrialLog(str(partial), specs)
  assert again.done(key)["tau"].tolist() == CHUNK["tau"].tolist()
  assert FORMAT not in partial.read_text()
