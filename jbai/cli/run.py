"""`jbai run`: simulate rules side by side and summarise each (rule, threshold, delta).

Every run uses the same key (common random numbers) and one trajectory per
trial for all the deltas. With --out, the JSON summary, the per-trial arrays
(.npz) and, while the command runs, its finished trials (`jbai.cli.trials`) are
written; Ctrl-C prints the summary of the finished trials and the same command
resumes.
"""

import contextlib
import os
import sys

import numpy as np

from jbai.cli import render
from jbai.cli.interrupts import interrupts_held, quiet_after_first_interrupt  # noqa: F401
from jbai.cli.plan import plan_command
from jbai.cli.trials import (EXIT_INTERRUPTED, TrialLog, checked_outputs, max_steps_of,
                             run_spec, spec_key)
from jbai.host.atomic import atomic_write, write_json
from jbai.host.progress import Progress


ARRAYS = ("tau", "answer", "correct", "hit_cap", "counts", "steps")


def simulate_runs(args, plan, log: TrialLog) -> tuple:
  """Simulates the runs in order with the same key, resuming each from the
  finished trials in `log` and saving new ones to it.

  Returns:
    ([(run, Result) of the runs that completed], interrupted), where interrupted
    is True when Ctrl-C stopped the run after the completed ones.
  """
  import jax
  from jbai.host.simulate import simulate
  show = args.progress or (not args.json and sys.stderr.isatty())  # on stderr
  delta = plan.deltas[0] if len(plan.deltas) == 1 else plan.deltas
  runs, results = plan.runs, []
  for i, run in enumerate(runs):
    tag = run.label if len(runs) == 1 else (
        f"{run.label} {run.threshold.name} ({i + 1}/{len(runs)})")
    progress = Progress(tag, show, live=True)
    done = log.done(run.key)
    try:
      res = simulate(jax.random.key(args.seed), plan.family, plan.means, run.rule, delta,
                     args.trials, threshold=run.threshold,
                     max_steps=max_steps_of(args, run.rule),
                     chunk=args.chunk, progress=progress, on_chunk=log.saver(run.key),
                     **({} if done is None else {"done": done}))
    except KeyboardInterrupt:
      progress.close()
      return results, True
    results.append((run, res))
  return results, False


def run_summary(res, d: int = 0) -> dict:
  """The JSON record of one delta of a complete run."""
  out = dict(res.summary[d])
  out.update({k: res.stats[k] for k in ("wall_seconds", "compile_seconds", "utilisation",
                                        "useful_steps", "devices", "rule", "family",
                                        "threshold", "max_steps")})
  out["steps_per_second"] = (res.stats["timed_useful_steps"] / res.stats["wall_seconds"]
                             if res.stats["wall_seconds"] > 0 else None)
  out["complete"] = True
  return out


def partial_summaries(plan, done: dict, run, n_trials: int) -> list:
  """Records of the finished trials of an interrupted run (biased towards short
  trials: see render.INTERRUPTED_NOTE), one per delta, from `jbai.simulate`'s
  raw records (tau = 0 where a level never crossed: the trial hit the cap)."""
  from jbai.core.records import finish
  from jbai.host.summary import question_optimum, summarize
  from jbai.problems.judge import slack
  means = np.asarray(plan.means)
  eps = slack(plan.problem) if plan.problem.arm else 0.0  # --eps-good: errs where not eps-good
  flat = finish(np, done, np.asarray([means]), len(done["index"]), plan.problem)
  tau, correct, hit_cap = flat["tau"], flat["correct"], flat["hit_cap"]
  from jbai.core.inputs import log_inv_delta
  optimum = question_optimum(plan.problem, plan.family, means)
  out = []
  for d, delta in enumerate(plan.deltas):
    s = summarize(plan.family, means, float(delta), tau[:, d], correct[:, d], hit_cap[:, d],
                  optimum=optimum, log_inv_delta=float(log_inv_delta(delta)[0]))
    s.update({"delta": delta, "rule": repr(run.rule), "family": repr(plan.family),
              "threshold": repr(run.threshold), "steps_per_second": None,
              "complete": False, "trials_requested": n_trials, "eps_good": eps})
    out.append(s)
  return out


