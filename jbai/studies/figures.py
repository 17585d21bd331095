"""The field's figures of a study, drawn from its saved tables (matplotlib, optional).

  tau_box.png         box plots of tau per rule, one panel per named instance and delta
  tau_log_delta.png   E[tau] / log(1/delta) against log(1/delta), with T*(nu), its limit
                      for an asymptotically optimal rule (Garivier & Kaufmann 2016)
  error_rate.png      the error rate (Wilson 95% interval) against delta, with y = delta
  drawn_ratio.png     over the drawn instances, the distribution of
                      E[tau] / (T*(nu) log(1/delta)) per rule, one panel per block and delta

and those of a budget study (its cells have the columns budget and t):

  error_over_t.png    the error rate P(J_t != a*) against t on log scales, one panel
                      per named instance and per block of drawn instances (their
                      trials pooled), one line per rule setting: an anytime rule's
                      over every checkpoint with its Wilson 95% band, a fixed-budget
                      rule's through its answer at each budget, with error bars
  regret_over_t.png   the simple regret E[mu* - mu_{J_t}] against t (normal 95%)

A figure is a function of cells.csv and trials.csv alone (never of a live run),
so that `jbai plot DIR` redraws it; figures with nothing to show are skipped.
The tables are checked once as they are read (`read_rows`): a file that is
missing, empty, not CSV, without a column the figures read, or with a value of
the wrong type or range, is refused with one line naming the file, the line, the
column and the value.
"""

import csv
import io
import math
import os

import numpy as np

from jbai.studies import plots
from jbai.studies.tables import COLUMN_TYPES

MAX_PANELS = 16  # panels per figure: the first instances in spec order

# The columns the figures read, each with the values it may hold: (test, what).
_TEXT = (lambda v: v != "", "a non-empty name")
_LEVEL = (lambda v: 0 < v < 1, "a level delta in (0, 1)")
_POSITIVE = (lambda v: 0 < v < math.inf, "a finite number > 0")
_RATE = (lambda v: 0 <= v <= 1, "a rate in [0, 1]")
_BOUND = (lambda v: not math.isinf(v), "a finite number (or nan, for one trial)")
_TRIALS = (lambda v: v >= 1, "a whole number >= 1")
CELL_CHECKS = {
    "instance": _TEXT, "source": _TEXT, "group": _TEXT, "family": _TEXT, "rule": _TEXT,
    "params": (lambda v: True, "text"), "threshold": _TEXT,
    "K": (lambda v: v >= 2, "a whole number >= 2"), "delta": _LEVEL, "trials": _TRIALS,
    "mean_tau": _POSITIVE, "tau_ci_low": _BOUND, "tau_ci_high": _BOUND, "error_rate": _RATE,
    "error_ci_low": _RATE, "error_ci_high": _RATE, "t_star": _POSITIVE, "ratio": _POSITIVE}
TRIAL_CHECKS = {"instance": _TEXT, "rule": _TEXT, "params": CELL_CHECKS["params"],
                "threshold": _TEXT, "delta": _LEVEL, "tau": _TRIALS}
# A budget study's tables (`tables.BUDGET_CELL_COLUMNS`, `BUDGET_TRIAL_COLUMNS`).
_TIME = (lambda v: v >= 1, "a time, a whole number >= 1")
BUDGET_CELL_CHECKS = {
    **{c: CELL_CHECKS[c] for c in ("instance", "source", "group", "family", "rule", "params",
                                   "K", "trials", "error_rate", "error_ci_low",
                                   "error_ci_high")},
    "budget": _TIME, "t": _TIME,
    "simple_regret": (lambda v: 0 <= v < math.inf, "a finite number >= 0"),
    "regret_ci_low": _BOUND, "regret_ci_high": _BOUND}
BUDGET_TRIAL_CHECKS = {"instance": _TEXT, "rule": _TEXT, "params": CELL_CHECKS["params"],
                       "budget": _TIME, "t": _TIME,
                       "recommendation": (lambda v: v >= 0, "an arm, a whole number >= 0")}
# A budget study's trials that ask another question ([study] top or above).
_SET = (lambda v: v == "" or all(a.isdigit() for a in v.split(";")),
        "a set of arms, their indices joined by ';'")
BUDGET_QUESTION_TRIAL_CHECKS = {**{c: v for c, v in BUDGET_TRIAL_CHECKS.items()
                                   if c != "recommendation"}, "answer_set": _SET}
