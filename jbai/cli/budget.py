"""`jbai run --budget T[,T...]`: rules run to fixed budgets, side by side.

Every trial takes exactly T rewards and answers the rule's recommendation
(`jbai.budget`): the table gives, per rule and budget, the error rate with its
Wilson 95% interval and the simple regret with its 95% interval, the rules on
common random numbers (one key). An anytime rule runs once, to the largest
budget, its recommendation recorded at every budget of the list; a rule whose
sampling depends on the budget (Successive Rejects, Sequential Halving, UGapE-b)
runs once per budget, on one compiled program. `--checkpoints N` records N
log-spaced times besides (in the JSON, a curve per run). With --out the finished
trials are kept as they come (`TrialLog`): Ctrl-C prints the finished runs, and
the same command resumes.
"""

import os
import sys
import time
from typing import NamedTuple

import numpy as np

from jbai.cli import render
from jbai.cli.args import DEFAULT_RUN
from jbai.cli.plan import check_combinations, check_rule_params, family_from_args, make_rule
from jbai.cli.plan import problem_of, refuse_eps_with_question, rule_options
from jbai.cli.trials import EXIT_INTERRUPTED, TrialLog, checked_outputs, spec_key
from jbai.host.atomic import atomic_write, write_json
from jbai.host.progress import Progress, duration

# The options of a stopped run, which a run to a budget has no use for
# (--eps-good goes with both: there it scores the recommendation).
STOP_OPTIONS = {"threshold": "--threshold", "stop": "--stop", "delta": "--delta",
                "max_steps": "--max-steps"}


class BudgetRun(NamedTuple):
  """One call of `jbai.budget`: a rule to a budget, with the times it records."""

  label: str
  rule: object
  budget: int
  times: list        # the checkpoints (the budget last)
  shown: list        # the budgets of --budget this run answers for
  key: str = ""      # its finished trials in the TrialLog


def check_options(args) -> None:
  """Refuses a stop's options with --budget, and --checkpoints without it."""
  if args.budget is None:
    if getattr(args, "checkpoints", None) is not None:
      raise ValueError("--checkpoints records times of a run to a budget; give --budget")
    return
  for name, option in STOP_OPTIONS.items():
    if getattr(args, name, None) is not None:
      raise ValueError(f"{option} belongs to a run that stops; a run to --budget "
                       f"{','.join(map(str, args.budget))} has no stop: drop {option}")


def plan_budget(args) -> tuple:
  """(family, means, [BudgetRun], problem): the rules of --rule x --beta x --eps x
  --a, each checked to run to a budget on the family for the question (--top M,
  --above LEVEL, --eps-good EPS: the recommendation scored as eps-good; None: the
  best arm), and the runs that answer every budget."""
  from jbai import problems
  from jbai.core.assembly import assemble
  from jbai.core.budget import budget_runs, check_budget, check_rule
  from jbai.cli.args import fill_defaults
  from jbai.core.inputs import check_table
  fill_defaults(args)  # the question's rule and means, where not given (idempotent)
  family = family_from_args(args)
  problem = problem_of(args)
  refuse_eps_with_question(args, problem)
  if getattr(args, "eps_good", None) is not None:
    problem = problems.eps_good(args.eps_good)
  check_table(family, args.means, problem=problem)
  num_arms = len(args.means)
  check_rule_params(args)
  rules = {}
  for name in args.rule:
    for b in args.beta or [None]:
      for e in args.eps or [None]:
        for a in args.a or [None]:
          rule = make_rule(name, b, e, a=a, **rule_options(args))
          rules.setdefault(repr(rule), (name, rule))
  check_combinations(family, args.rule, [DEFAULT_RUN["threshold"]], len(args.means),
                     args.beta or [None], args.eps or [None], budget=True,
                     options=rule_options(args))
  names = [n for n, _ in rules.values()]
  budgets = sorted(set(args.budget))
  runs = []
  for name, rule in rules.values():
    rule = assemble(family, rule, problem=problem, budget=budgets[-1]).rule  # the run's rule
    check_rule(family, rule, num_arms, problem)
    label = name if names.count(name) == 1 else repr(rule)
    for t in budgets:
      check_budget(rule, t, num_arms)
    count = getattr(args, "checkpoints", None)  # jbai grad has none
    for horizon, times, shown in budget_runs(rule, budgets, count, num_arms):
      runs.append(BudgetRun(label, rule, horizon, times, shown))
  return family, [float(m) for m in args.means], runs, problem


def run_spec(args, family, means, run: BudgetRun, problem=None) -> dict:
  """What identifies a budget run's trials (its name in the TrialLog); the
  question only when one is asked, so that best-arm runs keep their names, and
  "answers": "sets" where its answers are sets of arms (top-m, thresholding)."""
  import jax.numpy as jnp
  asked = {} if problem is None else {"question": repr(problem)}
  if problem is not None and not problem.arm:  # answers are sets of arms: [K] masks
    asked["answers"] = "sets"
  return {"family": repr(family), "means": list(means), "rule": repr(run.rule),
          "budget": run.budget, "checkpoints": run.times, "trials": args.trials,
          "seed": args.seed, "dtype": str(jnp.zeros(()).dtype), **asked}


