"""Studies: instance sets, rule sweeps, tidy tables and the field's figures, from one spec.

`jbai study SPEC.toml --out DIR` (and `jbai.study(spec, out)`) runs a study: its
jobs are calls of `jbai.simulate` (of a budget study, `jbai.budget`), stored in
DIR/runs.jsonl as each ends, with each job's finished trials kept as they come
(DIR/partial.jsonl), so that Ctrl-C or a kill loses no finished trial and the
same command resumes to the same files. Then, in DIR:

  cells.csv    one row per (instance, rule setting, threshold, delta); of a
               budget study ([study] budget), one row per (instance, rule
               setting, budget run, checkpoint t)
  trials.csv   one row per trial (of a budget study, per trial and checkpoint)
  study.json   the resolved spec, versions, devices, seed and timings, and the
               figures' digest (`figure_digest`)
  *.png        the figures (`jbai.studies.figures`; `jbai plot DIR` redraws them),
               drawn again only when the tables or the code that draws them change

The engine, one step a module (`jbai reproduce` runs the paper's items on it):

  spec.py       the schema: reading, checking and resolving a spec
  instances.py  presets, the alpha-family, random draws, CSV files
  plan.py       the jobs of a resolved study
  jobs.py       what a job is, its key, and how its kind runs (simulate, budget,
                trace)
  store.py      the runner: jobs not yet stored run, each stored as it ends, with
                the checkpoints of their finished trials
  shards.py     a study's jobs in N disjoint parts, a job array's tasks, each
                with its own store, merged by the plain run
  distributed.py  the processes of a jax.distributed job (`--coordinator`,
                `--distributed`): process I runs shard I/N, then process 0 merges
  tables.py     the two tidy tables, from the stored records
  figures.py    the figures, from the saved tables (plots.py: matplotlib)

Studies shipped with jbai (jbai/studies/shipped/NAME.toml, `spec.shipped()`) run by
their name: `jbai study gk16 --out DIR` is Garivier & Kaufmann (2016)'s Table 1,
the item gk16 of `jbai reproduce`; `jbai study ratio` and `jbai study sensitivity`
the items ratio (E[tau] / (T* log(1/delta)) as delta goes to 0) and sensitivity
(the paper's Figures 3 and 4).

Example (a spec such as the one of docs/guide/study.md, saved as study.toml):
  $ jbai study study.toml --out /tmp/study
  $ jbai plot /tmp/study
"""

import contextlib
import csv
import functools
import os
import sys
import tempfile
import time

CELLS_NAME, TRIALS_NAME, STUDY_NAME = "cells.csv", "trials.csv", "study.json"


def _versions() -> dict:
  import platform
  from importlib import metadata
  import jax
  import jaxlib
  import numpy
  return {"jbai": metadata.version("jbai"), "jax": jax.__version__, "jaxlib": jaxlib.__version__,
          "numpy": numpy.__version__, "python": platform.python_version()}


