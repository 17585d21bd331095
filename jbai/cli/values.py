"""Values on the command line: number and name lists, counts, deltas, seeds, paths,
and the rules' --param entries, each read from its text or refused with one line
that names the bad text (`argparse.ArgumentTypeError`).
"""

import argparse
import math

def entries(text: str) -> list:
  """Comma-separated entries of `text`, stripped; raises on an empty one."""
  parts = [p.strip() for p in str(text).split(",")]
  if not any(parts):
    raise argparse.ArgumentTypeError(f"{text!r} is empty; give comma-separated values")
  for i, p in enumerate(parts):
    if not p:
      raise argparse.ArgumentTypeError(
          f"{text!r} has an empty entry (entry {i + 1} of {len(parts)})")
  return parts


def _float(entry: str, text: str) -> float:
  try:
    return float(entry)
  except ValueError:
    where = "" if entry == text.strip() else f" in {text!r}"
    raise argparse.ArgumentTypeError(f"{entry!r}{where} is not a number") from None


def number_list(text: str) -> list:
  """'1.2,-1,1e-3' -> [1.2, -1.0, 0.001]; one line naming the bad text otherwise."""
  return [_float(p, text) for p in entries(text)]


def number(text: str) -> float:
  """One number (a list of one)."""
  values = number_list(text)
  if len(values) != 1:
    raise argparse.ArgumentTypeError(f"{text!r}: expected one number")
  return values[0]


def count(text: str) -> int:
  """A whole number; 1e6 is accepted, and digits are read exactly (a float would
  round 9223372036854775807 up)."""
  digits = text.strip().replace("_", "")
  if digits.lstrip("+-").isdigit():
    return int(digits)
  value = number(text)
  if not (math.isfinite(value) and value == int(value)):
    raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
  return int(value)


def delta_list(text: str) -> list:
  """'1e-2,1e-400' -> ['1e-2', '1e-400']: each entry checked to be a number, and
  kept as typed, so that a level below float64's range keeps its digits
  (`jbai.core.inputs.parse_delta`) and an error names it as typed."""
  parts = entries(text)
  for p in parts:
    _float(p, text)
  return parts


def seed(text: str) -> int:
  """A PRNG seed: a whole number in [0, 2^63)."""
  value = count(text)
  if not 0 <= value < 2**63:
    raise argparse.ArgumentTypeError(f"{text!r} is not a seed in [0, 2^63)")
  return value


def positive_count(text: str) -> int:
  """A whole number >= 1."""
  value = count(text)
  if value < 1:
    raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
  return value


def path_name(text: str) -> str:
  """A file or folder name, as typed; an empty one (an unset shell variable,
  `--out "$DIR"`) is refused rather than read as the current folder or as no
  option at all."""
  if not text.strip():
    raise argparse.ArgumentTypeError(f"{text!r} is an empty path; give a file or folder name")
  return text


# Rule parameters with an option of their own (a list, or a question's value).
OWN_OPTIONS = {"beta": "--beta", "eps": "--eps", "a": "--a", "forced": "--forced",
               "projection": "--projection", "eps_good": "--eps-good", "level": "--above",
               "m": "--top"}


def param_value(text: str):
  """'3' -> 3, '0.5' -> 0.5, 'true' -> True, 'none' -> None, else the text."""
  low = text.strip().lower()
  if low in ("true", "false"):
    return low == "true"
  if low == "none":
    return None
  try:
    return int(low)
  except ValueError:
    pass
  try:
    return float(low)
  except ValueError:
    return text.strip()


def param_list(text: str) -> dict:
  """'h1=40,c=0.5' -> {'h1': 40, 'c': 0.5}: rule parameters by name, one value each."""
  out = {}
  for entry in entries(text):
    name, eq, value = entry.partition("=")
    name = name.strip().replace("-", "_")
    if not eq or not name.isidentifier() or not value.strip():
      raise argparse.ArgumentTypeError(f"{entry!r} is not NAME=VALUE")
    if name in OWN_OPTIONS:
      raise argparse.ArgumentTypeError(f"{name} has its own option: use {OWN_OPTIONS[name]}")
    if name in out:
      raise argparse.ArgumentTypeError(f"{name} appears twice in {text!r}; give it once")
    out[name] = param_value(value)
  return out


def rule_params(args) -> dict:
  """The --param options of a command line, merged (a name given twice refused)."""
  out = {}
  for params in getattr(args, "param", None) or []:
    for name, value in params.items():
      if name in out:
        raise ValueError(f"--param {name} is given twice; give it once")
      out[name] = value
  return out


def name_list(text: str) -> list:
  """'tcb,itcb' -> ['tcb', 'itcb'] (repeats dropped)."""
  return list(dict.fromkeys(entries(text)))
