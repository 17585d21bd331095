"""Summaries of a run: mean tau and error rate with 95% intervals, T*(nu) and the ratio.

The ratio E[tau] / (T*(nu) log(1/delta)) compares a rule with the asymptotic
lower bound of Garivier & Kaufmann (2016): E[tau] >= T*(nu) log(1/(2.4 delta)).
For eps-good answers the callers pass the eps oracle's solution as `optimum`, and
T* is T*_eps(nu) (Garivier & Kaufmann 2021; `jbai.oracle.eps`).
"""

import math
from typing import Optional

import numpy as np

from jbai import problems
from jbai.families.base import Family
from jbai.oracle import optimal
from jbai.problems.judge import slack

Z95 = 1.959964  # the standard normal's 97.5% quantile: two-sided 95% intervals


def wilson(k: int, n: int, z: float = Z95) -> tuple:
  """Wilson score interval for a binomial proportion k/n."""
  if n == 0:
    return (0.0, 1.0)
  p = k / n
  den = 1 + z * z / n
  centre = (p + z * z / (2 * n)) / den
  half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
  return (max(0.0, centre - half), min(1.0, centre + half))


def mean_ci(x, z: float = Z95) -> tuple:
  """(mean, half-width of its normal 95% interval) of the samples x (NaN width
  for fewer than two)."""
  n = len(x)
  mean = float(np.mean(x))
  half = z * float(np.std(x, ddof=1)) / math.sqrt(n) if n > 1 else float("nan")
  return mean, half


def summarize(family: Family, means, delta: float, tau, correct, hit_cap,
              instance: int = 0, optimum: Optional[tuple] = None,
              log_inv_delta: Optional[float] = None) -> dict:
  """Summary of one (instance, delta): mean tau with a 95% CI, error rate with a
  Wilson 95% CI, trials at the cap, T*(nu) log(1/delta) and the ratio.

  The error rate counts wrong answers and trials at the cap (they did not return a
  correct answer); `wrong` counts wrong answers alone. Trials at the cap enter the
  mean tau at the cap (so that mean is then a lower bound, flagged by hit_cap > 0).
  `optimum` is (w(nu), Gamma(nu)) when the caller has it (default: the cached
  oracle solution of `optimal(family, means)`; for eps-good answers,
  `optimal(family, means, eps)`, whose T* is T*_eps). `log_inv_delta` is log(1/delta)
  when the caller carries it (a delta below float64's range is 0.0 as a float).
  """
  n = len(tau)
  w, gam = optimal(family, means) if optimum is None else optimum
  t_star = 1.0 / float(gam)
  mean, half = mean_ci(tau)
  errors = int(np.sum(~correct))
  log_inv = -math.log(delta) if log_inv_delta is None else log_inv_delta
  lower_bound = t_star * log_inv
  return {"instance": instance, "means": [float(m) for m in means], "delta": float(delta),
          "trials": n, "mean_tau": mean, "tau_ci95": [mean - half, mean + half],
          "median_tau": float(np.median(tau)), "max_tau": int(np.max(tau)),
          "error_rate": errors / n, "error_ci95": list(wilson(errors, n)),
          "wrong": int(np.sum(~correct & ~hit_cap)), "hit_cap": int(np.sum(hit_cap)),
          "t_star": t_star, "w_star": [float(x) for x in np.asarray(w)],
          "t_star_log": lower_bound, "ratio": mean / lower_bound}


# The columns of a run's cells, as a study's cells.csv has them (`jbai.studies`;
# a study adds source and group).
CELL_COLUMNS = ["instance", "family", "K", "rule", "params", "threshold", "delta", "trials",
                "mean_tau", "tau_ci_low", "tau_ci_high", "median_tau", "error_rate",
                "error_ci_low", "error_ci_high", "wrong", "at_cap", "t_star", "t_star_log",
                "ratio"]


def _name_and_params(text: str) -> tuple:
  """("t3c", "beta=0.3") from "t3c(beta=0.3)": a study's rule and params columns."""
  name, _, inside = text.partition("(")
  params = [p.strip() for p in inside.rstrip(")").split(",") if p.strip()]
  return name, ";".join(sorted(params))


def cells(summary: list, stats: dict):
  """A run's summaries (one per instance and delta) as the rows of a study's
  cells.csv: a pandas DataFrame when pandas is importable, else a dict of columns.
  `params` lists every parameter of the rule (a study's, those its spec gives)."""
  rule, params = _name_and_params(stats["rule"])
  family = stats["family"].partition("(")[0]
  columns = {c: [] for c in CELL_COLUMNS}
  for s in summary:
    (tau_lo, tau_hi), (err_lo, err_hi) = s["tau_ci95"], s["error_ci95"]
    row = {"instance": s["instance"], "family": family, "K": len(s["means"]), "rule": rule,
           "params": params, "threshold": stats["threshold"].removesuffix("()"), "delta": s["delta"],
           "trials": s["trials"], "mean_tau": s["mean_tau"], "tau_ci_low": tau_lo,
           "tau_ci_high": tau_hi, "median_tau": s["median_tau"],
           "error_rate": s["error_rate"], "error_ci_low": err_lo, "error_ci_high": err_hi,
           "wrong": s["wrong"], "at_cap": s["hit_cap"], "t_star": s["t_star"],
           "t_star_log": s["t_star_log"], "ratio": s["ratio"]}
    for c in CELL_COLUMNS:
      columns[c].append(row[c])
  try:
    import pandas
  except ImportError:
    return columns
  return pandas.DataFrame(columns)


def problem_optimum(problem, family, means) -> tuple:
  """(w*(nu), 1 / T*(nu)) of a question beyond the best arm at one concrete instance
  (`jbai.problems.oracle`), as `optimal` gives the best arm's."""
  sol = problems.oracle(problem, family, np.asarray(means, float))
  return tuple(float(x) for x in np.asarray(sol.w)), 1.0 / float(sol.t_star)


def question_optimum(problem, family, means) -> tuple:
  """(w*(nu), 1 / T*(nu)) of a run's question at one concrete instance: an arm's
  (`optimal`, with T*_eps for an eps-good arm), else the set question's
  (`problem_optimum`)."""
  if problem.arm:
    return optimal(family, means, slack(problem))
  return problem_optimum(problem, family, means)
