"""Reproduction of the paper's numerical section: `jbai reproduce`.

Every table and figure of the section "Numerical Experiments" (and one beyond
it) is an experiment with a JSON-like config (`specs.spec(name, scale)`), a list
of jobs (calls of `jbai.simulate` or `jbai.trace`) and a report that writes CSV
files, PNG figures and the paper's claims next to jbai's numbers.

  table1       w(nu) of the four instances of Table 1, oracle against print
  transport    Gamma_t(T_t/t) over time for TCB and ITCB (Figure tc)
  beta_t       the best arm's share T_t(a*)/t over time (Figure beta)
  oversampled  the ablation `always-top`: Gamma_t drifts from Gamma(nu) (Figure bestarm)
  sensitivity  mean stopping time against beta (Figures 3 and 4)
  figure1      beta-optimal sample complexity against beta (Figure 1)
  ratio        E[tau] / (T* log(1/delta)) as delta -> 0 (beyond the paper)
  gradient     grad E[tau] / log(1/delta) against grad T*(nu) (beyond the paper)
  hardest      the instances where a rule is least efficient, by gradient ascent
               through the simulator against random search (beyond the paper)
  gk16         Garivier & Kaufmann (2016), Table 1: their rules (Track-and-Stop
               C and D, KL-LUCB, KL-Racing, Chernoff-Racing) beside TCB and ITCB;
               the shipped study gk16, its jobs planned by `jbai.studies.tables`

Results are kept per job in <out>/runs.jsonl as each job ends, so a rerun resumes
and recomputes nothing that is recorded; the reports are rebuilt from the store
every time. <out>/claims.md gathers the claims tables of the experiments run.

The items run on the study engine (`jbai.studies`: its jobs, its store and
runner, its tables and matplotlib plumbing); what is here is the paper's own:

  specs.py       the config of every experiment at each scale ("smoke", "paper";
                 gk16, ratio and sensitivity are studies shipped with jbai)
  experiment.py  `Experiment`: an item's jobs and its report
  reference.py   the oracle quantities the figures compare with
  table1.py, traces.py, sensitivity.py, figure1.py, ratio.py, gradients.py, gk16.py:
                 the experiments, each with its jobs, its report and its claims
                 (gradients.py adds the kinds of job of the gradient items)

This module gathers the experiments (`EXPERIMENTS`) and the kinds of job they run
(`KINDS`) and runs them (`run`, `main`).

Example:
  $ jbai reproduce --scale smoke --out /tmp/jbai-smoke
  $ jbai reproduce --scale paper --only sensitivity
"""

import os
import sys
import time
from typing import Optional

from jbai.host.atomic import write_json, write_text
from jbai.host.paths import check_folder
from jbai.reproduce import figure1, gk16, gradients, ratio, sensitivity, specs, table1, traces
from jbai.reproduce.experiment import Experiment
from jbai.reproduce.specs import spec
from jbai.studies import jobs
from jbai.studies.jobs import job_key
from jbai.studies.store import STORE_NAME, Runner

# The experiments, in the order they run and appear in claims.md.
EXPERIMENTS = {e.name: e for e in [table1.EXPERIMENT, *traces.EXPERIMENTS,
                                   sensitivity.EXPERIMENT, figure1.EXPERIMENT,
                                   ratio.EXPERIMENT, *gradients.EXPERIMENTS,
                                   gk16.EXPERIMENT]}

# {job kind: how its jobs run}: the study engine's kinds and the gradient items'.
KINDS = {**jobs.KINDS, **gradients.KINDS}

CLAIMS_NAME = "claims.md"


def _check_names(names) -> list:
  names = list(EXPERIMENTS) if not names else list(names)
  for name in names:
    if name not in EXPERIMENTS:
      raise ValueError(f"unknown experiment {name!r}; choose from {list(EXPERIMENTS)}")
  return names