def run(spec_or_path, out: str, progress: bool = True, stream=None,
        figures: bool = True, processes: int = 1, shard=None) -> dict:
  """Runs a study into the folder `out` (resuming what is stored there).

  Args:
    spec_or_path: a spec dict, or a string as `spec.load` reads it: an existing
      file's path (always), TOML text (holding a newline) or a shipped study's name.
    out: output folder; created if missing.
    progress: show progress on stderr (a bar on a terminal, one line per job).
    stream: where progress goes (default stderr).
    figures: draw the figures (needs matplotlib).
    processes: run each job's trials in this many worker processes, each on one
      core with one CPU device (`jbai.host.processes`; 1: in this process, on
      its devices). The results do not depend on it.
    shard: None, or "I/N", "slurm" or a `jbai.studies.shards.Shard`: run only the
      shard's part of the jobs, into its own files, and write no tables
      (`jbai.studies.shards`). Without it, the jobs stored by any shard in `out`
      are not run again, and the tables are those of a run without shards.

  Returns:
    {"cells": the cells.csv path (None for a shard), "computed": jobs run now,
    "skipped": jobs found in the store, "seconds": wall seconds, "files": files
    written}.

  Raises:
    jbai.studies.spec.SpecError: for a bad spec, before any work.
    ValueError: one line, for a bad shard, a shard that is running already, or
      shards of another spec in `out`.
  """
  import jax
  from jbai.core import inputs
  from jbai.host.atomic import write_csv, write_json
  from jbai.host.paths import check_folder
  from jbai.studies import plan as plan_lib, shards as shards_lib, spec as spec_lib, tables
  from jbai.studies.jobs import KINDS
  from jbai.studies.store import Runner
  if shard is not None and not isinstance(shard, shards_lib.Shard):
    shard = shards_lib.parse_shard(shard)
  resolved = spec_lib.load(spec_or_path)
  processes = inputs.check_count("processes", processes, 1)
  check_folder(out, "--out")
  os.makedirs(out, exist_ok=True)
  t0 = time.perf_counter()
  if shard is not None:
    return _run_shard(resolved, out, shard, progress, stream, processes, t0)
  digest = shards_lib.spec_hash(resolved)
  shards_lib.check_spec(out, digest)
  for name, marker in shards_lib.markers(out):
    if not marker.get("done"):
      print(f"jbai study: shard {marker.get('shard')} is not done ({name}): its missing "
            "jobs run here", file=stream or sys.stderr)
  runner = Runner(out, KINDS, progress, stream, checkpoints=True,
                  read=shards_lib.store_names(out)[1:])
  records = _ensure(runner, [job for *_, job in plan_lib.plan(resolved)], processes, stream)
  cells, trials = tables.tables(resolved, records)
  cell_columns, trial_columns = tables.columns(resolved)
  files = [write_csv(os.path.join(out, CELLS_NAME), cell_columns, cells),
           write_csv(os.path.join(out, TRIALS_NAME), trial_columns, trials)]
  seconds = time.perf_counter() - t0
  job_seconds = [records[k]["result"].get("seconds", 0.0) for k in records]
  budget = ({"budget": resolved["study"]["budget"]} if tables.is_budget(resolved) else {})
  drawn = figures_of(out) if figures else None
  write_json(os.path.join(out, STUDY_NAME), {
      "spec": resolved, "seed": resolved["study"]["seed"], **budget, "versions": _versions(),
      "devices": [str(d) for d in jax.devices()],
      "timings": {"wall_seconds": seconds, "jobs": len(records), "jobs_run": runner.computed,
                  "jobs_found": runner.skipped, "job_seconds": sum(job_seconds)},
      **({} if drawn is None else {FIGURES_KEY: drawn})})
  files.append(os.path.join(out, STUDY_NAME))
  files += [os.path.join(out, name) for name in (drawn or {}).get("files", [])]
  return {"cells": files[0], "computed": runner.computed, "skipped": runner.skipped,
          "seconds": seconds, "files": files}


FIGURES_KEY = "figures"  # study.json's record of the figures drawn: their digest and files


def figure_digest(out: str) -> str:
  """The identity of a study's figures: a SHA-256 of its two tables' bytes, of the
  code that draws them (`jbai.studies.figures`, `plots`) and of matplotlib's
  version. A figure is a function of these alone (`jbai.studies.figures`)."""
  import hashlib
  from importlib import metadata
  from jbai.studies import figures as fig_lib, plots
  digest = hashlib.sha256()
  for path in (os.path.join(out, CELLS_NAME), os.path.join(out, TRIALS_NAME), fig_lib.__file__,
               plots.__file__):
    with open(path, "rb") as f:
      digest.update(f.read())
  try:
    digest.update(metadata.version("matplotlib").encode())
  except metadata.PackageNotFoundError:
    digest.update(b"no matplotlib")
  return digest.hexdigest()


