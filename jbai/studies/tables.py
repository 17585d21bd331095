"""A study's two tidy tables, from the records of its jobs (`jbai.studies.plan`).

The tables hold only what the trials determine, in spec order, so that a rerun
(or a resumed run) writes the same bytes:

  cells   one row per (instance, rule setting, threshold, delta): E[tau] with its
          normal 95% interval, the median, the error rate (wrong answers and
          trials at the cap) with its Wilson 95% interval, T*(nu) and the ratio
          E[tau] / (T*(nu) log(1/delta));
  trials  one row per trial: the cell's keys, tau, the answer, correct, at_cap.

A study that asks another question ([study] top or above) has a `question` column
in its cells (top-m(m=2), above(level=0.5)), and its trials' answers are sets of
arms: an `answer_set` column, the arms' indices joined by ';' ("" for none), in
place of `answer`.

A budget study's tables (`budget_tables`) have their own columns:

  cells   one row per (instance, rule setting, budget run, checkpoint t): the
          error rate P(J_t != a*) with its Wilson 95% interval and the simple
          regret E[mu* - mu_{J_t}] with its normal 95% interval, as
          `jbai.budget` gives them (`budget` is the run's T, `t` the checkpoint);
  trials  one row per (cell, trial): the recommendation J_t, correct (J_t is the
          best arm) and the regret mu* - mu_{J_t}.

A budget study that asks another question has the `question` column in its cells
too; J_t is the question's empirical answer, written as an `answer_set` in
place of `recommendation`, correct when it is the instance's answer, and the
regret is the question's (`jbai.problems.Problem.regret`). With eps_good the
question is eps-good(eps=...): J_t is the rule's recommendation, correct when
mu* - mu_{J_t} <= eps.
"""

import math
from typing import Optional

import jax
import numpy as np

from jbai import problems
from jbai.host.summary import mean_ci, wilson
from jbai.problems.judge import judge
from jbai.studies.jobs import result_of
from jbai.studies.plan import plan
from jbai.studies.spec import problem_of, question

CELL_COLUMNS = ["instance", "source", "group", "family", "K", "rule", "params", "threshold",
                "delta", "trials", "mean_tau", "tau_ci_low", "tau_ci_high", "median_tau",
                "error_rate", "error_ci_low", "error_ci_high", "wrong", "at_cap", "t_star",
                "t_star_log", "ratio"]
TRIAL_COLUMNS = ["instance", "rule", "params", "threshold", "delta", "trial", "tau", "answer",
                 "correct", "at_cap"]
QUESTION_CELL_COLUMNS = CELL_COLUMNS[:5] + ["question"] + CELL_COLUMNS[5:]
QUESTION_TRIAL_COLUMNS = [("answer_set" if c == "answer" else c) for c in TRIAL_COLUMNS]
BUDGET_CELL_COLUMNS = ["instance", "source", "group", "family", "K", "rule", "params",
                       "budget", "t", "trials", "error_rate", "error_ci_low", "error_ci_high",
                       "simple_regret", "regret_ci_low", "regret_ci_high"]
BUDGET_TRIAL_COLUMNS = ["instance", "rule", "params", "budget", "t", "trial", "recommendation",
                        "correct", "regret"]
BUDGET_QUESTION_CELL_COLUMNS = BUDGET_CELL_COLUMNS[:5] + ["question"] + BUDGET_CELL_COLUMNS[5:]
BUDGET_QUESTION_TRIAL_COLUMNS = [("answer_set" if c == "recommendation" else c)
                                 for c in BUDGET_TRIAL_COLUMNS]
# The type each column is written with, for reading the tables back: names and
# settings are text (an instance named "1" stays "1", a rule without parameters
# has params ""), counts whole numbers, the rest floats (an interval over one
# trial is NaN, written "nan").
COLUMN_TYPES = {
    **{c: str for c in ("instance", "source", "group", "family", "rule", "params",
                        "threshold", "question", "answer_set")},
    **{c: int for c in ("K", "trials", "wrong", "at_cap", "trial", "tau", "answer",
                        "correct", "budget", "t", "recommendation")},
    **{c: float for c in ("delta", "mean_tau", "tau_ci_low", "tau_ci_high", "median_tau",
                          "error_rate", "error_ci_low", "error_ci_high", "t_star",
                          "t_star_log", "ratio", "simple_regret", "regret_ci_low",
                          "regret_ci_high", "regret")}}


def is_budget(resolved: dict) -> bool:
  """Whether a resolved study is a budget study ([study] budget)."""
  return resolved["study"].get("budget") is not None


def columns(resolved: dict) -> tuple:
  """(cell columns, trial columns) of a resolved study's tables."""
  if is_budget(resolved):
    asked = problem_of(question(resolved["study"]))
    if asked is None:
      return BUDGET_CELL_COLUMNS, BUDGET_TRIAL_COLUMNS
    return BUDGET_QUESTION_CELL_COLUMNS, (BUDGET_TRIAL_COLUMNS if asked.arm else
                                          BUDGET_QUESTION_TRIAL_COLUMNS)
  if question(resolved["study"]) is not None:
    return QUESTION_CELL_COLUMNS, QUESTION_TRIAL_COLUMNS
  return CELL_COLUMNS, TRIAL_COLUMNS


