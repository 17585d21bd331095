"""The checks of a study spec's values, each raising `SpecError`: one line naming
the key and the value (docs/guide/study.md shows the spec's schema).
"""

import math


class SpecError(ValueError):
  """A bad value in a study spec: one line naming the key and the value."""


def fail(key: str, value, why: str):
  """Raises `SpecError`: `key = value: why`, the value shown short (`show`)."""
  raise SpecError(f"{key} = {show(value)}: {why}")


def show(value) -> str:
  """The repr of a value, cut to 80 characters."""
  text = repr(value)
  return text if len(text) <= 80 else text[:77] + "..."


def known(where: str, table, allowed) -> None:
  """Refuses a key of `table` (a table of the spec at `where`) not in `allowed`."""
  if not isinstance(table, dict):
    fail(where, table, "must be a table")
  for key in table:
    if key not in allowed:
      fail(f"{where}.{key}" if where else key, table[key],
           f"unknown key; choose from {list(allowed)}")


def integer(key: str, value, low: int = 1, high: int = 2 ** 31 - 1) -> int:
  """A whole number in [low, high] (a bool is refused)."""
  if isinstance(value, bool) or not isinstance(value, int):
    fail(key, value, "must be a whole number")
  if not low <= value <= high:
    fail(key, value, f"must be in [{low}, {high}]")
  return value


def number(key: str, value) -> float:
  """A finite number, as a float (a bool is refused)."""
  if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
    fail(key, value, "must be a finite number")
  return float(value)


def as_list(key: str, value) -> list:
  """A value or a list of values, as a non-empty list."""
  out = value if isinstance(value, list) else [value]
  if not out:
    fail(key, value, "is an empty list")
  return out


def choice(key: str, value, choices) -> str:
  """One of `choices` (a str)."""
  if not isinstance(value, str) or value not in choices:
    fail(key, value, f"unknown; choose from {sorted(choices)}")
  return value