def figures_of(out: str) -> dict:
  """{"digest", "files"} of the figures of the study saved in `out`: those that
  its study.json records when their digest (`figure_digest`) is today's and
  every file is there (a rerun that computes nothing new draws nothing), else
  drawn now (`jbai.studies.figures.draw`). `jbai plot` always draws.

  Raises:
    ValueError: a table that is missing or damaged, in one line (`figures.draw`).
  """
  import json
  digest = figure_digest(out)
  try:
    with open(os.path.join(out, STUDY_NAME), encoding="utf-8") as f:
      before = json.load(f).get(FIGURES_KEY) or {}
  except (OSError, ValueError, AttributeError):
    before = {}
  names = before.get("files") if before.get("digest") == digest else None
  if isinstance(names, list) and all(isinstance(n, str) and os.path.isfile(os.path.join(out, n))
                                     for n in names):
    return {"digest": digest, "files": names}
  from jbai.studies import figures as fig_lib
  return {"digest": digest, "files": [os.path.basename(p) for p in fig_lib.draw(out)]}


def _ensure(runner, jobs: list, processes: int, stream) -> dict:
  """Runs the jobs of `jobs` that `runner` does not find stored (their trials in
  `processes` worker processes); returns every job's record.

  Raises:
    ValueError: the jobs that could not run, with why.
  """
  from jbai.studies.jobs import KINDS
  for damage in runner.damaged + runner.damaged_trials:
    print(f"jbai study: skipped {damage} (its work runs again)", file=stream or sys.stderr)
  with _workers(processes, runner.pending(jobs)) as workers:
    if workers is not None:
      runner.kinds["simulate"] = KINDS["simulate"]._replace(
          run=functools.partial(KINDS["simulate"].run, workers=workers))
    records = runner.ensure(jobs, runner.progress(jobs))
  if runner.failed:
    raise ValueError("; ".join(f"{label}: {why}" for label, why in runner.failed))
  return records


def _run_shard(resolved: dict, out: str, shard, progress: bool, stream, processes: int,
               t0: float) -> dict:
  """`run` of one shard: its share of the jobs not stored in any store of `out`,
  into its own store, under its lock; its marker says when it is done."""
  from jbai.studies import plan as plan_lib, shards as shards_lib
  from jbai.studies.jobs import KINDS
  from jbai.studies.store import Runner
  files = shards_lib.Files.of(shard)
  digest = shards_lib.spec_hash(resolved)
  with shards_lib.exclusive(out, shard):
    shards_lib.check_spec(out, digest)
    mine = shards_lib.share([job for *_, job in plan_lib.plan(resolved)], shard)
    shards_lib.mark(out, shard, digest, len(mine), done=False)
    runner = Runner(out, KINDS, progress, stream, checkpoints=True, store_name=files.store,
                    partial_name=files.partial,
                    read=[n for n in shards_lib.store_names(out) if n != files.store])
    _ensure(runner, mine, processes, stream)
    marker = shards_lib.mark(out, shard, digest, len(mine), done=True)
  return {"cells": None, "computed": runner.computed, "skipped": runner.skipped,
          "seconds": time.perf_counter() - t0, "shard": str(shard), "jobs": len(mine),
          "files": [os.path.join(out, files.store), marker]}


@contextlib.contextmanager
def _workers(processes: int, pending: list):
  """Worker processes for the pending "simulate" jobs (None: in this process)."""
  if processes == 1 or not any(job["kind"] == "simulate" for job in pending):
    yield None
    return
  from jbai.host.processes import Workers
  with Workers(processes) as workers:
    yield workers


