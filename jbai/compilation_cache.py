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
"""

import os
from typing import Optional

import jax

ENV_DIR = "JBAI_COMPILATION_CACHE_DIR"
ENV_OFF = "JBAI_NO_COMPILATION_CACHE"
MIN_COMPILE_SECONDS = 0.0
JAX_DEFAULT_MIN_SECONDS = 1.0  # jax_persistent_cache_min_compile_time_secs, unless set


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
    return current
  path = path or os.environ.get(ENV_DIR) or default_dir()
  try:
    os.makedirs(path, mode=0o700, exist_ok=True)
  except OSError:
    return None  # an unwritable location: run without the cache
  jax.config.update("jax_compilation_cache_dir", path)
  if jax.config.jax_persistent_cache_min_compile_time_secs == JAX_DEFAULT_MIN_SECONDS:
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
  return path