def save_arrays(path: str, results: list, deltas: list):
  """Per-trial arrays at `path` (.npz), next to the JSON: one run as [trials] (or
  [trials, D] for several deltas); several runs stacked on a leading axis named
  by `runs`. A delta typed below float64's range is saved as its text."""
  if len(results) == 1:
    res = results[0][1]
    arrays = {k: getattr(res, k) for k in ARRAYS}
  else:
    arrays = {"runs": np.asarray([f"{run.label} {run.threshold!r}" for run, _ in results]),
              **{k: np.stack([getattr(res, k) for _, res in results]) for k in ARRAYS}}
  delta = np.asarray(deltas if all(isinstance(d, float) for d in deltas)
                     else [str(d) for d in deltas])
  atomic_write(path, lambda f: np.savez(f, delta=delta, **arrays), binary=True)


def _records(plan, results: list, interrupted: bool, log: TrialLog, n_trials: int) -> tuple:
  """(records, labels): one record per (completed run, delta), then those of the
  finished trials of the run that Ctrl-C interrupted."""
  records, labels = [], []
  for run, res in results:
    for d in range(len(plan.deltas)):
      records.append({**run_summary(res, d), "delta": plan.deltas[d]})  # text if tiny
      labels.append(run.label)
  if interrupted and log.done(plan.runs[len(results)].key) is not None:
    run = plan.runs[len(results)]
    for rec in partial_summaries(plan, log.done(run.key), run, n_trials):
      records.append({**rec, "max_steps": log.specs[run.key]["max_steps"]})
      labels.append(run.label)
  return records, labels


def cmd_run(args) -> int:
  """`jbai run`: returns 0, or EXIT_INTERRUPTED after Ctrl-C (with --budget: the runs
  to a fixed budget of `jbai.cli.budget`)."""
  from jbai.cli import budget
  budget.check_options(args)
  if args.budget is not None:
    return budget.cmd_budget(args)
  if getattr(args, "repair", False) and not args.out:
    raise ValueError("--repair mends the finished-trial file of --out; give --out "
                     "(nothing to repair without it)")
  paths = checked_outputs(args)  # before anything runs: a bad --out loses no work
  plan = plan_command(args)
  runs, specs = [], {}
  for run in plan.runs:  # each run named by the hash of its spec
    spec = run_spec(args, plan, run)
    runs.append(run._replace(key=spec_key(spec)))
    specs[runs[-1].key] = spec
  plan = plan._replace(runs=runs)
  if paths:
    os.makedirs(os.path.dirname(os.path.abspath(paths["summary"])), exist_ok=True)
  log = TrialLog(paths["partial"] if paths else None, specs,
                 repair=getattr(args, "repair", False))
  for damage in log.dropped:
    print(f"repair: dropped {damage.path} from line {damage.line} on ({damage.why}); "
          "those trials run again", file=sys.stderr)
  if log.loaded and not args.json:
    print(f"resuming: {log.loaded} finished trial(s) read from {log.path}", file=sys.stderr)
  # A finished run's files (hand-edited or not) are not read back: say so.
  existing = [paths[k] for k in ("summary", "arrays") if paths and os.path.exists(paths[k])]
  results, interrupted = simulate_runs(args, plan, log)
  with interrupts_held() if interrupted else contextlib.nullcontext():
    return _finish(args, plan, paths, log, existing, results, interrupted)


def _finish(args, plan, paths, log, existing: list, results: list, interrupted: bool) -> int:
  """Writes and prints the results of `cmd_run` (those of the finished trials after
  Ctrl-C); returns its exit code."""
  records, labels = _records(plan, results, interrupted, log, args.trials)

  single = len(plan.runs) == 1 and len(plan.deltas) == 1
  payload = records[0] if single and records else records
  if paths:
    if existing:
      print(f"jbai run: {' and '.join(existing)} exist{'s' if len(existing) == 1 else ''} "
            "and will be replaced by this run's results", file=sys.stderr)
    write_json(paths["summary"], payload)
    if not interrupted:
      save_arrays(paths["arrays"], results, plan.deltas)
      log.remove()
  if args.json:
    render.print_json(payload)
  elif records:
    render.print_run(records, labels, single, plan.means, args)
  if interrupted:
    later = list(dict.fromkeys(run.label for run in plan.runs[len(results) + 1:]))
    render.print_interrupted(bool(records), later, log, args)
    return EXIT_INTERRUPTED
  return 0
