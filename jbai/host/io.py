"""Files and progress lines on the host: atomic writes, a JSON-lines store, a progress bar.

  atomic_write   a file whole or not at all: a temporary file in the same folder,
                 fsynced, then renamed over the target (`os.replace`); write_text,
                 write_json and write_csv are built on it.
  JsonLines      an append-only file of JSON records, one a line, each with a
                 checksum, read back on opening: the finished trials of `jbai run
                 --out` and the job records of `jbai reproduce`.
  check_output   a file can be written at a path (checked before any work).
  Progress       a text progress bar on stderr, over one task or a sequence of tasks.
"""

import contextlib
import csv
import hashlib
import json
import os
import sys
import tempfile
import time
from typing import IO, Callable, Iterable, Optional


# ---------------------------------------------------------------- atomic writes

@contextlib.contextmanager
def naming(path: str):
  """An OSError raised inside names `path`: a full disk (errno 28) or a failed
  fsync names no file of its own, and a message should say which file it lost."""
  try:
    yield
  except OSError as e:
    if e.filename is None:
      raise OSError(e.errno, e.strerror, path) from e
    raise


def atomic_write(path: str, fill: Callable[[IO], None], binary: bool = False) -> str:
  """Writes the file `path` whole or not at all.

  `fill(f)` writes the contents to a temporary file in the same folder (created
  if missing), which is flushed, fsynced and renamed over `path`: a reader sees
  the old file or the new one, never a part, and a crash leaves no partial file
  under the name.

  Args:
    path: the file to write.
    fill: writes the contents to the open file it is given.
    binary: open the temporary file in binary mode (else text, UTF-8, with
      newlines as written).

  Returns:
    `path`.
  """
  folder = os.path.dirname(os.path.abspath(path))
  os.makedirs(folder, exist_ok=True)
  tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
  try:
    with naming(path), (open(tmp, "wb") if binary else
                        open(tmp, "w", newline="", encoding="utf-8")) as f:
      fill(f)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)
  return path


def write_text(path: str, text: str) -> str:
  """Writes `text` to `path` atomically (UTF-8)."""
  return atomic_write(path, lambda f: f.write(text))


def write_json(path: str, obj, indent: Optional[int] = 1) -> str:
  """Writes `obj` as JSON (indented by `indent`) to `path` atomically."""
  return atomic_write(path, lambda f: json.dump(obj, f, indent=indent))


def write_csv(path: str, header: list, rows: Iterable[list]) -> str:
  """Writes a CSV file atomically: a header, then the rows, floats with 10
  significant digits."""

  def fill(f):
    w = csv.writer(f)
    w.writerow(header)
    for row in rows:
      w.writerow([f"{v:.10g}" if isinstance(v, float) else v for v in row])

  return atomic_write(path, fill)


# ---------------------------------------------------------------- JSON lines

def checksum(record: dict) -> str:
  """The checksum of a record: 16 hex digits of the SHA-256 of its canonical
  JSON (keys sorted, no spaces) without its own "sum" field."""
  body = {k: v for k, v in record.items() if k != SUM}
  text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True)
  return hashlib.sha256(text.encode()).hexdigest()[:16]


SUM = "sum"  # the field of a record that holds its checksum
# The field of a store's first record that marks its format, and the format this
# version writes: 2, every record with a checksum. Stores of earlier versions have
# no mark (1: checksums where written, 0: none) and are read as they were written.
FORMAT, FORMAT_VERSION = "jbai_store", 2


class DamagedLine(ValueError):
  """A line of a JSON-lines file that cannot be used, named by file and line."""

  def __init__(self, path: str, line: int, why: str, hint: str = ""):
    super().__init__(f"{path} line {line}: {why}{hint}")
    self.path, self.line, self.why = path, line, why


