"""The shared runner: jobs, the resumable store of their results, a progress bar.

A job is one call of `jbai.simulate` or `jbai.trace` (or a gradient run or an
instance search of jbai/reproduce/gradients.py), described by a JSON dict
(its key is the dict's canonical JSON). `Runner.ensure(jobs)` runs the jobs whose
key is not yet in the store and returns the records of all of them. Each record
is appended to `runs.jsonl` in the output folder as one complete line, flushed
and fsynced as soon as its job finishes, so an interrupted run loses at most the
job in flight and a rerun skips every job already recorded. A partial last line
(a crash while writing) is ignored when the store is read.

Results are aggregated before they are stored (means, confidence intervals,
quantiles over trials), never the per-trial arrays, so the store stays small.
"""

import json
import math
import os
import sys
import time
from typing import Iterable, Optional

import numpy as np

STORE_NAME = "runs.jsonl"


def job_key(job: dict) -> str:
  """The canonical JSON of a job: its identity in the store."""
  return json.dumps(job, sort_keys=True, separators=(",", ":"))


def rule_label(name: str, params: dict) -> str:
  """'t3c(beta=0.3)', or 'tcb' for a rule without parameters."""
  if not params:
    return name
  return f"{name}({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})"


def simulate_job(family: str, means, rule: str, rule_params: dict, delta, trials: int,
                 threshold: str, max_steps: int, seed: int) -> dict:
  """The job of one `jbai.simulate` call (delta: a list of levels)."""
  return {"kind": "simulate", "family": family, "means": [float(m) for m in means],
          "rule": rule, "rule_params": dict(rule_params),
          "delta": [float(d) for d in np.atleast_1d(delta)], "trials": int(trials),
          "threshold": threshold, "max_steps": int(max_steps), "seed": int(seed),
          "dtype": _dtype()}


def trace_job(family: str, means, rule: str, trials: int, horizon: int, points: int,
              seed: int) -> dict:
  """The job of one `jbai.trace` call."""
  return {"kind": "trace", "family": family, "means": [float(m) for m in means],
          "rule": rule, "rule_params": {}, "trials": int(trials),
          "horizon": int(horizon), "points": int(points), "seed": int(seed),
          "dtype": _dtype()}


def _dtype() -> str:
  import jax.numpy as jnp
  return str(jnp.zeros(()).dtype)


