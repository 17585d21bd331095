"""Shards of a study: disjoint parts of its jobs, run as a scheduler's job array.

`jbai study SPEC --out DIR --shard I/N` runs the I-th of N parts of the study's
jobs; `--shard slurm` reads I and N from a Slurm job array ($SLURM_ARRAY_TASK_ID,
less $SLURM_ARRAY_TASK_MIN, over $SLURM_ARRAY_TASK_STEP; $SLURM_ARRAY_TASK_COUNT).
Then `jbai study SPEC --out DIR` (no --shard) reads every shard's store, runs
whatever is missing and writes the tables (docs/guide/study.md, "On a cluster").

  Shard          I and N.
  parse_shard    "I/N" or "slurm" as a Shard, or one line saying what is wrong.
  share          the jobs of a shard: job j of the full plan (in plan order) to
                 shard j mod N, whatever is already stored, so that the parts are
                 disjoint and cover the plan.
  Files          the names of a shard's own files in DIR: its store
                 (runs.shard-I-of-N.jsonl), its checkpoints, its lock and its
                 marker (shard-I-of-N.json: the spec's hash, done or not).
  store_names    every store in DIR (runs.jsonl and the shards'), which a shard
                 and the plain run read, and skip the jobs they hold.
  markers        the shards' markers in DIR.
  spec_hash      the SHA-256 of the resolved spec's canonical JSON.
  check_spec     refuses a spec other than the one whose shards are in DIR.
  exclusive      the shard's lock (`fcntl.flock`, held while it runs and
                 released by the kernel when its process dies, however): a second
                 shard with the same I/N is refused.

A shard writes only its own files; it reads the others' stores without ever
writing them (`jbai.host.jsonlines.JsonLines` with `readonly`). A trial is a
pure function of its job's key, so the tables from the shards' records are
those of a run on one machine, byte for byte.
"""

import contextlib
import glob
import hashlib
import json
import os
import re
from typing import NamedTuple

from jbai.studies.store import PARTIAL_NAME, STORE_NAME

SLURM_ID, SLURM_COUNT = "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"
SLURM_MIN, SLURM_STEP = "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP"
STORE_GLOB, MARKER_GLOB = "runs.shard-*-of-*.jsonl", "shard-*-of-*.json"


class Shard(NamedTuple):
  """The `index`-th (from 0) of `count` parts of a study's jobs."""

  index: int
  count: int

  def __str__(self) -> str:
    return f"{self.index}/{self.count}"


def _whole(text: str, what: str) -> int:
  if not re.fullmatch(r"\s*[+-]?\d+\s*", text):
    raise ValueError(f"{what} must be a whole number, got {text!r}")
  return int(text)


def parse_shard(text: str, environ=None) -> Shard:
  """A `--shard` value as a Shard.

  Args:
    text: "I/N" (0 <= I < N), or "slurm": I and N of a Slurm job array, I the
      task's place in the array ((SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) /
      SLURM_ARRAY_TASK_STEP, so that `--array=1-8` and `--array=0-14:2` are 8
      shards each) and N = SLURM_ARRAY_TASK_COUNT.
    environ: the environment (default os.environ).

  Raises:
    ValueError: one line, for a malformed value, I >= N, N < 1, or "slurm"
      outside a job array.
  """
  environ = os.environ if environ is None else environ
  if text.strip().lower() == "slurm":
    missing = [v for v in (SLURM_ID, SLURM_COUNT) if not environ.get(v)]
    if missing:
      raise ValueError(f"--shard slurm reads ${' and $'.join(missing)}, which is not set "
                       "(not a task of a Slurm job array?); give --shard I/N")
    place = _whole(environ[SLURM_ID], SLURM_ID) - _whole(environ.get(SLURM_MIN, "0"), SLURM_MIN)
    step = _whole(environ.get(SLURM_STEP, "1"), SLURM_STEP)
    if step < 1 or place % step:
      raise ValueError(f"--shard slurm: task {environ[SLURM_ID]} is not on the array's "
                       f"steps ({SLURM_MIN}, {SLURM_STEP})")
    index, count, what = place // step, _whole(environ[SLURM_COUNT], SLURM_COUNT), "--shard slurm"
  else:
    parts = text.split("/")
    if len(parts) != 2:
      raise ValueError(f"--shard must be I/N (the I-th of N parts, from 0) or slurm, "
                       f"got {text!r}")
    index, count = (_whole(p, f"--shard {text!r}: I and N") for p in parts)
    what = f"--shard {text}"
  if count < 1:
    raise ValueError(f"{what}: N must be at least 1, got {count}")
  if not 0 <= index < count:
    raise ValueError(f"{what}: I must be in 0..{count - 1} (the I-th of N parts, "
                     f"from 0), got {index}")
  return Shard(index, count)