# Columns that only a budget study's cells have: a table with one of them is
# checked as a budget study's.
BUDGET_MARKS = ("budget", "simple_regret")


def _show(text: str, limit: int = 60) -> str:
  return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def _value(path: str, line: int, column: str, cell: str, check: tuple):
  """`cell` read as its column's type (`tables.COLUMN_TYPES`), checked."""
  kind = COLUMN_TYPES[column]
  test, what = check
  try:
    value = kind(cell) if kind is not int else int(cell.strip())
  except ValueError:
    value = None
  if value is None or not test(value):  # NaN fails every test but _BOUND's
    raise ValueError(f"{path} line {line}, column {column!r}: {_show(cell)} is not {what}")
  return value


def read_rows(path: str, checks: dict, what: str) -> list:
  """The rows of one table ({column: text}), each column of `checks` present and
  each of its values of its type and range.

  Args:
    path: cells.csv or trials.csv of a study's folder.
    checks: {column: (test, description)} of the columns the figures read.
    what: a row in words ("cell", "trial"), for the message of a table without one.

  Raises:
    ValueError: one line naming the file, and the line, column and value at fault.
  """
  try:
    with open(path, "rb") as f:
      data = f.read()
  except OSError as e:
    raise ValueError(f"cannot read {path} ({e.strerror or e})") from None
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as e:
    raise ValueError(f"{path} is not UTF-8 text (byte {e.start + 1}): not a table of "
                     "`jbai study`") from None
  reader = csv.reader(io.StringIO(text, newline=""))
  try:
    header = next(reader, None)
    if not header:
      raise ValueError(f"{path} is empty: no header, no {what}")
    for column in checks:
      if column not in header:
        raise ValueError(f"{path} has no column {column!r}, which the figures read (its "
                         f"header: {_show(','.join(header))})")
    rows = []
    for row in reader:
      if not any(cell.strip() for cell in row):
        continue
      if len(row) != len(header):
        raise ValueError(f"{path} line {reader.line_num}: {len(row)} fields, the header "
                         f"has {len(header)}")
      named = dict(zip(header, row))
      for column, check in checks.items():
        _value(path, reader.line_num, column, named[column], check)
      rows.append(named)
  except csv.Error as e:
    raise ValueError(f"{path} line {reader.line_num}: not CSV ({e})") from None
  if not rows:
    raise ValueError(f"{path} holds no {what} (only its header): nothing to draw")
  return rows


def _header(path: str) -> list:
  """The first line of a CSV file, split; [] when it cannot be read (`read_rows`
  then says why)."""
  try:
    with open(path, encoding="utf-8", newline="") as f:
      return next(csv.reader(f), [])
  except (OSError, UnicodeDecodeError, csv.Error):
    return []


def read_tables(folder: str) -> tuple:
  """(cells, trials): the rows of the two tables of the study saved in `folder`,
  checked (`read_rows`): a budget study's (cells.csv has a column of
  `BUDGET_MARKS`) against `BUDGET_CELL_CHECKS` and `BUDGET_TRIAL_CHECKS` (with
  answer sets, a question's: `BUDGET_QUESTION_TRIAL_CHECKS`).

  Raises:
    ValueError: one line naming the file at fault (a missing one: run the study).
  """
  budget = any(c in _header(os.path.join(folder, "cells.csv")) for c in BUDGET_MARKS)
  sets = "answer_set" in _header(os.path.join(folder, "trials.csv"))
  cell_checks, trial_checks = (
      (BUDGET_CELL_CHECKS, BUDGET_QUESTION_TRIAL_CHECKS if sets else BUDGET_TRIAL_CHECKS)
      if budget else (CELL_CHECKS, TRIAL_CHECKS))
  out = []
  for name, checks, what in (("cells.csv", cell_checks, "cell"),
                             ("trials.csv", trial_checks, "trial")):
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
      raise ValueError(f"{folder} holds no {name}: run `jbai study SPEC --out {folder}` "
                       "first")
    out.append(read_rows(path, checks, what))
  return tuple(out)


def _label(row: dict, show_threshold: bool) -> str:
  text = plots.name(row["rule"]) + (f"({row['params']})" if row["params"] else "")
  return text + (f" [{row['threshold']}]" if show_threshold else "")