class JsonLines:
  """An append-only file of records (JSON objects), one a line, read back on opening.

  A record is appended as one whole line and flushed (and fsynced, with
  `fsync`), so that a killed process leaves at most a truncated last line:
  opening the file drops it, from memory and from the file, and the next record
  starts on a line of its own.

  Each record is written with its checksum (`checksum`, in the field "sum"):
  a line that is not UTF-8, not JSON, not an object, without the `key` field,
  or whose checksum does not match (it was altered), is damaged. What happens
  then is `on_damage`:

    "skip"      the line is left out (and listed in `damaged`): a store whose
                records are only results to recompute (`jbai reproduce`);
    "raise"     `DamagedLine`, one line naming the file, the line and the fault;
    "truncate"  the file is cut before the first damaged line, and that line
                and every later one are dropped (their work is recomputed).

  With `mark`, the first record of a new file carries the store's format
  (`FORMAT`: `FORMAT_VERSION`), so that a line without a checksum in a marked
  file is damaged (its checksum was deleted along with some edit): the file
  was written by this version, which writes every record with one. A file
  without the mark, written by an earlier version, is read as it was written:
  its lines without a checksum (from before checksums existed) are read unless
  `require_sum`, and records appended to it stay unmarked.

  Args:
    path: the file, or None to keep the records in memory only.
    key: the field that names a record; `records` maps each name to the last
      record of that name, read or appended.
    fsync: fsync after each record, so that it also survives a crash of the
      machine (one system call per record: for records that are few and costly).
    check: called with each record read from the file, in order; a ValueError
      it raises refuses the file (a `DamagedLine` it raises, whose file and line
      are filled in here, is handled as `on_damage` says).
    on_damage: "skip", "raise" or "truncate" (see above).
    require_sum: a line without a checksum is damaged (in any file).
    hint: appended to the message of a damaged line with "raise" (what to do).
    mark: mark the format of a file this store creates (see above).

  Attributes:
    records: {name: last record of that name}.
    loaded: the number of records read from the file.
    damaged: [DamagedLine] of the lines skipped or dropped.
    marked: the file carries the format mark (read or written).

  Example:
    >>> store = JsonLines("/tmp/runs.jsonl")
    >>> store.add({"key": "a", "result": 1})
    >>> "a" in JsonLines("/tmp/runs.jsonl")
    True
  """

  def __init__(self, path: Optional[str], key: str = "key", fsync: bool = True,
               check: Optional[Callable[[dict], None]] = None, on_damage: str = "skip",
               require_sum: bool = False, hint: str = "", mark: bool = False):
    if on_damage not in ("skip", "raise", "truncate"):
      raise ValueError(f"on_damage must be 'skip', 'raise' or 'truncate', got {on_damage!r}")
    self.path, self.key, self.fsync = path, key, fsync
    self.on_damage, self.require_sum, self.hint = on_damage, require_sum, hint
    self.mark, self.marked = mark, False
    self.records, self.loaded, self.damaged = {}, 0, []
    if path and os.path.exists(path):
      self._load(check)

  def _parse(self, number: int, raw: bytes, first: bool = False) -> dict:
    """The record of one line (the file's first, with `first`), or DamagedLine
    naming it."""
    try:
      text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
      raise DamagedLine(self.path, number, f"is not UTF-8 (byte {e.start + 1})") from None
    try:
      record = json.loads(text)
    except json.JSONDecodeError as e:
      raise DamagedLine(self.path, number, f"is not JSON ({e.msg} at column {e.colno})") \
          from None
    if not isinstance(record, dict):
      raise DamagedLine(self.path, number,
                        f"is not a record (a JSON {type(record).__name__}, not an object)")
    if self.key not in record or not isinstance(record[self.key], str):
      raise DamagedLine(self.path, number, f"has no {self.key!r} name")
    if first and FORMAT in record:
      self.marked = True  # even on a damaged line: the file is of a marked format
    if SUM in record:
      if record[SUM] != checksum(record):
        raise DamagedLine(self.path, number, "its checksum does not match: the line was "
                          "altered after it was written")
    elif self.marked:
      raise DamagedLine(self.path, number, "has no checksum, in a store whose every record "
                        "was written with one (its first line marks its format): the line "
                        "was altered after it was written")
    elif self.require_sum:
      raise DamagedLine(self.path, number, "has no checksum")
    record.pop(SUM, None)
    version = record.pop(FORMAT, FORMAT_VERSION) if first else FORMAT_VERSION
    if version != FORMAT_VERSION:
      raise DamagedLine(self.path, number, f"marks a store of format {version!r}; this "
                        f"version of jbai reads format {FORMAT_VERSION} and unmarked stores "
                        "(was it written by a newer one?)")
    return record

  def _load(self, check) -> None:
    with open(self.path, "rb") as f:
      data = f.read()
    end = data.rfind(b"\n") + 1  # a truncated last line is dropped
    if end < len(data):
      with open(self.path, "r+b") as f:
        f.truncate(end)
    offset, first = 0, True
    for number, raw in enumerate(data[:end].split(b"\n")[:-1], start=1):
      line_start, offset = offset, offset + len(raw) + 1
      if not raw.strip():
        continue
      first, is_first = False, first
      try:
        record = self._parse(number, raw, is_first)
        if check is not None:
          check(record)
      except DamagedLine as e:
        e = DamagedLine(self.path, number, e.why)  # `check` names no file or line
        self.damaged.append(e)
        if self.on_damage == "raise":
          raise DamagedLine(e.path, e.line, e.why, self.hint) from None
        if self.on_damage == "truncate":
          with open(self.path, "r+b") as f:
            f.truncate(line_start)
          return
        continue
      self.records[record[self.key]] = record
      self.loaded += 1

  def __contains__(self, name: str) -> bool:
    return name in self.records

  def get(self, name: str) -> Optional[dict]:
    """The last record named `name`, or None."""
    return self.records.get(name)

  def add(self, record: dict) -> None:
    """Appends one record, with its checksum, as a whole line (flushed, and
    fsynced with `fsync`)."""
    record = {k: v for k, v in record.items() if k not in (SUM, FORMAT)}
    self.records[record[self.key]] = record
    if not self.path:
      return
    os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
    new = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
    if new and self.mark:  # the file's first record marks its format
      record = {FORMAT: FORMAT_VERSION, **record}
      self.marked = True
    line = json.dumps({**record, SUM: checksum(record)}, separators=(",", ":")) + "\n"
    if not new:
      with open(self.path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
          line = "\n" + line  # after a partial line written since the file was read
    with naming(self.path), open(self.path, "a", encoding="utf-8") as f:
      f.write(line)
      f.flush()
      if self.fsync:
        os.fsync(f.fileno())

  def remove(self) -> None:
    """Deletes the file (the records in memory stay)."""
    if self.path and os.path.exists(self.path):
      os.remove(self.path)


# ---------------------------------------------------------------- output paths

def check_output(path: str, option: str = "--out") -> str:
  """Checks, before any work, that a file can be written at `path`.

  Refused: a path that is a folder, a special file (/dev/full), a path under a
  file, and a folder that cannot be written (checked by creating and removing a
  probe file, which also catches read-only file systems). Missing folders are
  fine (they are created when the file is written) if the nearest existing one
  can be written.

  Args:
    path: the file to be written.
    option: how the user named it (for the message).

  Returns:
    `path`.

  Raises:
    ValueError: one line naming the path and why.
  """
  if not path or not str(path).strip():
    raise ValueError(f"{option} is empty")
  full = os.path.abspath(path)
  if os.path.isdir(full) or str(path).endswith(os.sep):
    raise ValueError(f"{option} {path} is a folder; give a file name")
  if os.path.exists(full) and not os.path.isfile(full):
    raise ValueError(f"{option} {path} is not a regular file")
  folder = os.path.dirname(full)
  existing = folder
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  if not os.path.isdir(existing):
    raise ValueError(f"{option} {path} is under {existing}, which is a file, not a folder")
  try:
    fd, probe = tempfile.mkstemp(prefix=".jbai-probe-", dir=existing)
    os.close(fd)
    os.remove(probe)
  except OSError as e:
    raise ValueError(f"{option} {path} cannot be written: {existing} is not writable "
                     f"({e.strerror})") from None
  return path


def check_folder(path: str, option: str = "--out") -> str:
  """Checks, before any work, that `path` is a folder that can be written, or
  that it can be created.

  Raises:
    ValueError: one line naming the path and why (a file, not a folder; not
      writable).
  """
  if not path or not str(path).strip():
    raise ValueError(f"{option} is empty; give a folder")
  full = os.path.abspath(path)
  if os.path.exists(full) and not os.path.isdir(full):
    raise ValueError(f"{option} {path} is a file; give a folder")
  check_output(os.path.join(full, ".jbai-check"), option)
  return path


# ---------------------------------------------------------------- progress

def duration(seconds: float) -> str:
  """'42s', '3m05s', '2h10m', '12d03h': a time to a reader's precision."""
  s = int(round(seconds))
  if s < 60:
    return f"{s}s"
  if s < 3600:
    return f"{s // 60}m{s % 60:02d}s"
  if s < 86400:
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
  return f"{s // 86400}d{s % 86400 // 3600:02d}h"


class Progress:
  """A text progress bar on a stream (default stderr).

  Over one task (`tasks` None) it is the `progress(done, total, ...)` callback
  of `jbai.simulate`: `label [#####     ] done/total  elapsed`, redrawn in place,
  its line ended when the task completes. Over a sequence of `tasks` tasks,
  `begin(label)` starts the next one, `update` draws its bar prefixed by
  `[i/tasks]`, and `end(status)` writes one line per task, so that a log file
  (no terminal) reads one line per finished task.

  Args:
    label: the task's name (one task).
    enabled: False: nothing is written.
    stream: where the lines go (default stderr).
    tasks: the number of tasks of a sequence, or None for one task.
    live: draw the bar; default: when the stream is a terminal.
  """

  def __init__(self, label: str = "", enabled: bool = True, stream=None,
               tasks: Optional[int] = None, live: Optional[bool] = None):
    self.label, self.enabled, self.tasks = label, enabled, tasks
    self.stream = stream or sys.stderr
    self.live = (bool(getattr(self.stream, "isatty", lambda: False)()) if live is None
                 else live)
    self.index, self.start = 0, time.perf_counter()
    self.task_start, self.open = self.start, False

  def __call__(self, done: int, total: int, *_):
    self.update(done, total)

  def update(self, done: int, total: int, unit: Optional[str] = None) -> None:
    """Redraws the bar: `done` of `total` (trials, steps, ...: `unit`)."""
    if not (self.enabled and self.live):
      return
    frac = done / max(total, 1)
    count = f"{done}/{total}" + ("" if unit is None else f" {unit}")
    elapsed = time.perf_counter() - self.task_start
    if 0 < done < total:  # the time left at the mean rate so far
      count += f", {duration(elapsed * (total - done) / done)} left"
    if self.tasks is None:
      line = f"\r{self.label} [{'#' * int(30 * frac):<30}] {count} {elapsed:6.1f}s"
    else:
      line = (f"\r[{self.index}/{self.tasks}] {self.label[:48]:<48} "
              f"[{'#' * int(20 * frac):<20}] {count} {elapsed:6.1f}s")
    self.open = self.tasks is not None or done < total
    line += "    "  # over the end of a longer line before
    if not self.open:
      line += "\n"
    self.stream.write(line)
    self.stream.flush()

  def begin(self, label: str) -> None:
    """Starts the next task of the sequence."""
    self.index, self.label, self.task_start = self.index + 1, label, time.perf_counter()
    self.update(0, 1, "")

  def end(self, status: str) -> None:
    """Ends the current task of the sequence with one line: its status and times."""
    if not self.enabled:
      return
    elapsed = time.perf_counter() - self.task_start
    total = time.perf_counter() - self.start
    if self.live:
      self.stream.write("\r" + " " * 110 + "\r")
    self.stream.write(f"[{self.index}/{self.tasks}] {self.label} {status} "
                      f"({elapsed:.1f}s; {total:.0f}s in all)\n")
    self.stream.flush()
    self.open = False

  def close(self) -> None:
    """Ends a bar left open (an interrupted task) with a newline."""
    if self.open:
      self.stream.write("\n")
      self.open = False
