"""Atomic files on the host: a file written whole or not at all.

  naming         an OSError raised inside names the file it concerns (a full disk
                 or a failed fsync names none of its own).
  atomic_write   a temporary file in the same folder, fsynced, then renamed over
                 the target (`os.replace`): a reader sees the old file or the new
                 one, never a part.
  write_text, write_json, write_csv
                 text, JSON and CSV files built on `atomic_write`.

The JSON-lines store of records is `jbai.host.jsonlines`, the checks of output
paths `jbai.host.paths`.
"""

import contextlib
import csv
import json
import os
from typing import IO, Callable, Iterable, Optional


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
