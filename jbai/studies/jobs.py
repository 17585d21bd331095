"""Jobs: what a job is, its key, and the two kinds that studies run.

A job is a JSON dict with a `kind`; its key is the dict's canonical JSON, so that
the same job asked for twice (by two studies, or two items of the paper's
reproduction) runs once. A `Kind` says how the jobs of one kind run,
`run(job, progress) -> result`, a JSON dict of aggregates (means, confidence
intervals, quantiles over trials) or, for a batch of instances, the per-trial
records, and how one is named in the progress lines, `label(job)`.

Three kinds are defined here: "simulate" (one call of `jbai.simulate`, several
deltas at once), "budget" (one call of `jbai.budget`: a batch of instances run to
a budget, the recommendations at its checkpoints) and "trace" (one call of
`jbai.trace`); `KINDS` maps them. The paper's gradient items add theirs
(`jbai.reproduce.gradients`).
"""

import json
import math
from typing import Callable, NamedTuple, Optional

import numpy as np


class Kind(NamedTuple):
  """How the jobs of one kind run, and how one is named."""

  run: Callable[..., dict]     # (job, progress[, checkpoint]) -> result
  label: Callable[[dict], str]  # job -> a few words for the progress lines


def job_key(job: dict) -> str:
  """The canonical JSON of a job: its identity in the store."""
  return json.dumps(job, sort_keys=True, separators=(",", ":"))


def dtype_name() -> str:
  """The default float dtype ("float32", or "float64" with x64): part of a job."""
  import jax.numpy as jnp
  return str(jnp.zeros(()).dtype)


def rule_label(name: str, params: dict) -> str:
  """'t3c(beta=0.3)', or 'tcb' for a rule without parameters."""
  if not params:
    return name
  return f"{name}({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})"


def run_label(job: dict, what: str) -> str:
  """A job of a rule on means, in a few words: the rule, the family, the arms
  (and the instances of a batch, with its level of delta where it has one), then
  `what` it runs."""
  k = np.shape(job["means"])
  where = f"K={k[-1]}" if len(k) == 1 else f"{k[0]} instance(s) K={k[-1]}"
  delta = "" if len(job.get("delta", ())) != 1 or len(k) == 1 else f" delta={job['delta'][0]:g}"
  return f"{rule_label(job['rule'], job['rule_params'])} {job['family']} {where}{delta} {what}"


def result_of(records: dict, job: dict) -> Optional[dict]:
  """The stored result of `job`, or None when it has not run (or was skipped)."""
  rec = records.get(job_key(job))
  return None if rec is None else rec["result"]


def finished(records: dict, plan: list) -> list:
  """[(*entry, result)] for each entry (..., job) of `plan` whose job has a
  result, in order (the others have not run, or could not)."""
  out = []
  for *head, job in plan:
    res = result_of(records, job)
    if res is not None:
      out.append((*head, res))
  return out


