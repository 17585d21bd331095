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

from jbai.host.jsonlines import DamagedLine, JsonLines
from jbai.host.paths import check_output

PARTIAL_SUFFIX = ".partial.jsonl"
from jbai.cli.interrupts import EXIT_INTERRUPTED  # noqa: F401 (jbai.cli.run, budget)


def output_paths(out: str) -> dict:
  """The three files of `jbai run --out OUT`, distinct and side by side:
  {"summary": the JSON, "arrays": the .npz, "partial": the finished trials}.

  OUT names the summary, the arrays going to OUT's stem + .npz; an OUT ending in
  .npz names the arrays, the summary going to its stem + .json (so that neither
  overwrites the other). The finished trials are kept in OUT's stem +
  .partial.jsonl until the run completes.

  Raises:
    ValueError: for an OUT that names a finished-trial file.
  """
  if out.endswith(PARTIAL_SUFFIX):
    raise ValueError(f"--out {out} names a file of finished trials; give the summary's "
                     f"name (say {out[:-len(PARTIAL_SUFFIX)]}.json)")
  stem, ext = os.path.splitext(out)
  if ext.lower() == ".npz":
    return {"summary": stem + ".json", "arrays": out, "partial": stem + PARTIAL_SUFFIX}
  return {"summary": out, "arrays": stem + ".npz", "partial": stem + PARTIAL_SUFFIX}


def checked_outputs(args) -> Optional[dict]:
  """The files of --out (`output_paths`), each checked writable before any work."""
  if args.out is None:
    return None
  paths = output_paths(args.out)
  for path in paths.values():
    check_output(path, "--out" if path == args.out else f"--out's file")
  return paths


def partial_path(out: str) -> str:
  """Where `jbai run --out OUT` keeps finished trials until the run completes."""
  return output_paths(out)["partial"]


def max_steps_of(args, rule) -> int:
  """A run's cap: --max-steps, else the rule's default
  (`jbai.core.inputs.default_max_steps`: 1e6, or a block rule's own)."""
  from jbai.core.inputs import default_max_steps
  return args.max_steps if args.max_steps is not None else default_max_steps(rule)


def run_spec(args, plan, run) -> dict:
  """What identifies a run's trials: the instance, the rule, the threshold, the
  deltas, the trials, the seed, the cap and the float dtype."""
  import jax.numpy as jnp
  return {"family": repr(plan.family), "means": list(plan.means), "rule": repr(run.rule),
          "threshold": repr(run.threshold),
          # a level below float64's range as its text (its float would be 0.0)
          "delta": [float(d) if isinstance(d, float) else str(d) for d in plan.deltas],
          "trials": args.trials, "seed": args.seed, "max_steps": max_steps_of(args, run.rule),
          "dtype": str(jnp.zeros(()).dtype),
          # a question beyond the best arm, whose answers are sets of arms
          **({"problem": repr(run.threshold.problem)}
             if getattr(run.threshold, "problem", None) is not None else {})}


def spec_key(spec: dict) -> str:
  """The name of a run in the log: a hash of its spec."""
  return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def _differences(found: dict, specs: dict) -> str:
  """The settings in which a run of the file differs from the nearest run of
  this command: `name: file X, this command Y; ...`."""
  if not specs:
    return ""
  def diff(spec):
    return [k for k in sorted(set(found) | set(spec)) if found.get(k) != spec.get(k)]
  nearest = min(specs.values(), key=lambda spec: len(diff(spec)))
  parts = [f"{k}: file {found.get(k, '(none)')!r}, this command {nearest.get(k, '(none)')!r}"
           for k in diff(nearest)]
  return "; differs in " + "; ".join(parts) if parts else ""