def params_text(params: dict) -> str:
  """'beta=0.3' (';' between several, sorted by name), '' for none. A value is
  written as Python writes it (`param_value`), save that a float below 1e-4 keeps
  the positional notation of the larger ones (a=0.0000407 beside a=0.000163, not
  a=4.07e-05), so that one column reads alike."""
  return ";".join(f"{k}={param_value(v)}" for k, v in sorted(params.items()))


def param_value(value) -> str:
  """A parameter's text: str(value); a float in [1e-12, 1e-4) in magnitude in
  positional notation with its shortest round-trip digits."""
  if isinstance(value, float) and 1e-12 <= abs(value) < 1e-4:
    return np.format_float_positional(value, trim="-")
  return str(value)


def t_stars(instances: list, eps_good: Optional[float] = None, asked=None) -> list:
  """T*(nu) = 1 / Gamma(nu) of every instance, in float64 (one batched exact
  oracle solve per family and K); with eps_good, T*_eps(nu) of eps-good answers
  (`jbai.oracle.eps_solve`); with `asked` (a `jbai.problems.Problem`), the T* of
  that question (`jbai.problems.oracle`)."""
  import jax
  from jbai import problems
  from jbai.families import get
  from jbai.oracle import eps_solve, exact_solve  # both jit-compiled
  out = [0.0] * len(instances)
  batches = {}
  for i, inst in enumerate(instances):
    key = (inst["family"], repr(sorted(inst["family_params"].items())), len(inst["means"]))
    batches.setdefault(key, []).append(i)
  with jax.enable_x64(True):
    for members in batches.values():
      first = instances[members[0]]
      family = get(first["family"], **first["family_params"])
      table = np.asarray([instances[i]["means"] for i in members], np.float64)
      if asked is not None:
        gamma = 1.0 / np.asarray(problems.oracle(asked, family, table).t_star, np.float64)
      elif eps_good is None:
        _, gamma = exact_solve(family, table)
      else:
        gamma = eps_solve(family, table, eps_good).gamma
      for i, g in zip(members, np.asarray(gamma, np.float64)):
        out[i] = 1.0 / float(g)
  return out


def per_delta(res: dict, deltas: list, member: int = 0) -> list:
  """The summary per delta of instance `member` of a job's per-trial records
  (`jbai.studies.jobs.trial_records`), as `jbai reproduce` gives a single
  instance's: [{delta, mean_tau, tau_ci95, std_tau, error_rate, hit_cap}]."""
  rec = {k: np.asarray(v)[member] for k, v in res["records"].items()}  # [n, D]
  out = []
  for d, delta in enumerate(deltas):
    tau, correct = rec["tau"][:, d], rec["correct"][:, d].astype(bool)
    mean, half = mean_ci(tau)
    std = float(np.std(tau.astype(float), ddof=1)) if len(tau) > 1 else float("nan")
    out.append({"delta": float(delta), "mean_tau": mean, "tau_ci95": [mean - half, mean + half],
                "std_tau": std, "error_rate": int(np.sum(~correct)) / len(tau),
                "hit_cap": int(np.sum(rec["hit_cap"][:, d]))})
  return out


def study_results(resolved: dict, records: dict) -> list:
  """Per instance of a resolved study, [(rule setting, trials, `per_delta`
  summaries)] of its jobs that have run, in the study's order (the items of `jbai
  reproduce` that are studies read their jobs back with it)."""
  out = [[] for _ in resolved["instances"]]
  for members, setting, deltas, job in plan(resolved):
    res = result_of(records, job)
    if res is not None:
      for local, i in enumerate(members):
        out[i].append((setting, res["trials"], per_delta(res, deltas, local)))
  return out


def _cell(inst: dict, setting: dict, delta: float, t_star: float, tau, correct,
          hit_cap) -> list:
  n = len(tau)
  mean, half = mean_ci(tau)
  errors = int(np.sum(~correct))
  err_lo, err_hi = wilson(errors, n)
  t_star_log = t_star * math.log(1.0 / delta)
  return [inst["name"], inst["source"], inst["group"], inst["family"], len(inst["means"]),
          setting["rule"], params_text(setting["params"]), setting["threshold"], delta, n,
          mean, mean - half, mean + half, float(np.median(tau)), errors / n, err_lo, err_hi,
          int(np.sum(~correct & ~hit_cap)), int(np.sum(hit_cap)), t_star, t_star_log,
          mean / t_star_log]