def cmd_budget(args) -> int:
  """`jbai run --budget`: returns 0, or EXIT_INTERRUPTED after Ctrl-C."""
  import jax
  from jbai.host.budget import budget
  if getattr(args, "repair", False) and not args.out:
    raise ValueError("--repair mends the finished-trial file of --out; give --out "
                     "(nothing to repair without it)")
  paths = checked_outputs(args)
  family, means, runs, problem = plan_budget(args)
  specs = {}
  for i, run in enumerate(runs):
    spec = run_spec(args, family, means, run, problem)
    runs[i] = run._replace(key=spec_key(spec))
    specs[runs[i].key] = spec
  if paths:
    os.makedirs(os.path.dirname(os.path.abspath(paths["summary"])), exist_ok=True)
  log = TrialLog(paths["partial"] if paths else None, specs,
                 repair=getattr(args, "repair", False))
  if log.loaded and not args.json:
    print(f"resuming: {log.loaded} finished trial(s) read from {log.path}", file=sys.stderr)
  show = args.progress or (not args.json and sys.stderr.isatty())
  results, interrupted = [], False
  for i, run in enumerate(runs):
    tag = run.label if len(runs) == 1 else f"{run.label} T={run.budget} ({i + 1}/{len(runs)})"
    progress = Progress(tag, show, live=True)
    done = log.done(run.key)
    left = (args.trials - (0 if done is None else len(done["index"]))) * run.budget
    try:
      res = budget(jax.random.key(args.seed), family, means, run.rule, run.budget,
                   args.trials, checkpoints=run.times, chunk=args.chunk,
                   progress=StepProgress(progress, left, show),
                   on_chunk=log.saver(run.key), problem=problem,
                   **({} if done is None else {"done": done}))
    except KeyboardInterrupt:
      progress.close()
      interrupted = True
      break
    results.append((run, res))
  rows = [row for run, res in results for row in _rows(run, res)]
  payload = {"budgets": sorted(set(args.budget)), "rows": rows,
             "curves": [_curve(run, res) for run, res in results], "complete": not interrupted}
  if paths:
    write_json(paths["summary"], payload)
    if not interrupted:
      _save_arrays(paths["arrays"], results)
      log.remove()
  if args.json:
    render.print_json(payload)
  elif rows:
    render.print_budget(rows, family, means, args)
  if interrupted:
    later = list(dict.fromkeys(run.label for run in runs[len(results) + 1:]))
    render.print_interrupted(bool(rows), later, log, args, render.INTERRUPTED_BUDGET_NOTE)
    return EXIT_INTERRUPTED
  return 0


class StepProgress:
  """The progress of a run to a budget in rewards, with the time left: every trial
  takes the whole budget, so the rewards still to draw are known (`left`), and a
  budget of billions shows its bar (and the time it will take) from the first
  chunk, not a trial count that stays at 0. Without a bar (`show` False), one
  line on stderr says the time left once it exceeds `LONG` seconds."""

  LONG = 600.0

  def __init__(self, bar, left: int, show: bool):
    self.bar, self.left, self.show = bar, max(left, 1), show
    self.first, self.said = None, False  # (time, rewards) at the first chunk

  def __call__(self, done_trials: int, total_trials: int, rewards: int = 0) -> None:
    self.bar.update(min(int(rewards), self.left), self.left, "rewards")
    now = time.perf_counter()
    if self.first is None:  # the rate is measured after it: the compile is over
      self.first = (now, rewards)
    elapsed, drawn = now - self.first[0], rewards - self.first[1]
    if self.show or self.said or elapsed < 5 or not 0 < drawn < self.left:
      return
    remaining = elapsed * (self.left - rewards) / drawn
    if remaining > self.LONG:
      self.said = True
      print(f"jbai run: {self.bar.label}: {drawn / elapsed:.3g} rewards/s, about "
            f"{duration(remaining)} left for {self.left} rewards (Ctrl-C stops it; "
            "with --out the same command resumes)", file=sys.stderr, flush=True)


def _rows(run: BudgetRun, res) -> list:
  """The records of the budgets of --budget that a run answers: error and simple
  regret with their intervals."""
  out = []
  for c, t in enumerate(res.checkpoints):
    if int(t) in run.shown:
      out.append({"rule": repr(run.rule), "label": run.label, "budget": int(t),
                  "trials": int(res.recommendation.shape[0]),
                  "error_rate": float(res.error[c]), "error_ci95": res.error_ci[c].tolist(),
                  "simple_regret": float(res.regret[c]),
                  "regret_ci95": res.regret_ci[c].tolist(),
                  "steps_per_second": _rate(res.stats)})
  return out


def _curve(run: BudgetRun, res) -> dict:
  """A run's error and simple regret at every checkpoint it recorded."""
  return {"rule": repr(run.rule), "label": run.label, "budget": run.budget,
          "t": res.checkpoints.tolist(), "error_rate": res.error.tolist(),
          "error_ci95": res.error_ci.tolist(), "simple_regret": res.regret.tolist(),
          "regret_ci95": res.regret_ci.tolist()}


def _rate(stats: dict):
  return stats["timed_useful_steps"] / stats["wall_seconds"] if stats["wall_seconds"] else None


def _save_arrays(path: str, results: list) -> None:
  """Each run's recommendations [trials, C] (int16), checkpoints and final counts."""
  arrays = {"runs": np.asarray([f"{run.label} T={run.budget}" for run, _ in results])}
  for i, (_, res) in enumerate(results):
    arrays[f"recommendation_{i}"] = res.recommendation
    arrays[f"checkpoints_{i}"] = res.checkpoints
    arrays[f"counts_{i}"] = res.counts
  atomic_write(path, lambda f: np.savez(f, **arrays), binary=True)