class TrialLog:
  """Finished trials of every run of a command, kept in memory and, with a path,
  appended to a JSON-lines file as they come.

  Lines: {"run": key, "spec": {...}} once per run, then {"run": key, "index":
  [...], "tau": [[...]], "answer": [[...]], "counts": [[...]], "steps": [...]}
  per chunk (the `on_chunk` records of `jbai.simulate`), each with a checksum,
  the first also with the file's format mark (`jbai.host.jsonlines.JsonLines`). A line
  is written whole and flushed, so a kill leaves at most a truncated last line,
  which loading drops (without fsync: a chunk lost to a crash of the machine is
  only run again).

  A damaged line (not JSON, not UTF-8, a record of the wrong shape, an index out
  of range, a checksum that does not match, or none in a file of the marked
  format) is refused with one line naming the file and the line; with `repair`,
  the file is cut before it and that line's trials and every later line's are
  run again. A file of an earlier version (no mark) resumes as it did: its lines
  without a checksum are read.

  Args:
    path: the file, or None to keep the trials in memory only.
    specs: {run key: spec} of the command's runs.
    repair: drop the first damaged line and the lines after it (their trials
      are recomputed) instead of refusing the file.

  Raises:
    ValueError: the file holds trials of a run that is not in `specs` (another
      command wrote it; the message names the settings that differ), or a
      damaged line (`jbai.host.jsonlines.DamagedLine`).
  """

  FIELDS = ("index", "tau", "answer", "counts", "steps")

  def __init__(self, path: Optional[str], specs: dict, repair: bool = False):
    self.path, self.specs = path, specs
    self.chunks = {key: [] for key in specs}
    self.store = JsonLines(
        path, key="run", fsync=False, check=self._take,
        # A file this version writes is marked: a line of it without a checksum is
        # refused. An unmarked file, of an earlier version, resumes as it did.
        on_damage="truncate" if repair else "raise", mark=True,
        hint=f"; rerun with --repair to drop it and the lines after it (their trials run "
        f"again), or delete {path}")
    self.dropped = self.store.damaged
    self.loaded = self.count()

  def _damaged(self, why: str) -> DamagedLine:
    return DamagedLine(self.path, 0, why)  # the store names the line

  def _take(self, row: dict):
    """Takes one line of the file: a run's spec or a chunk of its trials."""
    key = row["run"]
    if key not in self.specs:
      spec = row.get("spec", {}) if isinstance(row.get("spec"), dict) else {}
      raise ValueError(
          f"{self.path} holds finished trials of another command "
          f"({spec.get('rule', '?')}, {spec.get('threshold', '?')}, "
          f"trials={spec.get('trials', '?')}, seed={spec.get('seed', '?')})"
          f"{_differences(spec, self.specs)}; "
          f"rerun that command to resume it, or delete {self.path}")
    if "index" in row:
      self.chunks[key].append(self._chunk(row, self.specs[key]))

  def _chunk(self, row: dict, spec: dict) -> dict:
    """The arrays of one chunk line, each checked against the run's spec."""
    missing = [k for k in self.FIELDS if k not in row]
    if missing:
      raise self._damaged(f"a chunk of trials without {missing[0]!r}")
    try:
      chunk = {k: np.asarray(row[k], np.int64) for k in self.FIELDS}
    except (TypeError, ValueError, OverflowError):
      raise self._damaged("a chunk of trials with a field that is not whole numbers") \
          from None
    n = chunk["index"].shape[0] if chunk["index"].ndim == 1 else -1
    # [n, D] answers of a stopped run, [n, C] recommendations of a run to a budget
    n_deltas = len(spec.get("delta", spec.get("checkpoints", []))) or None
    n_arms = len(spec.get("means", [])) or None
    sets = "problem" in spec or spec.get("answers") == "sets"  # a set: [K] each
    answer = (n, n_deltas) + ((n_arms,) if sets else ())
    shapes = {"index": (n,), "tau": (n, n_deltas), "answer": answer,
              "counts": (n, n_arms), "steps": (n,)}
    for name, shape in shapes.items():
      got = chunk[name].shape
      if n < 0 or len(got) != len(shape) or any(
          want is not None and g != want for g, want in zip(got, shape)):
        raise self._damaged(f"a chunk of trials whose {name!r} has shape {got}")
    trials = spec.get("trials")
    if n and (chunk["index"].min() < 0 or (trials and chunk["index"].max() >= trials)):
      raise self._damaged(f"a trial index out of range [0, {trials}): "
                          f"{int(chunk['index'].min())}..{int(chunk['index'].max())}")
    return chunk

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