def _ordered(rows: list, key) -> list:
  """The distinct values of key(row), in order of first appearance."""
  return list(dict.fromkeys(key(r) for r in rows))


def _bars(y, lo, hi) -> list:
  """Error bars of an interval [lo, hi] around y, never negative (the tables keep 10
  digits: an interval's end can round past its centre, an error rate of 1 say)."""
  return [np.maximum(y - lo, 0.0), np.maximum(hi - y, 0.0)]


def draw(folder: str) -> list:
  """Draws every figure of the study saved in `folder`; returns the files written
  (none without matplotlib).

  Raises:
    ValueError: a table that is missing or damaged (`read_tables`), in one line.
  """
  cells, trials = read_tables(folder)
  plt = plots.pyplot()
  if plt is None:
    return []
  if "budget" in cells[0]:
    return _draw_budget(plt, folder, cells)
  show_thr = len({r["threshold"] for r in cells}) > 1
  for r in cells + trials:
    r["label"] = _label(r, show_thr)
  named = [r for r in cells if r["source"] != "drawn"]
  drawn = [r for r in cells if r["source"] == "drawn"]
  files = []
  for name, fn, rows in (("tau_box.png", _tau_box, (named, trials)),
                         ("tau_log_delta.png", _tau_log_delta, (named,)),
                         ("error_rate.png", _error_rate, (named, drawn)),
                         ("drawn_ratio.png", _drawn_ratio, (drawn,))):
    fig = fn(plt, *rows)
    if fig is not None:
      files.append(plots.save(plt, fig, os.path.join(folder, name)))
  return files


def _tau_box(plt, named, trials):
  panels = _ordered(named, lambda r: (r["instance"], r["delta"]))[:MAX_PANELS]
  if not panels:
    return None
  taus = {}
  for t in trials:
    taus.setdefault((t["instance"], t["delta"], t["label"]), []).append(float(t["tau"]))
  fig, axes = plots.grid(plt, len(panels), 6.0, 3.8)
  for ax, (inst, delta) in zip(axes, panels):
    labels = _ordered([r for r in named if (r["instance"], r["delta"]) == (inst, delta)],
                      lambda r: r["label"])
    ax.boxplot([taus.get((inst, delta, lab), [np.nan]) for lab in labels], showmeans=True)
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel(r"stopping time $\tau$")
    ax.set_title(f"{inst}, delta = {float(delta):g}", fontsize=9)
  fig.suptitle(r"$\tau$ per rule (box: quartiles; triangle: mean)", fontsize=10)
  return fig


def _tau_log_delta(plt, named):
  panels = _ordered(named, lambda r: r["instance"])[:MAX_PANELS]
  if not panels:
    return None
  fig, axes = plots.grid(plt, len(panels), 5.5, 3.8)
  for ax, inst in zip(axes, panels):
    rows = [r for r in named if r["instance"] == inst]
    for lab in _ordered(rows, lambda r: r["label"]):
      pts = sorted((math.log(1 / float(r["delta"])), float(r["mean_tau"]),
                    float(r["tau_ci_low"]), float(r["tau_ci_high"]))
                   for r in rows if r["label"] == lab)
      x, m, lo, hi = map(np.asarray, zip(*pts))
      ax.errorbar(x, m / x, yerr=_bars(m / x, lo / x, hi / x), marker="o", ms=3, capsize=2,
                  label=lab)
    ax.axhline(float(rows[0]["t_star"]), color="k", ls="--", lw=0.8,
               label=r"$T^*(\nu)$ (the limit)")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\log(1/\delta)$")
    ax.set_ylabel(r"$E[\tau] / \log(1/\delta)$")
    ax.set_title(f"{inst} ({rows[0]['family']}, K={rows[0]['K']})", fontsize=9)
    ax.legend(fontsize=6)
  return fig


def _pooled(drawn):
  """Cells of the drawn instances pooled per (block, rule, delta): error counts."""
  pooled = {}
  for r in drawn:
    key = (f"{r['group']} (all {{}} instances)", r["label"], r["delta"])
    n, e, k = pooled.get(key, (0, 0, 0))
    pooled[key] = (n + int(r["trials"]), e + round(float(r["error_rate"]) * int(r["trials"])),
                   k + 1)
  from jbai.host.summary import wilson
  out = []
  for (group, label, delta), (n, e, k) in pooled.items():
    lo, hi = wilson(e, n)
    out.append({"instance": group.format(k), "label": label, "delta": delta,
                "error_rate": e / n, "error_ci_low": lo, "error_ci_high": hi})
  return out