def tables(resolved: dict, records: dict, t_star: list = None) -> tuple:
  """(cell rows, trial rows) of the jobs that have run, in spec order: instance,
  then rule setting, then delta (`CELL_COLUMNS`, `TRIAL_COLUMNS`); of a budget
  study, `budget_tables`'."""
  if is_budget(resolved):
    return budget_tables(resolved, records)
  instances, settings = resolved["instances"], resolved["settings"]
  study = resolved["study"]
  asked = question(study)
  if t_star is None:
    t_star = t_stars(instances, study.get("eps_good"), problem_of(asked))
  found = []
  for members, setting, deltas, job in plan(resolved):
    res = result_of(records, job)
    if res is None:
      continue
    rec = {k: np.asarray(v) for k, v in res["records"].items()}
    s_index = settings.index(setting)
    for local, i in enumerate(members):
      for d, delta in enumerate(deltas):
        order = (i, s_index, resolved["study"]["delta"].index(delta))
        found.append((order, i, setting, delta, {k: v[local, :, d] for k, v in rec.items()}))
  found.sort(key=lambda f: f[0])
  cells, trials = [], []
  for _, i, setting, delta, r in found:
    inst = instances[i]
    correct, cap = r["correct"].astype(bool), r["hit_cap"].astype(bool)
    cell = _cell(inst, setting, delta, t_star[i], r["tau"], correct, cap)
    cells.append(cell if asked is None else cell[:5] + [repr(problem_of(asked))] + cell[5:])
    head = [inst["name"], setting["rule"], params_text(setting["params"]),
            setting["threshold"], delta]
    for j in range(len(r["tau"])):
      trials.append(head + [j, int(r["tau"][j]), _answer(r["answer"][j]), int(correct[j]),
                            int(cap[j])])
  return cells, trials


def _answer(answer: np.ndarray):
  """A trial's answer as its table writes it: the arm (an int), or a set of arms
  ([K] 0 or 1) as its indices joined by ';'."""
  if np.ndim(answer) == 0:
    return int(answer)
  return ";".join(str(a) for a in np.flatnonzero(answer))


def _scored(inst: dict, answers: np.ndarray, asked=None) -> tuple:
  """(correct [n] bool, regret [n]) of the recommendations `answers` at an
  instance: arms [n] against the best arm, or, for `eps_good(eps)`, eps-good
  where mu_J >= mu* - eps, and the regret mu* - mu_J; or, for a question whose
  answer is a set (`asked`, a `jbai.problems.Problem`), answer sets [n, K]
  against the instance's, the question's regret (`Problem.regret`), in float64."""
  means = np.asarray(inst["means"], float)
  with jax.enable_x64(True):  # a set's answers are judged with jax
    correct, regret = judge(np, problems.question(asked), means[None], answers[None])
  return correct[0], regret[0]


def _budget_cell(inst: dict, setting: dict, horizon: int, t: int, n: int, correct: np.ndarray,
                 regret: np.ndarray, asked=None) -> list:
  """A budget study's cell: the error rate and simple regret of the n
  recommendations at time t of a run to `horizon` (`_scored`)."""
  wrong = int(np.sum(~correct))
  err_lo, err_hi = wilson(wrong, n)
  mean, half = mean_ci(regret)
  head = [inst["name"], inst["source"], inst["group"], inst["family"], len(inst["means"])]
  return head + ([] if asked is None else [repr(asked)]) + [
      setting["rule"], params_text(setting["params"]), horizon, t, n, wrong / n, err_lo,
      err_hi, mean, mean - half, mean + half]


def _budget_trials(inst: dict, setting: dict, horizon: int, t: int, answers: np.ndarray,
                   correct: np.ndarray, regret: np.ndarray) -> list:
  """A budget study's trial rows at time t: the recommendation (an arm, or an
  answer set as `_answer` writes it), correct, regret (`_scored`)."""
  head = [inst["name"], setting["rule"], params_text(setting["params"]), horizon, t]
  return [head + [j, _answer(a), int(c), float(r)]
          for j, (a, c, r) in enumerate(zip(answers, correct, regret))]


def budget_tables(resolved: dict, records: dict) -> tuple:
  """(cell rows, trial rows) of a budget study's jobs that have run, in spec
  order: instance, rule setting, budget run (by T), checkpoint t, then trial
  (`BUDGET_CELL_COLUMNS`, `BUDGET_TRIAL_COLUMNS`)."""
  instances, settings = resolved["instances"], resolved["settings"]
  asked = problem_of(question(resolved["study"]))
  found = []
  for members, setting, horizon, job in plan(resolved):
    res = result_of(records, job)
    if res is None:
      continue
    rec = np.asarray(res["records"]["recommendation"], np.int64)  # [I, n, C] (, K)
    for local, i in enumerate(members):
      found.append(((i, settings.index(setting), horizon), setting, res["checkpoints"],
                    rec[local]))
  found.sort(key=lambda f: f[0])
  cells, trials = [], []
  for (i, _, horizon), setting, times, rec in found:
    for c, t in enumerate(times):
      correct, regret = _scored(instances[i], rec[:, c], asked)
      cells.append(_budget_cell(instances[i], setting, horizon, t, len(rec), correct, regret,
                                asked))
      trials += _budget_trials(instances[i], setting, horizon, t, rec[:, c], correct, regret)
  return cells, trials