def lanes_for(trials: int) -> int:
  """Pool size for `trials` trials: about 8 trials per lane, 8 to 256 lanes.

  Stopping times are heavy tailed; with several trials per lane the pool recycles
  lanes and keeps them busy, and a few dozen lanes vectorise the step. The results
  do not depend on it (a trial is a function of the key and its index).
  """
  return int(min(trials, 256, max(8, trials // 8)))


# ---------------------------------------------------------------- simulate

def simulate_job(family: str, means, rule: str, rule_params: dict, delta, trials: int,
                 threshold: str, max_steps: int, seed: int, dtype: Optional[str] = None,
                 family_params: Optional[dict] = None,
                 eps_good: Optional[float] = None, question: Optional[dict] = None) -> dict:
  """The job of one `jbai.simulate` call (delta: a list of levels).

  `means` [K] asks for the summary per delta; [I, K] (a batch of instances, a
  study's) for the per-trial records (`trial_records`). `dtype` defaults to
  JAX's default float; `family_params` (the family's constructor arguments) is
  recorded only when given, as are `eps_good` (eps-good answers: the rule built
  for it where it takes it, the eps-GLLR stop otherwise) and `question`
  ({"top": m} or {"above": level}, `jbai.studies.spec.question`: the rule built
  for its m or level where it takes it, the question's GLLR stop).
  """
  job = {"kind": "simulate", "family": family, "means": np.asarray(means, float).tolist(),
         "rule": rule, "rule_params": dict(rule_params),
         "delta": [float(d) for d in np.atleast_1d(delta)], "trials": int(trials),
         "threshold": threshold, "max_steps": int(max_steps), "seed": int(seed),
         "dtype": dtype or dtype_name()}
  if family_params:
    job["family_params"] = dict(family_params)
  if eps_good is not None:
    job["eps_good"] = float(eps_good)
  if question is not None:
    job["question"] = dict(question)
  return job


def _simulation_summary(res, deltas) -> dict:
  tau = np.asarray(res.tau, float).reshape(res.tau.shape[0], -1)  # [n, D]
  per_delta = []
  for d, s in enumerate(res.summary):
    col = tau[:, d]
    per_delta.append({
        "delta": float(deltas[d]), "mean_tau": s["mean_tau"], "tau_ci95": s["tau_ci95"],
        "std_tau": float(np.std(col, ddof=1)) if len(col) > 1 else float("nan"),
        "median_tau": s["median_tau"], "max_tau": s["max_tau"],
        "error_rate": s["error_rate"], "error_ci95": s["error_ci95"],
        "wrong": s["wrong"], "hit_cap": s["hit_cap"], "t_star": s["t_star"],
        "ratio": s["ratio"]})
  return {"per_delta": per_delta, "trials": int(tau.shape[0]),
          "wall_seconds": res.stats.get("wall_seconds"),
          "compile_seconds": res.stats.get("compile_seconds"),
          "utilisation": res.stats.get("utilisation"),
          "useful_steps": res.stats.get("useful_steps")}


def trial_records(res) -> dict:
  """The per-trial arrays of a batch run, [I, n, D] nested lists of integers:
  tau, answer, correct and hit_cap (0 or 1)."""
  return {"records": {k: np.asarray(getattr(res, k), np.int64).tolist()
                      for k in ("tau", "answer", "correct", "hit_cap")},
          "trials": int(res.tau.shape[1]),
          "wall_seconds": res.stats.get("wall_seconds"),
          "compile_seconds": res.stats.get("compile_seconds"),
          "useful_steps": res.stats.get("useful_steps")}


def _all_trials(job: dict) -> int:
  """The trials of a job: `trials` per instance of its means ([K] or [I, K])."""
  return job["trials"] * (len(job["means"]) if np.ndim(job["means"]) == 2 else 1)


def _simulate_call(job: dict) -> tuple:
  """(args, kwargs) of the `jbai.simulate` call that a "simulate" job is."""
  import jax
  from jbai.families import get as get_family
  from jbai import problems
  from jbai.core.assembly import fitted
  from jbai.studies.spec import problem_of
  means = job["means"]
  problem = problem_of(job.get("question"), job.get("eps_good"))
  args = (jax.random.key(job["seed"]), get_family(job["family"], **job.get("family_params", {})),
          means, fitted(job["rule"], problems.question(problem), **job["rule_params"]),
          job["delta"], job["trials"])
  kwargs = {"threshold": job["threshold"], "max_steps": job["max_steps"], "problem": problem,
            "lanes": lanes_for(_all_trials(job))}
  return args, kwargs


def simulate_share(job: dict, share: tuple, done: Optional[dict], on_chunk) -> dict:
  """One share of a "simulate" job's trials, run in a worker process
  (`jbai.host.simulate.simulate_share`); returns its run statistics."""
  import jax
  from jbai.host.simulate import simulate_share as run_share
  args, kwargs = _simulate_call(job)
  with jax.enable_x64(job["dtype"] == "float64"):
    return run_share(*args, **kwargs, share=share, done=done, on_chunk=on_chunk)


def _shared_stats(stats: list) -> dict:
  """A job's statistics from its shares': wall and compile time those of the
  slowest share (they run at once), steps summed."""
  return {"wall_seconds": max(s["wall_seconds"] for s in stats),
          "compile_seconds": max(s["compile_seconds"] for s in stats),
          "useful_steps": sum(s["useful_steps"] for s in stats),
          "utilisation": (sum(s["useful_steps"] for s in stats)
                          / max(1, sum(s["lane_steps"] for s in stats)))}


def run_simulate(job: dict, progress, checkpoint=None, workers=None) -> dict:
  """Runs a "simulate" job: per delta, the summary of `jbai.simulate`, or for a
  batch of instances ([I, K] means) the per-trial records (`trial_records`).

  `checkpoint` (`jbai.studies.store.Checkpoint`), when given, keeps the
  trials finished so far, so that an interrupted job resumes where it stopped.
  `workers` (`jbai.host.processes.Workers`), when given, run the trials in
  shares, one per worker process; the results are the same.
  """
  import jax
  from jbai.host.simulate import simulate
  args, kwargs = _simulate_call(job)
  done = None if checkpoint is None else checkpoint.done()
  save = None if checkpoint is None else checkpoint.save
  shared = None
  if workers is not None and len(workers) > 1:
    chunks, total = ([] if done is None else [done]), _all_trials(job)

    def take(records):
      chunks.append(records)
      if save is not None:
        save(records)
      progress.update(sum(len(c["index"]) for c in chunks), total, "trials")

    shared = _shared_stats(workers.map(
        "jbai.studies.jobs:simulate_share",
        [((job, (r, len(workers)), done), {}) for r in range(len(workers))], on_chunk=take))
    done, save = {k: np.concatenate([np.asarray(c[k]) for c in chunks]) for k in chunks[0]}, None
  with jax.enable_x64(job["dtype"] == "float64"):
    res = simulate(*args, **kwargs,
                   progress=lambda done, total, *_: progress.update(done, total, "trials"),
                   done=done, on_chunk=save)
  if shared is not None:
    res.stats.update(shared)
  if np.ndim(job["means"]) == 2:
    return trial_records(res)
  return _simulation_summary(res, job["delta"])


# ---------------------------------------------------------------- budget

def budget_job(family: str, means, rule: str, rule_params: dict, budget: int,
               checkpoints, trials: int, seed: int, dtype: Optional[str] = None,
               family_params: Optional[dict] = None, question: Optional[dict] = None) -> dict:
  """The job of one `jbai.budget` call: `trials` trials of each instance of
  `means` [I, K] run to `budget` rewards, the recommendation recorded at each of
  `checkpoints` (a list of times, the budget last). `dtype` defaults to JAX's
  default float; `family_params` and `question` ({"top": m} or {"above": level}:
  the question's empirical answer recorded, the rule built for its m or level)
  are recorded only when given."""
  job = {"kind": "budget", "family": family, "means": np.asarray(means, float).tolist(),
         "rule": rule, "rule_params": dict(rule_params), "budget": int(budget),
         "checkpoints": [int(t) for t in checkpoints], "trials": int(trials),
         "seed": int(seed), "dtype": dtype or dtype_name()}
  if family_params:
    job["family_params"] = dict(family_params)
  if question is not None:
    job["question"] = dict(question)
  return job


def run_budget(job: dict, progress, checkpoint=None) -> dict:
  """Runs a "budget" job: the recommendation of every trial at every checkpoint,
  {"records": {"recommendation": [I, n, C] nested lists of ints ([I, n, C, K] of 0
  or 1, the answer sets, for a question)}, "checkpoints": [C], "trials": n, ...}.

  `checkpoint` (`jbai.studies.store.Checkpoint`), when given, keeps the trials
  finished so far, so that an interrupted job resumes where it stopped.
  """
  import jax
  from jbai.families import get as get_family
  from jbai.host.budget import budget
  from jbai import problems
  from jbai.core.assembly import fitted
  from jbai.studies.spec import problem_of
  problem = problem_of(job.get("question"))
  means = np.atleast_2d(np.asarray(job["means"], float))  # a batch: [I, n, C] records
  with jax.enable_x64(job["dtype"] == "float64"):
    res = budget(jax.random.key(job["seed"]),
                 get_family(job["family"], **job.get("family_params", {})), means,
                 fitted(job["rule"], problems.question(problem), **job["rule_params"]),
                 job["budget"], job["trials"],
                 checkpoints=job["checkpoints"], lanes=lanes_for(job["trials"] * len(means)),
                 progress=lambda done, total, *_: progress.update(done, total, "trials"),
                 done=None if checkpoint is None else checkpoint.done(),
                 on_chunk=None if checkpoint is None else checkpoint.save,
                 problem=problem)
  return {"records": {"recommendation": np.asarray(res.recommendation, np.int64).tolist()},
          "checkpoints": [int(t) for t in res.checkpoints], "trials": int(job["trials"]),
          "wall_seconds": res.stats.get("wall_seconds"),
          "compile_seconds": res.stats.get("compile_seconds"),
          "useful_steps": res.stats.get("useful_steps")}


# ---------------------------------------------------------------- trace

def trace_job(family: str, means, rule: str, trials: int, horizon: int, points: int,
              seed: int) -> dict:
  """The job of one `jbai.trace` call."""
  return {"kind": "trace", "family": family, "means": [float(m) for m in means],
          "rule": rule, "rule_params": {}, "trials": int(trials),
          "horizon": int(horizon), "points": int(points), "seed": int(seed),
          "dtype": dtype_name()}


def _quantiles(x: np.ndarray, axis: int = 0) -> dict:
  q = np.quantile(x, [0.1, 0.5, 0.9], axis=axis)
  return {"q10": q[0].tolist(), "q50": q[1].tolist(), "q90": q[2].tolist()}


def _trace_summary(tr) -> dict:
  g = np.asarray(tr.gamma_t, float)       # [n, P]
  s = np.asarray(tr.top_share, float)     # [n, P]
  p = np.asarray(tr.proportions, float)   # [n, P, K]
  n = g.shape[0]
  se = lambda x: (np.std(x, axis=0, ddof=1) / math.sqrt(n)).tolist() if n > 1 else None
  return {"times": [int(t) for t in tr.times], "trials": int(n),
          "gamma": {"mean": g.mean(0).tolist(), "se": se(g), **_quantiles(g)},
          "share": {"mean": s.mean(0).tolist(), "se": se(s), **_quantiles(s)},
          "proportions_mean": p.mean(0).tolist()}


def run_trace(job: dict, progress) -> dict:
  """Runs a "trace" job: Gamma_t(T_t/t), the best arm's share and the
  proportions at the recording times, averaged over trials."""
  import jax
  from jbai.families import get as get_family
  from jbai.host.trace import trace
  from jbai.rules import get as get_rule
  tr = trace(jax.random.key(job["seed"]), get_family(job["family"]), job["means"],
             get_rule(job["rule"], **job["rule_params"]), job["horizon"], job["trials"],
             n_points=job["points"], progress=lambda t, h: progress.update(t, h, "steps"))
  return _trace_summary(tr)


KINDS = {"simulate": Kind(run_simulate, lambda job: run_label(job, f"{job['trials']} trials")),
         "budget": Kind(run_budget, lambda job: run_label(
             job, f"to T={job['budget']}, {job['trials']} trials")),
         "trace": Kind(run_trace, lambda job: run_label(
             job, f"trace {job['trials']}x{job['horizon']}"))}