def run(names=None, scale: str = "smoke", out: str = "results", progress: bool = True,
        stream=None, configs: Optional[dict] = None) -> dict:
  """Runs the experiments `names` (default: all) at `scale` into the folder `out`.

  Args:
    names: experiment names (keys of EXPERIMENTS), or None for all.
    scale: "smoke" or "paper" (see specs).
    out: output folder; created if missing.
    progress: show a progress bar on stderr.
    stream: where progress goes (default stderr).
    configs: optional {name: config} replacing the scale's config of an experiment.

  Returns:
    {"computed", "skipped", "failed", "seconds", "files"}: jobs run now, jobs found
    in the store, jobs that could not run (with the reason), wall seconds, and the
    files written.
  """
  names = _check_names(names)
  configs = dict(configs or {})
  for name in names:
    if name not in configs:  # a given config runs at any scale name ("custom")
      configs[name] = spec(name, scale)
  check_folder(out, "--out")  # a writable folder (or one to create), before any job
  os.makedirs(out, exist_ok=True)
  runner = Runner(out, KINDS, progress, stream)
  for damage in runner.damaged:
    print(f"jbai reproduce: skipped {damage} (its job runs again)",
          file=stream or sys.stderr)
  bar = runner.progress(job for name in names for job in EXPERIMENTS[name].jobs(configs[name]))
  t0 = time.perf_counter()
  before = set(os.listdir(out))
  for name in names:
    exp = EXPERIMENTS[name]
    records = runner.ensure(exp.jobs(configs[name]), bar)
    claims = exp.report(configs[name], records, out)
    write_json(os.path.join(out, f"{name}.claims.json"),
               {"experiment": name, "title": exp.title, "scale": scale,
                "note": specs.NOTES.get(name, "") if scale == "paper" else "",
                "claims": claims})
  write_claims_table(out)
  seconds = time.perf_counter() - t0
  files = sorted(set(os.listdir(out)) | before)
  return {"computed": runner.computed, "skipped": runner.skipped,
          "failed": runner.failed, "seconds": seconds, "files": files}


def run_experiment(name: str, config: dict, out: str = "results",
                   progress: bool = True) -> dict:
  """Runs one experiment with an explicit config (the scripts in experiments/ use it)."""
  scale = "paper" if config == spec(name, "paper") else "custom"
  return run([name], scale, out, progress, configs={name: config})


def script(name: str, config: dict, description: str, argv=None) -> dict:
  """The command line of experiments/<name>.py: `python experiments/<name>.py
  [--out DIR]` runs the experiment with the script's config, with JAX's
  persistent compilation cache on (as `jbai reproduce`).

  Args:
    name: the experiment.
    config: the script's CONFIG.
    description: the script's docstring (its first line is the --help text).
    argv: the arguments (default: sys.argv[1:]).
  """
  import argparse
  from jbai.host.caches import enable_compilation_cache
  parser = argparse.ArgumentParser(description=description.splitlines()[0])
  parser.add_argument("--out", default="results")
  out = parser.parse_args(argv).out
  enable_compilation_cache()
  return run_experiment(name, config, out)


def write_claims_table(out: str) -> str:
  """Gathers <out>/<name>.claims.json of every experiment into <out>/claims.md."""
  import json
  lines = ["# The paper's claims and jbai's numbers", "",
           "| item | paper | jbai | verdict |", "|---|---|---|---|"]
  notes = []
  for name in EXPERIMENTS:
    path = os.path.join(out, f"{name}.claims.json")
    if not os.path.exists(path):
      continue
    with open(path, encoding="utf-8") as f:
      block = json.load(f)
    for c in block["claims"]:
      lines.append(f"| {name}: {_cell(c['claim'])} | {_cell(c['paper'])} | "
                   f"{_cell(c['jbai'])} | {_cell(c['verdict'])} |")
    if block.get("note"):
      notes.append(f"- {name} ({block['scale']} scale): {block['note']}")
  if notes:
    lines += ["", "Settings that differ from the paper:", ""] + notes
  return write_text(os.path.join(out, CLAIMS_NAME), "\n".join(lines) + "\n")


def _cell(text: str) -> str:
  return str(text).replace("|", "\\|").replace("\n", " ")


def main(args) -> int:
  """Entry point of `jbai reproduce` (args: scale, only, out).

  Returns:
    0, or 1 when some job could not run (each is listed with its reason).
  """
  scale = getattr(args, "scale", "smoke") or "smoke"
  names = [args.only] if getattr(args, "only", None) else None
  out = getattr(args, "out", None) or "results"
  _check_names(names)
  if scale not in specs.SCALES:
    raise ValueError(f"unknown scale {scale!r}; choose from {sorted(specs.SCALES)}")
  summary = run(names, scale, out, progress=True)
  print(f"jbai reproduce --scale {scale}: {summary['computed']} job(s) run, "
        f"{summary['skipped']} found in {os.path.join(out, STORE_NAME)}, "
        f"{summary['seconds']:.0f} s")
  for label, reason in summary["failed"]:
    print(f"  not run: {label}: {reason}")
  print(f"  figures (PNG), numbers (CSV) and the claims table ({CLAIMS_NAME}) in {out}/")
  return 1 if summary["failed"] else 0


__all__ = ["KINDS", "EXPERIMENTS", "Experiment", "job_key", "main", "run",
           "run_experiment", "script", "spec", "specs", "write_claims_table"]
