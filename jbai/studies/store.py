"""The store of a study's jobs: jobs not yet recorded are run and stored as they end.

`Runner.ensure(jobs)` runs the jobs whose key is not yet in the store and returns
the records of all of them. Each record is appended to `runs.jsonl` in the
output folder as one complete line, flushed and fsynced as soon as its job
finishes (`jbai.host.jsonlines.JsonLines`, each with a checksum), so an interrupted run
loses at most the job in flight and a rerun skips every job already recorded. A
partial last line (a crash while writing) is dropped when the store is read; a
damaged line (not UTF-8, not JSON, altered: its checksum does not match, or it
has none in a store whose first line marks the current format) is skipped and
listed in `damaged`, and its job runs again.

The runner knows no job kind: it is given a table {kind: `jbai.studies.jobs.Kind`},
whose `run(job, progress)` returns the job's result.

With `checkpoints`, a kind's run also gets a `Checkpoint` (`run(job, progress,
checkpoint)`): the trials a job has finished are appended to
`partial.jsonl` as they come, so that a job interrupted part-way resumes from
its last finished trials rather than from its start (a study's long jobs). The
file is removed once every job asked for is stored.

A shard of a study (`jbai.studies.shards`) writes a store and a partial file of
its own (`store_name`, `partial_name`) and reads the stores of the other shards
(`read`, never written): a job recorded in any of them is not run again.
"""

import hashlib
import os
import time
from typing import Iterable, Optional

import numpy as np

from jbai.host.jsonlines import JsonLines
from jbai.host.progress import Progress
from jbai.studies.jobs import job_key

STORE_NAME = "runs.jsonl"
PARTIAL_NAME = "partial.jsonl"


class Checkpoint:
  """The finished trials of one job, kept in the runner's partial store.

  `done()` is what `jbai.simulate` takes as `done=` (None for none yet);
  `save` is its `on_chunk` callback. A trial is a function of the key and its
  index, so a job resumed from its checkpoint gives an uninterrupted job's
  results.
  """

  def __init__(self, store: JsonLines, job: dict):
    self.store = store
    self.name = hashlib.sha256(job_key(job).encode()).hexdigest()[:16]
    self.chunks = [r["trials"] for r in store.records.values() if r["job"] == self.name]

  def done(self) -> Optional[dict]:
    if not self.chunks:
      return None
    return {k: np.concatenate([np.asarray(c[k]) for c in self.chunks])
            for k in self.chunks[0]}

  def save(self, records: dict) -> None:
    if len(records["index"]) == 0:
      return
    trials = {k: np.asarray(v).tolist() for k, v in records.items()}
    self.store.add({"key": f"{self.name}:{len(self.chunks)}", "job": self.name,
                    "trials": trials})
    self.chunks.append(trials)


class Runner:
  """Runs jobs not yet in the store of `out`, and hands back every job's record.

  Args:
    out: output folder (the store is out/runs.jsonl).
    kinds: {job kind: `jbai.studies.jobs.Kind`}.
    progress: show the progress bar on stderr.
    stream: where the bar goes (default stderr).
    checkpoints: keep each job's finished trials as they come (see `Checkpoint`).
    store_name: the store's file in `out`, the one jobs run here are written to.
    partial_name: the checkpoints' file in `out`.
    read: other stores' files in `out`, read only: their jobs count as stored.
  """

  def __init__(self, out: str, kinds: dict, progress: bool = True, stream=None,
               checkpoints: bool = False, store_name: str = STORE_NAME,
               partial_name: str = PARTIAL_NAME, read: Iterable[str] = ()):
    self.out, self.kinds = out, dict(kinds)
    self.store = JsonLines(os.path.join(out, store_name), on_damage="skip", mark=True)
    self.others = [JsonLines(os.path.join(out, name), on_damage="skip", readonly=True)
                   for name in read]
    self.partial = (JsonLines(os.path.join(out, partial_name), fsync=False,
                              on_damage="skip", mark=True) if checkpoints else None)
    # [DamagedLine] skipped: their jobs run again
    self.damaged = self.store.damaged + [d for other in self.others for d in other.damaged]
    self.damaged_trials = [] if self.partial is None else self.partial.damaged  # run again
    self.show, self.stream = progress, stream
    self.computed, self.skipped, self.failed = 0, 0, []

  def pending(self, jobs: Iterable[dict]) -> list:
    """The jobs not in the store, each once, in order."""
    seen, todo = set(), []
    for job in jobs:
      key = job_key(job)
      if self.record(key) is None and key not in seen:
        seen.add(key)
        todo.append(job)
    return todo

  def progress(self, jobs: Iterable[dict]) -> Progress:
    """A progress bar over the pending jobs among `jobs`."""
    return Progress(enabled=self.show, stream=self.stream, tasks=len(self.pending(jobs)))

  def ensure(self, jobs: list, progress: Optional[Progress] = None) -> dict:
    """Runs the missing jobs; returns {job_key: record} for every job present.

    A job whose run raises ValueError (an unknown rule or family, or kind) is
    skipped and listed in `failed` with the reason.
    """
    todo = self.pending(jobs)
    if progress is None:
      progress = self.progress(todo)
    for job in todo:
      label = self.label(job)
      progress.begin(label)
      try:
        result = self._run(job, progress)
      except ValueError as e:
        self.failed.append((label, str(e)))
        progress.end(f"skipped: {e}")
        continue
      self.store.add({"key": job_key(job), "job": job, "result": result,
                      "finished": time.strftime("%Y-%m-%dT%H:%M:%S")})
      self.computed += 1
      progress.end("done")
    out = {}
    for job in jobs:
      rec = self.record(job_key(job))
      if rec is not None:
        out[job_key(job)] = rec
    self.skipped += len(jobs) - len(todo)
    if self.partial is not None and len(out) == len({job_key(j) for j in jobs}):
      self.partial.remove()
    return out

  def record(self, key: str) -> Optional[dict]:
    """The stored record of the job of `key` (in the store, else in the first of
    the other stores that holds it), or None."""
    for store in [self.store] + self.others:
      rec = store.get(key)
      if rec is not None:
        return rec
    return None

  def label(self, job: dict) -> str:
    """The job in a few words (its kind's label; the kind alone if unknown)."""
    kind = self.kinds.get(job["kind"])
    return job["kind"] if kind is None else kind.label(job)

  def _run(self, job: dict, progress: Progress) -> dict:
    from jbai.host import memory_maps
    kind = self.kinds.get(job["kind"])
    if kind is None:
      raise ValueError(f"unknown job kind {job['kind']!r}")
    execute = kind.run
    memory_maps.relieve()  # one process runs every job: see there
    t0, c0 = time.perf_counter(), time.process_time()
    if self.partial is None:
      result = execute(job, progress)
    else:
      result = execute(job, progress, Checkpoint(self.partial, job))
    result["seconds"] = time.perf_counter() - t0
    result["cpu_seconds"] = time.process_time() - c0
    return result
