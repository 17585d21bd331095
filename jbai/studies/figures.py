"""The field's figures of a study, drawn from its saved tables (matplotlib, optional).

  tau_box.png         box plots of tau per rule, one panel per named instance and delta
  tau_log_delta.png   E[tau] / log(1/delta) against log(1/delta), with T*(nu), its limit
                      for an asymptotically optimal rule (Garivier & Kaufmann 2016)
  error_rate.png      the error rate (Wilson 95% interval) against delta, with y = delta
  drawn_ratio.png     over the drawn instances, the distribution of
                      E[tau] / (T*(nu) log(1/delta)) per rule, one panel per block and delta

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


def read_tables(folder: str) -> tuple:
  """(cells, trials): the rows of the two tables of the study saved in `folder`,
  checked (`read_rows`).

  Raises:
    ValueError: one line naming the file at fault (a missing one: run the study).
  """
  out = []
  for name, checks, what in (("cells.csv", CELL_CHECKS, "cell"),
                             ("trials.csv", TRIAL_CHECKS, "trial")):
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
