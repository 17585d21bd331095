"""JAX's persistent compilation cache, on by default for jbai.

A simulation compiles one program per rule, family, threshold and pool size
(seconds each on a CPU), and a new process compiles it again. With JAX's
persistent compilation cache the compiled programs are written to disk, so that a
second `jbai run` (or script) with the same program loads them instead.

`enable()` runs when jbai is imported. It sets the cache directory, in this order:

  1. none, if JBAI_NO_COMPILATION_CACHE is set (to anything but "" or "0"), or if
     JAX's cache is switched off (jax_enable_compilation_cache = False);
  2. the directory already configured for JAX (jax_compilation_cache_dir, for
     example from JAX_COMPILATION_CACHE_DIR), left as it is;
  3. $JBAI_COMPILATION_CACHE_DIR;
  4. $XDG_CACHE_HOME/jbai/jax, or ~/.cache/jbai/jax: per user.

`jbai.program_cache` keeps beside it, in the same directory with "-programs"
appended, the exported StableHLO of jbai's own chunk programs, so that a second
process skips their tracing and lowering too; it is on where this cache is on.

It also caches every program that takes more than MIN_COMPILE_SECONDS to compile
(JAX's default threshold, 1 s, would leave out the oracle and summary programs
that each run compiles). The cache is trusted code: keep it in a directory that
only you can write (see `jax.experimental.compilation_cache`).

Disk use is bounded. Every program gets a new entry whenever its fingerprint
changes (another pool size, another jbai or JAX version), and nothing reads the
old ones again. So at most once a day (`PRUNE_INTERVAL_S`), `enable()` checks
each directory that jbai owns: the compilation cache directory that jbai chose
(not one configured for JAX), and the exported programs beside it. If a
directory's entries total more than `max_bytes()` (MAX_BYTES, 1 GiB, or
$JBAI_COMPILATION_CACHE_MAX_BYTES; 0 never prunes), `prune` removes the least
recently written entries until they total at most KEEP of it. A removed
program is compiled again when it is next needed.
"""

import os
import pathlib
import time
import warnings
from typing import Optional

import jax

from jbai import program_cache

ENV_DIR = "JBAI_COMPILATION_CACHE_DIR"
ENV_OFF = "JBAI_NO_COMPILATION_CACHE"
ENV_MAX = "JBAI_COMPILATION_CACHE_MAX_BYTES"
MIN_COMPILE_SECONDS = 0.0
JAX_DEFAULT_MIN_SECONDS = 1.0  # jax_persistent_cache_min_compile_time_secs, unless set
MAX_BYTES = 2**30              # the default cap on each cache directory
KEEP = 0.75                    # a pruned directory keeps at most this fraction of its cap
PRUNE_INTERVAL_S = 24 * 3600   # a directory is checked at most this often
MARKER = ".jbai-pruned"        # its modification time: the last check
# Entries: JAX's executables ("<key>-cache", with "<key>-atime" where JAX's own
# LRU eviction is on) and jbai's exported programs.
JAX_SUFFIX, ATIME_SUFFIX = "-cache", "-atime"
ENTRY_SUFFIXES = (JAX_SUFFIX, program_cache.SUFFIX)


def default_dir() -> str:
  """The per-user cache directory: $XDG_CACHE_HOME/jbai/jax or ~/.cache/jbai/jax."""
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "jbai", "jax")


def disabled_by_env() -> bool:
  return os.environ.get(ENV_OFF, "") not in ("", "0")


def enable(path: Optional[str] = None) -> Optional[str]:
  """Turns on JAX's persistent compilation cache (see the module docstring).

  Args:
    path: the directory; default: $JBAI_COMPILATION_CACHE_DIR or `default_dir()`.
      A directory already configured for JAX takes precedence over both.

  Returns:
    The cache directory in use, or None when the cache is off.
  """
  if disabled_by_env() or not jax.config.jax_enable_compilation_cache:
    return None
  current = jax.config.jax_compilation_cache_dir
  if current:
    _tidy([program_cache.directory()])
    return current
  path = path or os.environ.get(ENV_DIR) or default_dir()
  try:
    os.makedirs(path, mode=0o700, exist_ok=True)
  except OSError:
    return None  # an unwritable location: run without the cache
  jax.config.update("jax_compilation_cache_dir", path)
  if jax.config.jax_persistent_cache_min_compile_time_secs == JAX_DEFAULT_MIN_SECONDS:
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
  _tidy([path, program_cache.directory()])
  return path


def max_bytes() -> int:
  """The cap on each cache directory: $JBAI_COMPILATION_CACHE_MAX_BYTES (a whole
  number of bytes; 0 never prunes), else MAX_BYTES. A value that is not one is
  reported with a warning, and MAX_BYTES is used."""
  text = os.environ.get(ENV_MAX, "").strip()
  if not text:
    return MAX_BYTES
  try:
    value = int(text)
  except ValueError:
    value = -1
  if value < 0:
    warnings.warn(f"{ENV_MAX} must be a whole number of bytes (0: never prune), got "
                  f"{text!r}; using {MAX_BYTES}", stacklevel=2)
    return MAX_BYTES
  return value


def prune(path: str, cap: int) -> int:
  """Removes the least recently written entries of the cache directory `path`
  until they total at most KEEP * cap, where they total more than cap.

  Entries are the files named with ENTRY_SUFFIXES; a JAX entry's "-atime"
  companion goes with it, and other files stay. Returns the number of entries
  removed.
  """
  entries = []
  with os.scandir(path) as found:
    for entry in found:
      if entry.name.endswith(ENTRY_SUFFIXES) and entry.is_file():
        stat = entry.stat()
        entries.append((stat.st_mtime, entry.path, stat.st_size))
  total = sum(size for _, _, size in entries)
  if total <= cap:
    return 0
  removed = 0
  for _, name, size in sorted(entries):
    if total <= KEEP * cap:
      break
    try:
      os.remove(name)
    except OSError:
      continue  # removed by another process meanwhile
    if name.endswith(JAX_SUFFIX):
      try:
        os.remove(name[:-len(JAX_SUFFIX)] + ATIME_SUFFIX)
      except OSError:
        pass
    total -= size
    removed += 1
  return removed


def _tidy(paths) -> None:
  """Prunes each existing directory of `paths` to `max_bytes()`, at most once per
  PRUNE_INTERVAL_S (a MARKER file records the last check). Never raises: a cache
  that cannot be pruned is used as it is."""
  cap = max_bytes()
  if cap == 0:
    return
  for path in paths:
    if not path or not os.path.isdir(path):
      continue
    marker = os.path.join(path, MARKER)
    try:
      if time.time() - os.path.getmtime(marker) < PRUNE_INTERVAL_S:
        continue
    except OSError:
      pass  # never checked
    try:
      prune(path, cap)
      pathlib.Path(marker).touch()
    except OSError:
      pass
