"""Sensitivity to beta (paper Figures 3 and 4): mean stopping time against beta.

The item is the study shipped as jbai/studies/shipped/sensitivity.toml (`jbai
study sensitivity`), its jobs the study's (`jbai.studies.plan`). The
top-two rules (T3C, EB-TC, TS-TCI, EB-TCI) run at each beta of the grid; the rules
without a beta (TCB, ITCB, FWS, T3C with beta tuned online) are horizontal bands
(mean and 95% confidence interval). The beta-optimal characteristic time
T*_beta(nu) log(1/delta) is drawn as a reference curve.
"""

import math
import os

import numpy as np

from jbai.host.atomic import write_csv
from jbai.reproduce import reference
from jbai.reproduce.experiment import Experiment
from jbai.studies import plan as plan_lib, plots, spec as spec_lib, tables


def jobs(config: dict) -> list:
  return [job for *_, job in plan_lib.plan(spec_lib.resolve(config))]


def report(config: dict, records: dict, out: str) -> list:
  resolved = spec_lib.resolve(config)
  delta = resolved["study"]["delta"][0]
  betas = list(dict.fromkeys(s["params"]["beta"] for s in resolved["settings"]
                             if "beta" in s["params"]))
  rows, claims = [], []
  log_inv = math.log(1 / delta)
  plt = plots.pyplot()
  if plt:  # top row: the whole range (log scale); bottom row: near the minimum
    n = len(resolved["instances"])
    fig, axes = plt.subplots(2, n, figsize=(6.0 * n, 8.4), squeeze=False)
  results = tables.study_results(resolved, records)
  for j, inst in enumerate(resolved["instances"]):
    fam, means = inst["family"], inst["means"]
    t_star = reference.t_star(fam, means)
    curve_b = np.linspace(0.05, 0.95, 91)
    curve = reference.beta_t_star(fam, means, curve_b) * log_inv
    at_beta = dict(zip(betas, reference.beta_t_star(fam, means, betas) * log_inv))
    bands, points = {}, {}
    for setting, trials, (s,) in results[j]:
      rule, beta = setting["rule"], setting["params"].get("beta")
      mean, (lo, hi) = s["mean_tau"], s["tau_ci95"]
      ref = float(at_beta[beta]) if beta is not None else t_star * log_inv
      rows.append([inst["name"], rule, "" if beta is None else beta, trials,
                   mean, lo, hi, s["std_tau"], s["error_rate"], s["hit_cap"], ref,
                   mean / ref])
      if beta is None:
        bands[rule] = (mean, lo, hi)
      else:
        points.setdefault(rule, []).append((beta, mean, lo, hi))
    if plt:
      _draw(plt, axes[0][j], axes[1][j], inst, delta, bands, points, curve_b, curve,
            t_star * log_inv)
    claims += _claims(inst, bands, points)
  write_csv(os.path.join(out, "sensitivity.csv"),
            ["instance", "rule", "beta", "trials", "mean_tau", "ci95_lo", "ci95_hi",
             "std_tau", "error_rate", "hit_cap", "t_star_beta_log", "ratio"], rows)
  if plt:
    fig.suptitle("Sensitivity to beta (threshold gk16)", fontsize=10)
    plots.save(plt, fig, os.path.join(out, "sensitivity.png"))
  return claims


def _draw(plt, ax, zoom, inst, delta, bands, points, curve_b, curve, bound):
  """One instance: every rule on `ax` (log scale) and again near the minimum on `zoom`."""
  for a in (ax, zoom):
    for rule, (mean, lo, hi) in bands.items():
      c = plots.COLORS.get(rule)
      a.axhline(mean, color=c, lw=1.2, label=plots.name(rule))
      a.axhspan(lo, hi, color=c, alpha=0.15)
    for rule, pts in points.items():
      b, m, lo, hi = map(np.asarray, zip(*pts))
      a.errorbar(b, m, yerr=[m - lo, hi - m], color=plots.COLORS.get(rule), marker="o",
                 ms=3, capsize=2, label=plots.name(rule))
    a.plot(curve_b, curve, color="k", ls=":", lw=1, label=r"$T^*_\beta(\nu)\log(1/\delta)$")
    a.axhline(bound, color="k", ls="--", lw=0.8, label=r"$T^*(\nu)\log(1/\delta)$")
    a.set_xlabel(r"$\beta$")
    a.set_ylabel(r"mean stopping time $E[\tau]$")
    a.set_xlim(0.05, 0.95)
  top = max([v[2] for v in bands.values()] +
            [p[3] for pts in points.values() for p in pts] + [bound])
  ax.set_yscale("log")
  ax.yaxis.set_major_locator(plt.LogLocator(subs=(1.0, 2.0, 5.0)))
  ax.yaxis.set_major_formatter(plt.ScalarFormatter())
  ax.yaxis.set_minor_formatter(plt.NullFormatter())
  ax.set_ylim(0.9 * bound, 1.3 * top)
  ax.set_title(f"{inst['family']} {_short(inst['means'])}, delta={delta:g}",
               fontsize=9)
  ax.legend(fontsize=7, ncol=3, loc="upper center")
  zoom.set_ylim(0.95 * bound, 1.45 * bound)
  zoom.set_title("the same, near the minimum", fontsize=9)


