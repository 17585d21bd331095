"""Beyond the paper: E[tau] / (T*(nu) log(1/delta)) as delta goes to 0.

The item is the study shipped as jbai/studies/shipped/ratio.toml (`jbai study
ratio`), its jobs the study's (`jbai.studies.plan`): one trajectory per
trial records the first crossing of every level of delta, so a run of n trials
gives the whole curve. Asymptotically optimal rules (TCB, ITCB, Track-and-Stop)
should approach 1; a top-two rule with a fixed beta approaches T*_beta(nu) /
T*(nu), drawn as a reference level.
"""

import math
import os

from jbai.host.atomic import write_csv
from jbai.reproduce import reference
from jbai.reproduce.experiment import Experiment
from jbai.studies import plan as plan_lib, plots, spec as spec_lib, tables
from jbai.studies.jobs import rule_label

BETA_LEVEL = 0.5  # the beta of the level T*_beta / T* drawn on every panel


def jobs(config: dict) -> list:
  return [job for *_, job in plan_lib.plan(spec_lib.resolve(config))]


def report(config: dict, records: dict, out: str) -> list:
  """ratio.csv (per instance, rule and delta: E[tau], its 95% CI and the ratio),
  ratio.png, and a claim per instance at the smallest delta."""
  resolved = spec_lib.resolve(config)
  rows, claims = [], []
  beta = BETA_LEVEL
  plt = plots.pyplot()
  fig, axes = plots.grid(plt, len(resolved["instances"]), 6.0, 4.2) if plt else (None, None)
  results = tables.study_results(resolved, records)
  for j, inst in enumerate(resolved["instances"]):
    fam, means = inst["family"], inst["means"]
    t_star = reference.t_star(fam, means)
    level = float(reference.beta_t_star(fam, means, beta)[0]) / t_star
    finals = {}
    for setting, trials, summaries in results[j]:
      rule, params = setting["rule"], setting["params"]
      x, y, lo, hi = [], [], [], []
      for s in summaries:
        log_inv = math.log(1 / s["delta"])
        ref = t_star * log_inv
        mean, (low, high) = s["mean_tau"], s["tau_ci95"]
        rows.append([inst["name"], rule_label(rule, params), trials, s["delta"], log_inv,
                     mean, low, high, mean / ref, low / ref, high / ref, s["error_rate"],
                     s["hit_cap"]])
        x.append(log_inv)
        y.append(mean / ref)
        lo.append(low / ref)
        hi.append(high / ref)
      finals[rule_label(rule, params)] = (x[-1], y[-1], lo[-1], hi[-1], trials)
      if plt:
        c = plots.COLORS.get(rule)
        label = plots.name(rule) + (f" (beta={params['beta']})" if "beta" in params else "")
        axes[j].plot(x, y, color=c, marker=".", label=f"{label}, {trials} trials")
        axes[j].fill_between(x, lo, hi, color=c, alpha=0.15)
    if plt:
      _finish_panel(plt, axes[j], inst, beta, level)
    if finals:
      claims.append(_claim(inst, finals, beta, level))
  write_csv(os.path.join(out, "ratio.csv"),
            ["instance", "rule", "trials", "delta", "log_inv_delta", "mean_tau",
             "ci95_lo", "ci95_hi", "ratio", "ratio_lo", "ratio_hi", "error_rate",
             "hit_cap"], rows)
  if plt:
    fig.suptitle("Ratio to the lower bound as delta -> 0 (threshold gk16)", fontsize=10)
    plots.save(plt, fig, os.path.join(out, "ratio.png"))
  return claims


def _finish_panel(plt, ax, inst: dict, beta: float, level: float) -> None:
  """One instance's panel: the levels 1 and T*_beta / T*, axes and legend."""
  ax.axhline(1.0, color="k", ls="--", lw=0.8, label="1 (asymptotic optimality)")
  ax.axhline(level, color="gray", ls=":", lw=1,
             label=rf"$T^*_{{\beta}}(\nu)/T^*(\nu)$, $\beta$={beta}: {level:.3f}")
  ax.set_xscale("log")
  ax.set_xticks([5, 10, 20, 30, 50, 70])
  ax.xaxis.set_major_formatter(plt.ScalarFormatter())
  ax.xaxis.set_minor_formatter(plt.NullFormatter())
  ax.set_xlabel(r"$\log(1/\delta)$")
  ax.set_ylabel(r"$E[\tau] / (T^*(\nu)\log(1/\delta))$")
  ax.set_title(f"{inst['name']}: {inst['family']}, K={len(inst['means'])}", fontsize=9)
  ax.legend(fontsize=7)


def _claim(inst: dict, finals: dict, beta: float, level: float) -> dict:
  """Do the optimal rules end below the level T*_beta / T* that T3C(beta) tends to?

  finals: {rule label: (log(1/delta), ratio, CI low, CI high, trials)} at the
  smallest delta.
  """
  text = "; ".join(f"{r} {y:.3f} [{lo:.3f}, {hi:.3f}] ({n} trials)"
                   for r, (_, y, lo, hi, n) in finals.items())
  log_inv = next(iter(finals.values()))[0]
  optimal = [v for r, v in finals.items() if not r.startswith("t3c")]
  fixed = [v for r, v in finals.items() if r.startswith("t3c")]
  below = all(v[3] < level for v in optimal)  # upper end of the 95% CI
  verdict = (f"consistent: the optimal rules end below the beta = {beta} level "
             f"that T3C({beta}) tends to" if below else
             f"not resolved at this delta: an optimal rule's interval reaches "
             f"the beta = {beta} level")
  return {
      "experiment": "ratio",
      "claim": f"E[tau] / (T* log(1/delta)) -> 1 for TCB and ITCB ({inst['name']})",
      "paper": "(beyond the paper) asymptotic optimality of TCB and ITCB",
      "jbai": (f"at log(1/delta) = {log_inv:.1f}: {text}; T*_0.5/T* = {level:.3f}"
               + (f"; T3C ends at {fixed[0][1]:.3f}" if fixed else "")),
      "verdict": verdict}


EXPERIMENT = Experiment("ratio", "Ratio to the lower bound as delta -> 0 (beyond the paper)",
                        jobs, report)
