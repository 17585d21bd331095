"""JAX's persistent compilation cache, switched on by the caller.

A simulation compiles one program per rule, family, threshold and pool size
(seconds each on a CPU), and a new process compiles it again. With JAX's
persistent compilation cache, compiled programs are written to disk and a
second process loads them instead (docs/design/caching.md has the figures).

Importing jbai changes no JAX setting. The `jbai` command line, `jbai
reproduce` and the test suite call `enable_compilation_cache()`; a library user
opts in with the same call. It chooses the directory in this order:

  1. none, if JBAI_NO_COMPILATION_CACHE is set (to anything but "" or "0"), or if
     JAX's cache is switched off (jax_enable_compilation_cache = False);
  2. the directory already configured for JAX (jax_compilation_cache_dir, for
     example from JAX_COMPILATION_CACHE_DIR), left as it is;
  3. the `path` argument, then $JBAI_COMPILATION_CACHE_DIR;
  4. $XDG_CACHE_HOME/jbai/compiled, or ~/.cache/jbai/compiled: per user.

In a directory that it chooses, it caches every program, however short its
compilation (JAX's default threshold of one second would leave out the oracle
and summary programs that each run compiles), and bounds the disk use with
JAX's own least-recently-used eviction (jax_compilation_cache_max_size,
`max_bytes`). JAX's eviction needs every entry's access record, which a
directory filled without a cap lacks: give a directory used by JAX without a
cap `max_bytes=-1`. The cache is trusted code: keep it in a directory that only
you can write.
"""

import os
from typing import Optional

import jax
from jax.experimental.compilation_cache import compilation_cache as jax_cache

ENV_DIR = "JBAI_COMPILATION_CACHE_DIR"
ENV_OFF = "JBAI_NO_COMPILATION_CACHE"
MAX_BYTES = 2**30  # the default cap on the cache directory


def default_dir() -> str:
  """The per-user cache directory: $XDG_CACHE_HOME/jbai/compiled or ~/.cache/jbai/compiled."""
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "jbai", "compiled")


def disabled_by_env() -> bool:
  return os.environ.get(ENV_OFF, "") not in ("", "0")


def enable_compilation_cache(path: Optional[str] = None,
                             max_bytes: int = MAX_BYTES) -> Optional[str]:
  """Turns on JAX's persistent compilation cache for this process.

  Args:
    path: the directory (default: $JBAI_COMPILATION_CACHE_DIR, else
      `default_dir()`); a directory already configured for JAX takes precedence.
    max_bytes: the cap on the directory's size, past which JAX evicts the least
      recently used programs (-1: no cap); applied to a directory jbai chooses.

  Returns:
    The cache directory in use, or None when the cache is off (switched off, or
    the directory cannot be made).

  Example:
    >>> import jbai
    >>> cache_dir = jbai.enable_compilation_cache()
  """
  if disabled_by_env() or not jax.config.jax_enable_compilation_cache:
    return None
  if jax.config.jax_compilation_cache_dir:
    return jax.config.jax_compilation_cache_dir
  path = path or os.environ.get(ENV_DIR) or default_dir()
  try:
    os.makedirs(path, mode=0o700, exist_ok=True)
  except OSError:
    return None  # an unwritable location: run without the cache
  jax.config.update("jax_compilation_cache_dir", path)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  jax.config.update("jax_compilation_cache_max_size", int(max_bytes))
  jax_cache.reset_cache()  # JAX reads these settings at its first compilation: again
  return path