def _error_rate(plt, named, drawn):
  rows = named + _pooled(drawn)
  panels = _ordered(rows, lambda r: r["instance"])[:MAX_PANELS]
  if not panels:
    return None
  fig, axes = plots.grid(plt, len(panels), 5.5, 3.8)
  for ax, inst in zip(axes, panels):
    mine = [r for r in rows if r["instance"] == inst]
    deltas = sorted({float(r["delta"]) for r in mine})
    labels = _ordered(mine, lambda r: r["label"])
    for k, lab in enumerate(labels):
      pts = sorted((float(r["delta"]), float(r["error_rate"]), float(r["error_ci_low"]),
                    float(r["error_ci_high"])) for r in mine if r["label"] == lab)
      d, e, lo, hi = map(np.asarray, zip(*pts))
      dodge = 1.06 ** (k - (len(labels) - 1) / 2)  # side by side, not on top of each other
      ax.errorbar(d * dodge, e, yerr=_bars(e, lo, hi), marker="o", ms=3, capsize=2,
                  label=lab)
    grid = np.geomspace(min(deltas), max(deltas), 50) if len(deltas) > 1 else np.asarray(deltas)
    ax.plot(grid, grid, color="k", ls="--", lw=0.8, label=r"$y = \delta$")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=min(deltas))
    ax.set_ylim(bottom=0)
    ax.set_xlabel(r"$\delta$")
    ax.set_ylabel("error rate (Wilson 95%)")
    ax.set_title(inst, fontsize=9)
    ax.legend(fontsize=6)
  return fig


