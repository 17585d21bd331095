"""The instances of a study: presets of the field, random draws and CSV files.

  PRESETS        the paper's Table 1 instances (nu1 .. nu4) and Garivier &
                 Kaufmann (2016)'s mu1 and mu2 (their Section 6), by name;
  alpha_means    the alpha-family of Jamieson et al. (2014):
                 mu_k = 1 - ((k - 1) / (K - 1))^alpha, k = 1 .. K;
  draw_means     `count` instances of K arms, the means drawn uniformly on
                 [low, high] or from a Gaussian N(mean, sd^2), each redrawn
                 until its best arm is at least `min_gap` above every other arm
                 and every mean lies in the family's Theta;
  read_csv       instances from a CSV file, one a row.

Every function here is pure numpy and deterministic: the same arguments give the
same means on every machine (numpy's PCG64 generator, seeded).
"""

import csv
from typing import Optional

import numpy as np

# name: (family, means). The paper's Table 1 and GK16's Table 1 (their Section 6).
PRESETS = {
    "table1-nu1": ("gaussian", [100.0, 2.0, 1.0]),
    "table1-nu2": ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0]),
    "table1-nu3": ("bernoulli", [0.8, 0.45, 0.45, 0.45]),
    "table1-nu4": ("bernoulli", [0.79, 0.29, 0.289]),
    "gk16-mu1": ("bernoulli", [0.5, 0.45, 0.43, 0.4]),
    "gk16-mu2": ("bernoulli", [0.3, 0.21, 0.2, 0.19, 0.18]),
}
# Names that stand for several presets.
PRESET_GROUPS = {"table1": [f"table1-nu{i}" for i in range(1, 5)],
                 "gk16": ["gk16-mu1", "gk16-mu2"]}
ALPHA = "alpha"  # the alpha-family preset (takes `arms` and `alpha`)

MAX_REDRAWS = 10_000  # draws per instance before a draw is refused as impossible


class DrawError(ValueError):
  """No valid row in MAX_REDRAWS draws; `cause` names the constraint that refused
  most of them: "theta" (a mean outside the family's Theta) or "min_gap"."""

  def __init__(self, message: str, cause: str):
    super().__init__(message)
    self.cause = cause


def alpha_means(arms: int, alpha: float) -> list:
  """[K] means mu_k = 1 - ((k - 1) / (K - 1))^alpha of the alpha-family
  (Jamieson et al. 2014, lil'UCB, Section 5): alpha < 1 puts the arms near the
  best, alpha > 1 near 0.

  Example:
    >>> alpha_means(3, 1.0)
    [1.0, 0.5, 0.0]
  """
  k = np.arange(arms, dtype=np.float64)
  return (1.0 - (k / (arms - 1)) ** alpha).tolist()


def draw_means(count: int, arms: int, seed: int, lo: float, hi: float,
               low: Optional[float] = None, high: Optional[float] = None,
               mean: Optional[float] = None, sd: Optional[float] = None,
               min_gap: float = 0.0) -> np.ndarray:
  """[count, arms] means drawn at random, each row redrawn until it is valid.

  Args:
    count: instances.
    arms: K.
    seed: the generator's seed (numpy PCG64).
    lo, hi: the family's Theta: a row with a mean outside [lo, hi] is redrawn.
    low, high: uniform means on [low, high] (given together), or
    mean, sd: Gaussian means N(mean, sd^2).
    min_gap: a row is redrawn until max mu - mu_a >= min_gap for every other
      arm a (> 0 also rules out ties).

  Raises:
    DrawError: when a row needs more than MAX_REDRAWS draws (the constraints
      leave too little room), naming the one that refused most draws.
  """
  rng = np.random.default_rng(seed)
  out = np.empty((count, arms), np.float64)
  for i in range(count):
    outside = 0  # draws refused for a mean outside [lo, hi] (the others: the gap)
    for _ in range(MAX_REDRAWS):
      row = (rng.uniform(low, high, arms) if sd is None else rng.normal(mean, sd, arms))
      top = np.sort(row)[::-1]
      if not (lo <= row.min() and row.max() <= hi):
        outside += 1
      elif top[0] - top[1] >= min_gap and top[0] > top[1]:
        out[i] = row
        break
    else:
      if 2 * outside > MAX_REDRAWS:
        raise DrawError(f"no valid instance in {MAX_REDRAWS} draws: {outside} of them put a "
                        f"mean outside Theta = [{lo}, {hi}]; draw the means inside it",
                        "theta")
      raise DrawError(f"no valid instance in {MAX_REDRAWS} draws: min_gap = {min_gap} is too "
                      f"large for {arms} arms in this range", "min_gap")
  return out


def read_csv(path: str) -> list:
  """[(name or None, family or None, [means])] of a CSV file with a header.

  The columns `name` and `family` are optional; every other column holds arm
  means in order (mu1, mu2, ...); empty cells at the end of a row are dropped,
  so that instances with fewer arms fit in one file.

  Raises:
    ValueError: naming the file and the row of a cell that is not a number.
  """
  with open(path, newline="", encoding="utf-8") as f:
    rows = list(csv.reader(f))
  if not rows:
    raise ValueError(f"{path} is empty: give a header and one row per instance")
  header = [h.strip().lower() for h in rows[0]]
  out = []
  for number, row in enumerate(rows[1:], start=2):
    if not any(cell.strip() for cell in row):
      continue
    named = dict(zip(header, row))
    means = []
    for h, cell in zip(header, row):
      if h in ("name", "family") or not cell.strip():
        continue
      try:
        means.append(float(cell))
      except ValueError:
        raise ValueError(f"{path} row {number}, column {h!r}: {cell!r} is not a number") \
            from None
    out.append(((named.get("name") or "").strip() or None,
                (named.get("family") or "").strip() or None, means))
  return out
