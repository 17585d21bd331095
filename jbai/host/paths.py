"""Output paths on the host, checked before any work is done.

  check_output   a file can be written at a path: not a folder, not a special
                 file, not under a file, in a folder that can be written.
  check_folder   a path is a folder that can be written, or can be created.

Each raises a ValueError of one line naming the path (as the user gave it, with
the option that named it) and why.
"""

import os
import tempfile


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
