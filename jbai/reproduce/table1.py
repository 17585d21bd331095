"""Table 1: the optimal allocation w(nu) of the four instances, oracle against print."""

import os

import numpy as np

from jbai.host.atomic import write_csv
from jbai.reproduce import reference
from jbai.reproduce.experiment import Experiment


def jobs(config: dict) -> list:
  del config
  return []  # oracle only, no simulation


def parse_printed(text: str) -> tuple:
  """(value, rounding half-width) of a printed number: '0.4143' -> (0.4143, 5e-5).

  A fraction such as '1/3' is exact (half-width 0).
  """
  if "/" in text:
    num, den = text.split("/")
    return float(num) / float(den), 0.0
  decimals = len(text.split(".")[1]) if "." in text else 0
  return float(text), 0.5 * 10.0 ** -decimals


def _verdict(printed: list, w: np.ndarray) -> str:
  off = []
  for text, x in zip(printed, w):
    value, half = parse_printed(text)
    if abs(x - value) > half + 1e-12:
      off.append(f"{x:.6f} (paper {text})")
  if not off:
    return "agrees to the printed digits"
  worst = max(abs(x - parse_printed(t)[0]) for t, x in zip(printed, w))
  if worst <= 2e-4:
    return "agrees within 2e-4; rounds differently: " + ", ".join(off)
  return f"disagrees (max difference {worst:.2g}): " + ", ".join(off)


def report(config: dict, records: dict, out: str) -> list:
  del records
  rows, claims = [], []
  for inst in config["instances"]:
    w, gam = reference.optimal(inst["family"], inst["means"])
    paper = np.asarray([parse_printed(p)[0] for p in inst["paper_w"]])
    for arm, (m, p, x) in enumerate(zip(inst["means"], paper, w)):
      rows.append([inst["name"], inst["family"], arm, float(m), float(p), float(x),
                   float(x - p), gam, 1.0 / gam])
    claims.append({
        "experiment": "table1",
        "claim": f"w({inst['name']}), {inst['family']} {_short(inst['means'])}",
        "paper": "[" + ", ".join(inst["paper_w"]) + "]",
        "jbai": "[" + ", ".join(f"{x:.6f}" for x in w) + "]",
        "verdict": _verdict(inst["paper_w"], w)})
  write_csv(os.path.join(out, "table1.csv"),
            ["instance", "family", "arm", "mean", "paper_w", "jbai_w", "difference",
             "gamma", "t_star"], rows)
  return claims


def _short(means) -> str:
  return "[" + ", ".join(f"{m:g}" for m in means) + "]"


EXPERIMENT = Experiment("table1", "Table 1: optimal allocations", jobs, report)
