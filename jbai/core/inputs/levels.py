"""Confidence levels at any magnitude, carried as log(1/delta).

The stopping thresholds need only log(1/delta), so a level is carried as
log(1/delta) in float64 (`parse_delta`): a level typed as text ("1e-400") below
float64's range, or a float below the simulation dtype's smallest normal number
(float32: 1.2e-38, where delta itself rounds to 0), reaches the threshold as
`jbai.thresholds.LogDelta` (`threshold_params`). Levels in the normal range
reach it as before, so their thresholds are unchanged to the bit.
"""

import decimal
import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jbai.thresholds import LogDelta, Threshold


class Levels(NamedTuple):
  """Confidence levels, checked: each as a float64 and as log(1/delta)."""

  values: np.ndarray   # [D] float64, delta (0.0 for a level typed below float64's range)
  log_inv: np.ndarray  # [D] float64, log(1/delta) > 0
  texts: tuple         # [D] str, each level as given (for messages and run specs)


def _level(entry) -> tuple:
  """(delta as float64, log(1/delta), text) of one level: a number or its text."""
  if isinstance(entry, (bool, np.bool_)):
    raise TypeError(f"delta must be a number in (0, 1), got {entry!r}")
  if isinstance(entry, str):
    text = entry.strip()
    try:
      exact = decimal.Decimal(text)
    except decimal.InvalidOperation:
      raise ValueError(f"delta must be a number in (0, 1), got {entry!r}") from None
    if not (exact.is_finite() and 0 < exact < 1):
      raise ValueError(f"delta must be in (0, 1), got {text}")
    # log10(delta) = log10(mantissa) + exponent, exact at any exponent.
    exponent = exact.adjusted()
    mantissa = float(exact.scaleb(-exponent))
    log_inv = -(math.log10(mantissa) + exponent) * math.log(10)
    return float(exact), log_inv, text
  if isinstance(entry, numbers.Number) or (isinstance(entry, np.ndarray) and entry.ndim == 0):
    value = float(entry)
    if not 0.0 < value < 1.0:
      raise ValueError(f"delta must be in (0, 1), got {entry!r}" + (
          " (a level below float64's range is given as text, e.g. '1e-400')"
          if value == 0.0 else ""))
    return value, -math.log(value), repr(value)
  raise TypeError(f"delta must be a number in (0, 1) or a list of them, got {entry!r}")


def parse_delta(delta) -> Levels:
  """Checks delta (a level or a 1-d list of levels, numbers or their text) and
  carries each as log(1/delta).

  A level given as text keeps its digits at any magnitude ("1e-400"), and every
  error names the level as it was given.

  Args:
    delta: a number or a string in (0, 1), or a 1-d sequence or array of them.

  Returns:
    `Levels`.

  Raises:
    ValueError: for a level outside (0, 1), NaN, or an empty or nested list.
    TypeError: for a value that is not a number or its text.
  """
  if isinstance(delta, Levels):
    return delta
  if isinstance(delta, (str, numbers.Number)):
    entries = [delta]
  else:
    arr = np.asarray(delta, dtype=object) if not isinstance(delta, jax.Array) else \
        np.asarray(delta)
    if arr.ndim > 1 or arr.size == 0:
      raise ValueError(f"delta must be a number or a 1-d list of numbers, got {delta!r}")
    entries = list(np.atleast_1d(arr))
  parsed = [_level(e.item() if isinstance(e, np.generic) else e) for e in entries]
  return Levels(np.array([p[0] for p in parsed], np.float64),
                np.array([p[1] for p in parsed], np.float64), tuple(p[2] for p in parsed))


def check_delta(delta) -> np.ndarray:
  """Validates delta (a scalar or a vector, numbers or their text), every entry
  in (0, 1); returns the levels as float64 (see `parse_delta`)."""
  return parse_delta(delta).values


def log_inv_delta(delta) -> np.ndarray:
  """[D] float64 log(1/delta), exact for levels typed below float64's range."""
  return parse_delta(delta).log_inv


def _builtin(threshold: Threshold) -> bool:
  """True for a threshold whose init takes a `LogDelta` (jbai's own)."""
  return getattr(threshold.init, "__module__", "").startswith(("jbai.thresholds",
                                                                 "jbai.stops"))


def threshold_params(threshold: Threshold, delta, num_arms: int, dtype):
  """threshold.init for concrete levels `delta`, in `dtype`.

  Levels in the dtype's normal range reach `init` as a [D] array, as they
  always have (the thresholds are the same to the bit); smaller ones (float32:
  below 1.2e-38, which would round to 0 and never let a trial stop) reach it as
  `LogDelta`, log(1/delta) computed in float64 and rounded once.

  Raises:
    ValueError: for such a level with a threshold of the user's, whose init
      takes delta itself (naming the level and the ways around).
  """
  levels = parse_delta(delta)
  if np.all(levels.values >= np.finfo(dtype).tiny):
    return threshold.init(jnp.asarray(levels.values, dtype), num_arms)
  if not _builtin(threshold):
    small = levels.texts[int(np.argmin(levels.values))]
    raise ValueError(
        f"delta {small} is below {np.dtype(dtype).name}'s smallest normal number "
        f"{np.finfo(dtype).tiny:.3g}, and threshold {threshold.name!r} takes delta itself; "
        "use a built-in threshold (they take log(1/delta)) or JAX_ENABLE_X64=1")
  return threshold.init(LogDelta(jnp.asarray(levels.log_inv, dtype)), num_arms)
