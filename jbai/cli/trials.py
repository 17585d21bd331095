"""The finished trials of `jbai run --out`, kept to resume after Ctrl-C.

Each run of a command (a rule and a threshold) is named by the hash of its spec
(family, means, rule, threshold, deltas, trials, seed, max_steps, dtype). Its
finished trials are appended to `<out>.partial.jsonl` as `jbai.simulate` hands
them out (`on_chunk`), and the same command hands them back (`done=`): a trial
is a function of the key and its index, so the resumed run's arrays are those
of an uninterrupted run. The file is removed once every run has completed.
"""

import hashlib
import json
import os
from typing import Optional

import numpy as np

from jbai.host.io import JsonLines


def partial_path(out: str) -> str:
  """Where `jbai run --out OUT` keeps finished trials until the run completes."""
  return os.path.splitext(out)[0] + ".partial.jsonl"


def run_spec(args, plan, run) -> dict:
  """What identifies a run's trials: the instance, the rule, the threshold, the
  deltas, the trials, the seed, the cap and the float dtype."""
  import jax.numpy as jnp
  return {"family": repr(plan.family), "means": list(plan.means), "rule": repr(run.rule),
          "threshold": repr(run.threshold), "delta": [float(d) for d in plan.deltas],
          "trials": args.trials, "seed": args.seed, "max_steps": args.max_steps,
          "dtype": str(jnp.zeros(()).dtype)}


def spec_key(spec: dict) -> str:
  """The name of a run in the log: a hash of its spec."""
  return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


class TrialLog:
  """Finished trials of every run of a command, kept in memory and, with a path,
  appended to a JSON-lines file as they come.

  Lines: {"run": key, "spec": {...}} once per run, then {"run": key, "index":
  [...], "tau": [[...]], "answer": [[...]], "counts": [[...]], "steps": [...]}
  per chunk (the `on_chunk` records of `jbai.simulate`). A line is written whole
  and flushed, so a kill leaves at most a truncated last line, which loading
  drops (`jbai.host.io.JsonLines`, without fsync: a chunk lost to a crash of the
  machine is only run again).

  Args:
    path: the file, or None to keep the trials in memory only.
    specs: {run key: spec} of the command's runs.

  Raises:
    ValueError: the file holds trials of a run that is not in `specs` (another
      command wrote it).
  """

  FIELDS = ("index", "tau", "answer", "counts", "steps")

  def __init__(self, path: Optional[str], specs: dict):
    self.path, self.specs = path, specs
    self.chunks = {key: [] for key in specs}
    self.store = JsonLines(path, key="run", fsync=False, check=self._take)
    self.loaded = self.count()

  def _take(self, row: dict):
    """Takes one line of the file: a run's spec or a chunk of its trials."""
    key = row["run"]
    if key not in self.specs:
      spec = row.get("spec", {})
      raise ValueError(
          f"{self.path} holds finished trials of another command "
          f"({spec.get('rule', '?')}, {spec.get('threshold', '?')}, "
          f"trials={spec.get('trials', '?')}, seed={spec.get('seed', '?')}); "
          f"rerun that command to resume it, or delete {self.path}")
    if "index" in row:
      self.chunks[key].append({k: np.asarray(row[k], np.int64) for k in self.FIELDS})

  def done(self, key: str) -> Optional[dict]:
    """The finished trials of a run (`jbai.simulate`'s `done=` layout), or None."""
    chunks = self.chunks[key]
    if not chunks:
      return None
    out = {k: np.concatenate([c[k] for c in chunks]) for k in self.FIELDS}
    _, first = np.unique(out["index"], return_index=True)
    return {k: v[first] for k, v in out.items()}

  def saver(self, key: str):
    """The `on_chunk` callback of a run (it writes the run's spec line first)."""
    if not self.chunks[key]:
      self.store.add({"run": key, "spec": self.specs[key]})

    def on_chunk(records):
      if len(records["index"]) == 0:
        return
      self.store.add({"run": key, **{k: np.asarray(records[k]).tolist()
                                     for k in self.FIELDS}})
      self.chunks[key].append({k: np.asarray(records[k], np.int64) for k in self.FIELDS})

    return on_chunk

  def count(self) -> int:
    """Finished trials held, over every run."""
    return sum(len(c["index"]) for chunks in self.chunks.values() for c in chunks)

  def remove(self):
    """Deletes the file (once every run has completed)."""
    self.store.remove()
