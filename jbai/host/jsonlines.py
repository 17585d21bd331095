"""The JSON-lines store on the host: an append-only file of records, one a line.

  checksum       16 hex digits of the SHA-256 of a record's canonical JSON.
  SUM, FORMAT, FORMAT_VERSION
                 the checksum's field, and the format mark of a store's first
                 record with the format this version writes.
  DamagedLine    a line that cannot be used, named by file and line.
  JsonLines      the store: each record appended as one whole line with its
                 checksum, read back on opening: the finished trials of `jbai run
                 --out` and the job records of `jbai reproduce`.

Lines are appended with `jbai.host.atomic.naming`, so that an OSError names the
store's file.
"""

import hashlib
import json
import os
from typing import Callable, Optional

from jbai.host.atomic import naming


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
    readonly: never write the file, not even to drop a truncated last line (the
      store of another process, which may be writing that line now).

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
               require_sum: bool = False, hint: str = "", mark: bool = False,
               readonly: bool = False):
    if on_damage not in ("skip", "raise", "truncate"):
      raise ValueError(f"on_damage must be 'skip', 'raise' or 'truncate', got {on_damage!r}")
    self.path, self.key, self.fsync = path, key, fsync
    self.on_damage, self.require_sum, self.hint = on_damage, require_sum, hint
    self.mark, self.marked, self.readonly = mark, False, readonly
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
    if end < len(data) and not self.readonly:
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
