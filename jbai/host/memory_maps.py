"""The kernel's limit on a process's memory mappings, and compiled programs.

XLA:CPU links every compiled program into the process as many memory mappings (a
few per kernel: several hundred for a rule's chunk program), and JAX keeps every
program it compiled, for reuse, until `jax.clear_caches()`. Linux refuses a
process more than vm.max_map_count mappings (65,530 by default); past it, XLA
crashes with a segmentation fault while it loads or compiles the next program. A
process that compiles a few hundred programs reaches it: a sweep over rules,
families and instances, or a test suite. (An XLA:GPU program lives in device
memory and adds almost no mappings.)

`relieve()` runs where jbai starts work on the host (`jbai.simulate`,
`jbai.trace`, each job of the reproduction): where the process holds more than
FRACTION of the limit, it calls `jax.clear_caches()`, which drops every compiled
program that JAX keeps (one that a live object holds, such as a
`jax.stages.Compiled`, stays). A program needed again is loaded from the
persistent compilation cache (`jbai.compilation_cache`), or compiled. Where
/proc is missing (not Linux) it does nothing.
"""

from typing import Optional

import jax

MAPS = "/proc/self/maps"                 # one line per mapping of this process
MAX_MAP_COUNT = "/proc/sys/vm/max_map_count"
FRACTION = 0.5  # of the limit: above it, `relieve` frees the compiled programs


def count() -> Optional[int]:
  """The number of memory mappings of this process (None where unknown)."""
  try:
    with open(MAPS, "rb") as maps:
      return sum(1 for _ in maps)
  except OSError:
    return None


def limit() -> Optional[int]:
  """vm.max_map_count, the most mappings a process may hold (None where unknown)."""
  try:
    with open(MAX_MAP_COUNT) as f:
      return int(f.read())
  except (OSError, ValueError):
    return None


def relieve() -> bool:
  """Frees JAX's compiled programs (`jax.clear_caches()`) where this process
  holds more than FRACTION of its mapping limit; returns whether it did.

  Call it on the host, between programs: not inside a function being traced.
  """
  held, cap = count(), limit()
  if held is None or cap is None or held <= FRACTION * cap:
    return False
  jax.clear_caches()
  return True
