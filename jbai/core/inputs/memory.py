"""The memory a run's per-trial results take, refused before a run beyond the limit.

The limit is the environment variable JBAI_MEMORY_LIMIT where set, else the
memory available now (`memory_limit`); a run's results are estimated from the
bytes of one trial's (`trial_bytes`) and refused above it (`check_memory`).
"""

import os

import numpy as np

from jbai.state import count_dtype

MEMORY_ENV = "JBAI_MEMORY_LIMIT"


def _parse_bytes(text: str) -> int:
  units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
  t = text.strip().upper().rstrip("B").rstrip("I")
  unit = t[-1] if t and t[-1] in units else ""
  try:
    return int(float(t[:len(t) - len(unit)]) * units[unit])
  except ValueError:
    raise ValueError(f"{MEMORY_ENV}={text!r} is not a size such as 64G or 500M") from None


def memory_limit() -> tuple:
  """(bytes a run's results may take, where that limit comes from): the
  environment variable JBAI_MEMORY_LIMIT (64G, 500M, bytes) if set, else the
  memory available now (/proc/meminfo's MemAvailable; 16 GiB if unknown)."""
  if os.environ.get(MEMORY_ENV):
    return _parse_bytes(os.environ[MEMORY_ENV]), f"{MEMORY_ENV}"
  try:
    with open("/proc/meminfo", encoding="ascii") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024, "the memory available now"
  except OSError:
    pass
  return 16 * 2**30, "a default of 16 GiB"


def _size(n: float) -> str:
  for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
    if n < 1000 or unit == "PB":
      return f"{n:.3g} {unit}"
    n /= 1000
  return f"{n:.3g} PB"


def check_memory(what: str, n_results: int, bytes_per_result: int, copies: int = 3) -> int:
  """Refuses a run whose per-trial results would not fit in memory, before it starts.

  A run's result arrays are O(trials): `n_results` rows of `bytes_per_result`
  bytes, held about `copies` times at once (the arrays being filled, the records
  of a chunk, the finished arrays handed back).

  Returns:
    The estimate in bytes.

  Raises:
    ValueError: naming the estimate, the limit and how to raise it.
  """
  need = int(n_results) * int(bytes_per_result) * copies
  limit, source = memory_limit()
  if need > limit:
    raise ValueError(
        f"{what} needs about {_size(need)} of memory for its per-trial results, more than "
        f"the limit of {_size(limit)} ({source}); run fewer trials per call, or set "
        f"{MEMORY_ENV} (e.g. {MEMORY_ENV}=64G) to raise the limit")
  return need


def trial_bytes(num_arms: int, n_deltas: int, scores: bool, stat_dim: int = 2) -> int:
  """Bytes of one trial's results: index, answer, correct, hit_cap (4 bytes each),
  tau, counts, steps (4 bytes each, 8 with 64-bit counts) and, with scores,
  final_stats, reward and policy scores."""
  wide = np.dtype(count_dtype()).itemsize // 4  # 4-byte words of a count
  n = 1 + 3 * n_deltas + wide * (1 + n_deltas + num_arms)
  if scores:
    n += num_arms * stat_dim + n_deltas * num_arms + 2 * n_deltas
  return 4 * n