def lanes_for(trials: int) -> int:
  """Pool size for `trials` trials: about 8 trials per lane, 8 to 256 lanes.

  Stopping times are heavy tailed; with several trials per lane the pool recycles
  lanes and keeps them busy, and a few dozen lanes vectorise the step. The results
  do not depend on it (see jbai.engine).
  """
  return int(min(trials, 256, max(8, trials // 8)))


class Store:
  """Append-only JSON-lines file of job records, keyed by `job_key`."""

  def __init__(self, path: str):
    self.path = path
    self.records = {}
    if os.path.exists(path):
      with open(path, encoding="utf-8") as f:
        for line in f:
          try:
            rec = json.loads(line)
          except json.JSONDecodeError:
            continue  # a partial line from an interrupted write
          if isinstance(rec, dict) and "key" in rec:
            self.records[rec["key"]] = rec

  def __contains__(self, key: str) -> bool:
    return key in self.records

  def get(self, key: str) -> Optional[dict]:
    return self.records.get(key)

  def add(self, record: dict) -> None:
    """Appends one record as a complete line, flushed and fsynced."""
    line = json.dumps(record, separators=(",", ":")) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
    if os.path.exists(self.path) and os.path.getsize(self.path) > 0:
      with open(self.path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
          line = "\n" + line  # after a partial line left by an interrupted write
    with open(self.path, "a", encoding="utf-8") as f:
      f.write(line)
      f.flush()
      os.fsync(f.fileno())
    self.records[record["key"]] = record


class Progress:
  """A text progress bar on stderr over the jobs of a run and the current job's steps.

  On a terminal it redraws one line; otherwise (a log file) it writes one line per
  finished job, so that `nohup jbai reproduce ... &` leaves a readable log.
  """

  def __init__(self, total_jobs: int, enabled: bool = True, stream=None):
    self.total, self.enabled = total_jobs, enabled
    self.stream = stream or sys.stderr
    self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
    self.index, self.label, self.start = 0, "", time.perf_counter()
    self.job_start = self.start

  def begin(self, index: int, label: str) -> None:
    self.index, self.label, self.job_start = index, label, time.perf_counter()
    self.update(0, 1, "")

  def update(self, done: int, total: int, unit: str) -> None:
    if not (self.enabled and self.tty):
      return
    frac = done / max(total, 1)
    bar = "#" * int(20 * frac)
    line = (f"\r[{self.index}/{self.total}] {self.label[:48]:<48} [{bar:<20}] "
            f"{done}/{total} {unit} {time.perf_counter() - self.job_start:6.1f}s")
    self.stream.write(line)
    self.stream.flush()

  def end(self, status: str) -> None:
    if not self.enabled:
      return
    elapsed = time.perf_counter() - self.job_start
    total = time.perf_counter() - self.start
    line = (f"[{self.index}/{self.total}] {self.label} {status} "
            f"({elapsed:.1f}s; {total:.0f}s in all)")
    if self.tty:
      self.stream.write("\r" + " " * 110 + "\r")
    self.stream.write(line + "\n")
    self.stream.flush()

  def message(self, text: str) -> None:
    if self.enabled:
      self.stream.write(text + "\n")
      self.stream.flush()


def _summarise_simulation(res, deltas) -> dict:
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


def _quantiles(x: np.ndarray, axis: int = 0) -> dict:
  q = np.quantile(x, [0.1, 0.5, 0.9], axis=axis)
  return {"q10": q[0].tolist(), "q50": q[1].tolist(), "q90": q[2].tolist()}


def _summarise_trace(tr) -> dict:
  g = np.asarray(tr.gamma_t, float)       # [n, P]
  s = np.asarray(tr.top_share, float)     # [n, P]
  p = np.asarray(tr.proportions, float)   # [n, P, K]
  n = g.shape[0]
  se = lambda x: (np.std(x, axis=0, ddof=1) / math.sqrt(n)).tolist() if n > 1 else None
  return {"times": [int(t) for t in tr.times], "trials": int(n),
          "gamma": {"mean": g.mean(0).tolist(), "se": se(g), **_quantiles(g)},
          "share": {"mean": s.mean(0).tolist(), "se": se(s), **_quantiles(s)},
          "proportions_mean": p.mean(0).tolist()}


class Runner:
  """Runs jobs not yet in the store of `out`, and hands back every job's record.

  Args:
    out: output folder (the store is out/runs.jsonl).
    progress: show the progress bar on stderr.
    stream: where the bar goes (default stderr).
  """

  def __init__(self, out: str, progress: bool = True, stream=None):
    self.out = out
    self.store = Store(os.path.join(out, STORE_NAME))
    self.show, self.stream = progress, stream
    self.computed, self.skipped, self.failed = 0, 0, []

  def pending(self, jobs: Iterable[dict]) -> list:
    seen, todo = set(), []
    for job in jobs:
      key = job_key(job)
      if key not in self.store and key not in seen:
        seen.add(key)
        todo.append(job)
    return todo

  def ensure(self, jobs: list, progress: Optional[Progress] = None) -> dict:
    """Runs the missing jobs; returns {job_key: record} for every job present."""
    todo = self.pending(jobs)
    if progress is None:
      progress = Progress(len(todo), self.show, self.stream)
    for job in todo:
      progress.begin(progress.index + 1, _job_label(job))
      try:
        result = self._run(job, progress)
      except ValueError as e:  # an unknown rule or family: skip, say why
        self.failed.append((_job_label(job), str(e)))
        progress.end(f"skipped: {e}")
        continue
      self.store.add({"key": job_key(job), "job": job, "result": result,
                      "finished": time.strftime("%Y-%m-%dT%H:%M:%S")})
      self.computed += 1
      progress.end("done")
    out = {}
    for job in jobs:
      rec = self.store.get(job_key(job))
      if rec is not None:
        out[job_key(job)] = rec
    self.skipped += len(jobs) - len(todo)
    return out

  def _run(self, job: dict, progress: Progress) -> dict:
    import jax
    from jbai import engine, families, memory_maps, rules
    memory_maps.relieve()  # one process runs every job: see there
    t0, c0 = time.perf_counter(), time.process_time()
    if job["kind"] in ("simulate", "trace"):
      family = families.get(job["family"])
      rule = rules.get(job["rule"], **job["rule_params"])
      key = jax.random.key(job["seed"])
    if job["kind"] == "simulate":
      res = engine.simulate(
          key, family, job["means"], rule, job["delta"], job["trials"],
          threshold=job["threshold"], max_steps=job["max_steps"],
          lanes=lanes_for(job["trials"]),
          progress=lambda done, total, *_: progress.update(done, total, "trials"))
      result = _summarise_simulation(res, job["delta"])
    elif job["kind"] == "trace":
      tr = engine.trace(key, family, job["means"], rule, job["horizon"], job["trials"],
                        n_points=job["points"],
                        progress=lambda t, h: progress.update(t, h, "steps"))
      result = _summarise_trace(tr)
    elif job["kind"] == "gradient":
      from jbai.reproduce import gradients
      result = gradients.run_gradient_job(job, progress)
    elif job["kind"] == "search":
      from jbai.reproduce import gradients
      result = gradients.run_search_job(job, progress)
    else:
      raise ValueError(f"unknown job kind {job['kind']!r}")
    result["seconds"] = time.perf_counter() - t0
    result["cpu_seconds"] = time.process_time() - c0
    return result


def _job_label(job: dict) -> str:
  if job["kind"] == "search":
    return (f"{rule_label(job['rule'], job['rule_params'])} instance search, K={job['arms']}, "
            f"{job['steps']} steps of {job['trials']} trials")
  k = len(job["means"])
  what = {"simulate": f"{job['trials']} trials", "gradient": f"{job['trials']} trials, scores",
          "trace": f"trace {job['trials']}x{job.get('horizon')}"}[job["kind"]]
  return f"{rule_label(job['rule'], job['rule_params'])} {job['family']} K={k} {what}"


def result_of(records: dict, job: dict) -> Optional[dict]:
  """The stored result of `job`, or None when it has not run (or was skipped)."""
  rec = records.get(job_key(job))
  return None if rec is None else rec["result"]


def write_csv(path: str, header: list, rows: list) -> None:
  """Writes a CSV atomically (temporary file, then os.replace)."""
  import csv
  tmp = path + ".tmp"
  with open(tmp, "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(header)
    for row in rows:
      w.writerow([_fmt(v) for v in row])
  os.replace(tmp, path)


def write_json(path: str, obj) -> None:
  tmp = path + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(obj, f, indent=1)
  os.replace(tmp, path)


def _fmt(v):
  if isinstance(v, float):
    return f"{v:.10g}"
  return v