def share(jobs: list, shard: Shard) -> list:
  """The jobs of `shard`: job j of the full plan `jobs` when j mod N == I."""
  return [job for j, job in enumerate(jobs) if j % shard.count == shard.index]


class Files(NamedTuple):
  """The names, in the output folder, of one shard's own files."""

  store: str    # its jobs' records
  partial: str  # its checkpoints (the finished trials of a job in flight)
  lock: str     # the file its lock is held on
  marker: str   # the spec's hash, and whether the shard is done

  @classmethod
  def of(cls, shard: Shard) -> "Files":
    tag = f"shard-{shard.index}-of-{shard.count}"
    store, ext = os.path.splitext(STORE_NAME)
    partial, _ = os.path.splitext(PARTIAL_NAME)
    return cls(f"{store}.{tag}{ext}", f"{partial}.{tag}{ext}", f"{tag}.lock", f"{tag}.json")


def _names(out: str, pattern: str) -> list:
  return sorted(os.path.basename(p) for p in glob.glob(os.path.join(glob.escape(out), pattern)))


def store_names(out: str) -> list:
  """Every store in `out`, by name: runs.jsonl, then the shards' in sorted order."""
  return [STORE_NAME] + _names(out, STORE_GLOB)


def markers(out: str) -> list:
  """[(file name, marker)] of the shards' markers in `out`, in sorted order (a file
  that is not one, say half written by hand, is left out: it claims nothing)."""
  found = []
  for name in _names(out, MARKER_GLOB):
    try:
      with open(os.path.join(out, name), encoding="utf-8") as f:
        marker = json.load(f)
      if isinstance(marker.get("spec_sha256"), str):
        found.append((name, marker))
    except (OSError, ValueError, AttributeError):
      continue
  return found


def spec_hash(resolved: dict) -> str:
  """The SHA-256 (hex) of the resolved spec's canonical JSON (keys sorted)."""
  text = json.dumps(resolved, sort_keys=True, separators=(",", ":"), allow_nan=True)
  return hashlib.sha256(text.encode()).hexdigest()


def check_spec(out: str, digest: str) -> None:
  """Refuses the spec of hash `digest` when a shard's marker in `out` records
  another (shards of two specs in one folder).

  Raises:
    ValueError: one line naming the marker.
  """
  for name, marker in markers(out):
    theirs = marker["spec_sha256"]
    if theirs != digest:
      raise ValueError(f"{out} holds shards of another spec ({name}: spec hash "
                       f"{theirs[:12]}, this spec's {digest[:12]}); give another --out")


def mark(out: str, shard: Shard, digest: str, jobs: int, done: bool) -> str:
  """Writes the shard's marker (atomically): its spec's hash, its share of the
  jobs and whether every one is stored."""
  from jbai.host.atomic import write_json
  return write_json(os.path.join(out, Files.of(shard).marker),
                    {"shard": str(shard), "spec_sha256": digest, "jobs": jobs, "done": done})


@contextlib.contextmanager
def exclusive(out: str, shard: Shard):
  """Holds the shard's lock for the block: an exclusive `fcntl.flock` on
  DIR/shard-I-of-N.lock, taken without waiting. The kernel releases it when the
  process ends, by a kill too, so that a killed shard can be rerun at once.

  Raises:
    ValueError: one line, when another process holds it (the same shard runs).
  """
  import fcntl
  path = os.path.join(out, Files.of(shard).lock)
  with open(path, "a", encoding="utf-8") as f:
    try:
      fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      raise ValueError(f"shard {shard} of {out} is already running (another process holds "
                       f"{path}); each shard runs once at a time") from None
    try:
      yield
    finally:
      fcntl.flock(f.fileno(), fcntl.LOCK_UN)


__all__ = ["Files", "MARKER_GLOB", "STORE_GLOB", "Shard", "check_spec", "exclusive", "mark",
           "markers", "parse_shard", "share", "spec_hash", "store_names"]