def _drawn_ratio(plt, drawn):
  panels = _ordered(drawn, lambda r: (r["group"], r["delta"]))[:MAX_PANELS]
  if not panels:
    return None
  fig, axes = plots.grid(plt, len(panels), 6.0, 3.8)
  for ax, (group, delta) in zip(axes, panels):
    mine = [r for r in drawn if (r["group"], r["delta"]) == (group, delta)]
    labels = _ordered(mine, lambda r: r["label"])
    data = [[float(r["ratio"]) for r in mine if r["label"] == lab] for lab in labels]
    ax.violinplot(data, showmedians=True)
    ax.axhline(1.0, color="k", ls="--", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(r"$E[\tau] / (T^*(\nu)\log(1/\delta))$")
    ax.set_title(f"{group}: {len(data[0])} instances, delta = {float(delta):g}", fontsize=9)
  fig.suptitle("Over the drawn instances: the ratio to the lower bound per rule",
               fontsize=10)
  return fig


# ---------------------------------------------------------------- budget studies

def _draw_budget(plt, folder: str, cells: list) -> list:
  """The figures of a budget study: error_over_t.png and regret_over_t.png."""
  rows = _budget_rows(cells)
  files = []
  for name, fn in (("error_over_t.png", _error_over_t), ("regret_over_t.png", _regret_over_t)):
    fig = fn(plt, rows)
    if fig is not None:
      files.append(plots.save(plt, fig, os.path.join(folder, name)))
  return files


def _fixed_budget(rule: str) -> bool:
  """Whether the rule of that name samples with a fixed budget (`Rule.budget`);
  False for a name jbai does not know or cannot build with its defaults."""
  from jbai.rules import RULES
  try:
    return rule in RULES and RULES[rule]().budget is not None
  except (TypeError, ValueError):
    return False


def _budget_rows(cells: list) -> list:
  """The points of the curves, as floats: the named instances' cells, then each
  block of drawn instances pooled per (rule setting, budget run, t)
  (`_pooled_budget`), each labelled with its rule setting. A rule with a fixed
  budget (one run per budget: `_fixed_budget`, or several runs in the table)
  keeps the end of each run, t = T; an anytime rule every checkpoint of its run."""
  named = [{**r, "panel": f"{r['instance']} ({r['family']}, K={r['K']})"}
           for r in cells if r["source"] != "drawn"]
  rows = [{**r, **{k: float(r[k]) for k in ("t", "trials", "error_rate", "error_ci_low",
                                             "error_ci_high", "simple_regret",
                                             "regret_ci_low", "regret_ci_high")}}
          for r in named] + _pooled_budget([r for r in cells if r["source"] == "drawn"])
  runs = {}
  for r in rows:
    r["label"] = _label(r, False)
    runs.setdefault((r["panel"], r["label"]), set()).add(r["budget"])
  for r in rows:
    r["fixed"] = len(runs[r["panel"], r["label"]]) > 1 or _fixed_budget(r["rule"])
  return [r for r in rows if not r["fixed"] or r["t"] == float(r["budget"])]


def _pooled_budget(drawn: list) -> list:
  """Cells of the drawn instances pooled per (block, rule setting, budget run, t):
  the error over all their trials with its Wilson interval, and the mean simple
  regret sum_i n_i m_i / N with the normal interval of half-width
  sqrt(sum_i (n_i h_i)^2) / N (h_i: each cell's half-width)."""
  from jbai.host.summary import wilson
  pooled = {}
  for r in drawn:
    key = (r["group"], r["rule"], r["params"], r["budget"], r["t"])
    n = int(r["trials"])
    half = (float(r["regret_ci_high"]) - float(r["regret_ci_low"])) / 2
    p = pooled.setdefault(key, {"count": 0, "n": 0, "wrong": 0, "regret": 0.0, "var": 0.0})
    p["count"] += 1
    p["n"] += n
    p["wrong"] += round(float(r["error_rate"]) * n)
    p["regret"] += n * float(r["simple_regret"])
    p["var"] += (n * half) ** 2
  out = []
  for (group, rule, params, budget, t), p in pooled.items():
    lo, hi = wilson(p["wrong"], p["n"])
    mean, half = p["regret"] / p["n"], math.sqrt(p["var"]) / p["n"]
    out.append({"panel": f"{group} (all {p['count']} instances)", "rule": rule,
                "params": params, "budget": budget, "t": float(t), "trials": float(p["n"]),
                "error_rate": p["wrong"] / p["n"], "error_ci_low": lo, "error_ci_high": hi,
                "simple_regret": mean, "regret_ci_low": mean - half,
                "regret_ci_high": mean + half})
  return out


def _curves(plt, rows: list, column: str, title: str):
  """A panel per instance (or block), a line per rule setting of rows[column]
  against t on log axes: an anytime rule's with its interval as a band, a
  fixed-budget rule's (its answer at each budget) dashed with error bars; None
  for no rows."""
  panels = _ordered(rows, lambda r: r["panel"])[:MAX_PANELS]
  if not panels:
    return None
  low, high = {"error_rate": ("error_ci_low", "error_ci_high"),
               "simple_regret": ("regret_ci_low", "regret_ci_high")}[column]
  fig, axes = plots.grid(plt, len(panels), 5.5, 3.8)
  for ax, panel in zip(axes, panels):
    mine = [r for r in rows if r["panel"] == panel]
    for label in _ordered(mine, lambda r: r["label"]):
      own = [r for r in mine if r["label"] == label]
      t, y, lo, hi = map(np.asarray, zip(*sorted((r["t"], r[column], r[low], r[high])
                                                 for r in own)))
      lo = np.minimum(np.maximum(lo, 0.0), y)  # the tables keep 10 digits: see _bars
      if own[0]["fixed"]:
        ax.errorbar(t, y, yerr=_bars(y, lo, hi), marker="s", ms=4, capsize=3, ls="--",
                    lw=1.0, label=f"{label} (at each budget)")
      else:
        drawn = ax.plot(t, y, marker="o", ms=2.5, lw=1.2, label=label)[0]
        ax.fill_between(t, lo, hi, color=drawn.get_color(), alpha=0.15, lw=0)
    ax.set_xscale("log")
    # Log above the smallest value a cell can hold (one trial in n wrong, or the
    # smallest mean regret seen), linear below it, so that 0 shows.
    floor = (1 / max(r["trials"] for r in mine) if column == "error_rate" else
             min([r[column] for r in mine if r[column] > 0] or [1.0]))
    ax.set_yscale("symlog", linthresh=floor)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("t (rewards)")
    ax.set_ylabel(title)
    ax.set_title(panel, fontsize=9)
    ax.legend(fontsize=6)
  return fig


def _error_over_t(plt, rows: list):
  return _curves(plt, rows, "error_rate", r"$P(J_t \neq a^*)$ (Wilson 95%)")


def _regret_over_t(plt, rows: list):
  return _curves(plt, rows, "simple_regret", r"simple regret $\mu^* - \mu_{J_t}$ (95%)")