def read_table(path: str):
  """A table of a study (cells.csv, trials.csv) as a pandas DataFrame when pandas
  is importable, else a dict {column: list}; each known column with the type it
  was written with (`tables.COLUMN_TYPES`: names text, counts int, the rest
  float, "nan" a float NaN), any other column as pandas (or `_number`) reads it."""
  from jbai.studies.tables import COLUMN_TYPES
  try:
    import pandas
  except ImportError:
    pandas = None
  if pandas is not None:
    floats = [c for c, kind in COLUMN_TYPES.items() if kind is float]
    return pandas.read_csv(path, keep_default_na=False, na_values={c: ["nan"] for c in floats},
                           dtype={c: "int64" if kind is int else kind
                                  for c, kind in COLUMN_TYPES.items()})
  with open(path, newline="", encoding="utf-8") as f:
    rows = list(csv.reader(f))
  columns = {h: [] for h in rows[0]}
  for row in rows[1:]:
    for h, cell in zip(rows[0], row):
      columns[h].append(COLUMN_TYPES[h](cell) if h in COLUMN_TYPES else _number(cell))
  return columns


def _number(cell: str):
  for kind in (int, float):
    try:
      return kind(cell)
    except ValueError:
      pass
  return cell


def study(spec_or_path, out=None, progress: bool = False):
  """Runs a study and returns its cells: one row per (instance, rule setting,
  threshold, delta) with E[tau], its interval, the error rate, T*(nu) and the ratio;
  of a budget study, one row per (instance, rule setting, budget run, checkpoint t)
  with the error rate and the simple regret, each with its interval.

  Args:
    spec_or_path: a dict, or a string as `jbai.studies.spec.load` reads it: an
      existing file's path (always), TOML text (holding a newline) or a shipped
      study's name.
    out: a folder for the tables, study.json, the figures and the store (a rerun
      resumes); None: a temporary folder, removed afterwards.
    progress: show progress on stderr.

  Returns:
    The cells as a pandas DataFrame when pandas is importable, else a dict of
    columns (`jbai.studies.tables.CELL_COLUMNS`, or `BUDGET_CELL_COLUMNS`), each
    of the type it was written with (`read_table`).

  Example:
    >>> import jbai
    >>> cells = jbai.study({"study": {"trials": 4, "delta": 0.1},
    ...                     "instances": [{"family": "gaussian", "means": [1.0, 0.0]}],
    ...                     "rules": [{"name": "tcb"}]})
    >>> list(cells["rule"])
    ['tcb']
  """
  if out is not None:
    return read_table(run(spec_or_path, out, progress, figures=True)["cells"])
  with tempfile.TemporaryDirectory(prefix="jbai-study-") as tmp:
    return read_table(run(spec_or_path, tmp, progress, figures=False)["cells"])


def cmd_study(args) -> int:
  """`jbai study SPEC --out DIR` (SPEC: a TOML file or a shipped study's name)."""
  summary = run(args.spec, args.out, progress=not args.quiet, processes=args.processes,
                shard=getattr(args, "shard", None))
  if summary.get("shard") is not None:
    print(f"jbai study: shard {summary['shard']}: {summary['computed']} job(s) run, "
          f"{summary['skipped']} found, of its {summary['jobs']}; {summary['seconds']:.0f} s. "
          f"When every shard is done, `jbai study SPEC --out {args.out}` writes the tables")
    return 0
  print(f"jbai study: {summary['computed']} job(s) run, {summary['skipped']} found in "
        f"{args.out}, {summary['seconds']:.0f} s; tables, study.json and figures in "
        f"{args.out}/")
  return 0


def cmd_plot(args) -> int:
  """`jbai plot DIR`: the figures again, from the saved tables (checked as they
  are read: a missing or damaged table is one line naming the file, exit 2)."""
  import importlib.util
  from jbai.studies import figures
  figures.read_tables(args.dir)  # a damaged table first: it says what to mend
  if importlib.util.find_spec("matplotlib") is None:
    raise ValueError("jbai plot draws with matplotlib, which is not installed "
                     "(pip install 'jbai[plot]')")
  files = figures.draw(args.dir)
  print(f"jbai plot: {len(files)} figure(s) in {args.dir}/", file=sys.stdout)
  return 0


__all__ = ["CELLS_NAME", "FIGURES_KEY", "STUDY_NAME", "TRIALS_NAME", "cmd_plot", "cmd_study",
           "figure_digest", "figures_of", "read_table",
           "run", "study"]