def _short(means) -> str:
  return "[" + ", ".join(f"{m:g}" for m in means) + "]"


def _cmp(a, b) -> str:
  """'lower', 'higher' or 'tied' for two (mean, lo, hi) by their 95% intervals."""
  if a[2] < b[1]:
    return "lower"
  if a[1] > b[2]:
    return "higher"
  return "tied"


def _fmt(x) -> str:
  return f"{x[0]:.0f} [{x[1]:.0f}, {x[2]:.0f}]"


def _claims(inst, bands, points) -> list:
  """The paper's statements about this instance, checked against the numbers."""
  name = inst["name"]
  claims = []
  where = f"{inst['family']} {_short(inst['means'])}"
  itcb = bands.get("itcb")
  if itcb is None:
    return claims
  # ITCB against the top-two rules over the beta grid.
  counts = {"lower": 0, "tied": 0, "higher": 0}
  for rule, pts in points.items():
    for b, m, lo, hi in pts:
      counts[_cmp(itcb, (m, lo, hi))] += 1
  total = sum(counts.values())
  if total:
    best = min((m, rule, b) for rule, pts in points.items() for b, m, _, _ in pts)
    verdict = ("agrees" if counts["lower"] >= counts["higher"] and counts["lower"] > 0
               else "disagrees")
    claims.append({
        "experiment": "sensitivity",
        "claim": f"ITCB outperforms the top-two rules for various beta ({where})",
        "paper": "ITCB outperforms the top-two sampling strategies for various beta",
        "jbai": (f"ITCB {_fmt(itcb)}; against {total} (rule, beta) points ITCB is "
                 f"lower at {counts['lower']}, tied at {counts['tied']}, higher at "
                 f"{counts['higher']} (95% CIs); best top-two point "
                 f"{plots.name(best[1])} beta={best[2]}: {best[0]:.0f}"),
        "verdict": verdict})
  if "fws" in bands and name == "bernoulli":
    rel = bands["fws"][0] / itcb[0] - 1
    c = _cmp(itcb, bands["fws"])
    claims.append({
        "experiment": "sensitivity",
        "claim": f"ITCB is comparable to FWS ({where})",
        "paper": "ITCB's performance is comparable to FW",
        "jbai": f"ITCB {_fmt(itcb)}, FWS {_fmt(bands['fws'])} ({100 * rel:+.1f}% vs ITCB)",
        "verdict": ("agrees" if c == "tied" or abs(rel) <= 0.05 else
                    f"disagrees: ITCB is {c} than FWS by {abs(100 * rel):.1f}%")})
  betas = [0.4] if name == "bernoulli" else [0.3, 0.4]
  paper_text = ("ITCB matches TS-TCI and EB-TCI at beta ~ 0.4" if name == "bernoulli"
                else "TS-TCI and EB-TCI match ITCB for 0.3 <= beta <= 0.4")
  parts, verdicts = [], []
  for rule in ("tstci", "ebtci"):
    for b, m, lo, hi in points.get(rule, []):
      if any(abs(b - x) < 1e-9 for x in betas):
        c = _cmp(itcb, (m, lo, hi))
        parts.append(f"{plots.name(rule)} beta={b}: {m:.0f} [{lo:.0f}, {hi:.0f}] "
                     f"({100 * (m / itcb[0] - 1):+.1f}%, ITCB {c})")
        verdicts.append(c == "tied" or abs(m / itcb[0] - 1) <= 0.03)
  if parts:
    claims.append({
        "experiment": "sensitivity", "claim": f"{paper_text} ({where})",
        "paper": paper_text, "jbai": f"ITCB {_fmt(itcb)}; " + "; ".join(parts),
        "verdict": ("agrees" if all(verdicts) else
                    "partly" if any(verdicts) else "disagrees")})
  if "tcb" in bands:
    c = _cmp(itcb, bands["tcb"])
    rel = itcb[0] / bands["tcb"][0] - 1
    claims.append({
        "experiment": "sensitivity",
        "claim": f"ITCB improves on TCB empirically ({where})",
        "paper": "ITCB: improved empirical performance compared to TCB (Conclusions)",
        "jbai": f"ITCB {_fmt(itcb)}, TCB {_fmt(bands['tcb'])} ({100 * rel:+.1f}%)",
        "verdict": ("agrees" if c == "lower" else
                    "not resolved: the 95% intervals overlap" if c == "tied" else
                    "disagrees: ITCB is slower")})
  return claims


EXPERIMENT = Experiment("sensitivity", "Sensitivity to beta", jobs, report)
