"""Files and progress lines on the host: atomic writes, a JSON-lines store, a progress bar.

  atomic_write   a file whole or not at all: a temporary file in the same folder,
                 fsynced, then renamed over the target (`os.replace`); write_text,
                 write_json and write_csv are built on it.
  JsonLines      an append-only file of JSON records, one a line, read back on
                 opening: the finished trials of `jbai run --out` and the job
                 records of `jbai reproduce`.
  Progress       a text progress bar on stderr, over one task or a sequence of tasks.
"""

import csv
import json
import os
import sys
import time
from typing import IO, Callable, Iterable, Optional


# ---------------------------------------------------------------- atomic writes

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
    with (open(tmp, "wb") if binary else open(tmp, "w", newline="", encoding="utf-8")) as f:
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

class JsonLines:
  """An append-only file of records (JSON objects), one a line, read back on opening.

  A record is appended as one whole line and flushed (and fsynced, with
  `fsync`), so that a killed process leaves at most a truncated last line:
  opening the file drops it, from memory and from the file, and the next record
  starts on a line of its own. A line that is not a JSON object, or a record
  without the `key` field, is skipped.

  Args:
    path: the file, or None to keep the records in memory only.
    key: the field that names a record; `records` maps each name to the last
      record of that name, read or appended.
    fsync: fsync after each record, so that it also survives a crash of the
      machine (one system call per record: for records that are few and costly).
    check: called with each record read from the file, in order; raising
      ValueError refuses the file.

  Attributes:
    records: {name: last record of that name}.
    loaded: the number of records read from the file.

  Example:
    >>> store = JsonLines("/tmp/runs.jsonl")
    >>> store.add({"key": "a", "result": 1})
    >>> "a" in JsonLines("/tmp/runs.jsonl")
    True
  """

  def __init__(self, path: Optional[str], key: str = "key", fsync: bool = True,
               check: Optional[Callable[[dict], None]] = None):
    self.path, self.key, self.fsync = path, key, fsync
    self.records, self.loaded = {}, 0
    if path and os.path.exists(path):
      for record in self._read():
        if check is not None:
          check(record)
        self.records[record[key]] = record
        self.loaded += 1

  def _read(self) -> list:
    with open(self.path, "rb") as f:
      data = f.read()
    end = data.rfind(b"\n") + 1  # a truncated last line is dropped
    if end < len(data):
      with open(self.path, "r+b") as f:
        f.truncate(end)
    out = []
    for line in data[:end].decode("utf-8", errors="replace").splitlines():
      try:
        record = json.loads(line)
      except json.JSONDecodeError:
        continue
      if isinstance(record, dict) and self.key in record:
        out.append(record)
    return out

  def __contains__(self, name: str) -> bool:
    return name in self.records

  def get(self, name: str) -> Optional[dict]:
    """The last record named `name`, or None."""
    return self.records.get(name)

  def add(self, record: dict) -> None:
    """Appends one record as a whole line (flushed, and fsynced with `fsync`)."""
    self.records[record[self.key]] = record
    if not self.path:
      return
    line = json.dumps(record, separators=(",", ":")) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
    if os.path.exists(self.path) and os.path.getsize(self.path) > 0:
      with open(self.path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
          line = "\n" + line  # after a partial line written since the file was read
    with open(self.path, "a", encoding="utf-8") as f:
      f.write(line)
      f.flush()
      if self.fsync:
        os.fsync(f.fileno())

  def remove(self) -> None:
    """Deletes the file (the records in memory stay)."""
    if self.path and os.path.exists(self.path):
      os.remove(self.path)


# ---------------------------------------------------------------- progress

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
    if self.tasks is None:
      line = f"\r{self.label} [{'#' * int(30 * frac):<30}] {count} {elapsed:6.1f}s"
    else:
      line = (f"\r[{self.index}/{self.tasks}] {self.label[:48]:<48} "
              f"[{'#' * int(20 * frac):<20}] {count} {elapsed:6.1f}s")
    self.open = self.tasks is not None or done < total
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
