"""Convergence without stopping: Gamma_t(T_t/t), the best arm's share, and the ablation.

Three items of the paper share one kind of run, `jbai.trace` (no stopping rule,
log-spaced recording times), so they share jobs: a trace of TCB on nu_2 serves
`transport`, `beta_t` and `oversampled` alike and runs once.

  * transport: Gamma_t(T_t/t) against t, reference Gamma(nu) (paper Figure tc);
  * beta_t: T_t(a*)/t against t, reference w_{a*}(nu) (paper Figure beta);
  * oversampled: (Gamma_t(T_t/t) - Gamma(nu)) / Gamma(nu) for `always-top`, the
    paper's ablation that always pulls the empirical top arm after forced
    exploration, next to TCB (paper Figure bestarm).
"""

import os

import numpy as np

from jbai.reproduce import plots, reference
from jbai.reproduce.runner import result_of, trace_job, write_csv


def jobs(config: dict) -> list:
  return [trace_job(inst["family"], inst["means"], rule, config["trials"],
                    config["horizon"], config["points"], config["seed"])
          for inst in config["instances"] for rule in config["rules"]]


def _runs(config, records):
  """[(instance, rule, result)] for the jobs that have run."""
  out = []
  for inst in config["instances"]:
    for rule in config["rules"]:
      job = trace_job(inst["family"], inst["means"], rule, config["trials"],
                      config["horizon"], config["points"], config["seed"])
      res = result_of(records, job)
      if res is not None:
        out.append((inst, rule, res))
  return out


def _at(times, values, t):
  """The value recorded at the largest time <= t."""
  i = int(np.searchsorted(np.asarray(times), t, side="right")) - 1
  return float(values[max(i, 0)]), int(times[max(i, 0)])


def _se(stat: dict, k: int) -> float:
  """Standard error of the mean at recording time k (nan for a single trial)."""
  return float("nan") if stat["se"] is None else stat["se"][k]


def _title(inst):
  means = ", ".join(f"{m:g}" for m in inst["means"])
  return f"{inst['name']}: {inst['family']} [{means}]"


# --- transport -------------------------------------------------------------------

def report_transport(config: dict, records: dict, out: str) -> list:
  runs = _runs(config, records)
  rows, claims = [], []
  plt = plots.pyplot()
  fig, axes = plots.grid(plt, len(config["instances"])) if plt else (None, None)
  for j, inst in enumerate(config["instances"]):
    _, gam = reference.optimal(inst["family"], inst["means"])
    parts = []
    for (i2, rule, res) in runs:
      if i2 is not inst:
        continue
      g = res["gamma"]
      for k, t in enumerate(res["times"]):
        rows.append([inst["name"], rule, t, g["mean"][k], _se(g, k),
                     g["q10"][k], g["q50"][k], g["q90"][k], gam,
                     (g["mean"][k] - gam) / gam])
      parts.append((rule, res["times"], (np.asarray(g["mean"]) - gam) / gam))
      if plt:
        ax = axes[j]
        c = plots.COLORS.get(rule)
        ax.plot(res["times"], g["mean"], color=c, label=f"{plots.name(rule)} (mean)")
        ax.fill_between(res["times"], g["q10"], g["q90"], color=c, alpha=0.15,
                        label=f"{plots.name(rule)} (10%-90%)")
    if plt:
      ax = axes[j]
      ax.axhline(gam, color="k", ls="--", lw=1, label=r"$\Gamma(\nu)$")
      ax.set_xscale("log")
      ax.set_xlabel("t")
      ax.set_ylabel(r"$\Gamma_t(T_t/t)$")
      ax.set_title(_title(inst), fontsize=9)
      ax.set_ylim(0, 1.6 * gam)
      ax.legend(fontsize=7)
    if parts:
      claims.append(_convergence_claim(
          "transport", inst, r"Gamma_t(T_t/t) converges to Gamma(nu)", parts,
          f"relative gap to Gamma(nu) = {gam:.4g}", 0.10))
  write_csv(os.path.join(out, "transport.csv"),
            ["instance", "rule", "t", "gamma_mean", "gamma_se", "gamma_q10",
             "gamma_q50", "gamma_q90", "gamma_star", "relative_gap"], rows)
  if plt:
    fig.suptitle(f"Transport cost estimates, {config['trials']} trials", fontsize=10)
    plots.save(plt, fig, os.path.join(out, "transport.png"))
  return claims


def _convergence_claim(name, inst, claim, parts, what, tol):
  """Checks "the mean converges to the reference" on the last decade of times.

  parts: [(rule, times, relative gap of the mean to the reference)]. Agrees when
  every rule ends within `tol`; "partly" when a rule ends further off but its gap
  is shrinking (smaller at the horizon than at its peak over the last decade).
  """
  texts, status = [], []
  for rule, times, rel in parts:
    times = np.asarray(times)
    last = times >= times[-1] / 10
    peak = int(np.argmax(np.where(last, np.abs(rel), -1.0)))
    texts.append(f"{plots.name(rule)} {100 * rel[peak]:+.1f}% at t={times[peak]} -> "
                 f"{100 * rel[-1]:+.1f}% at t={times[-1]}")
    if abs(rel[-1]) <= tol:
      status.append("close")
    elif abs(rel[-1]) < abs(rel[peak]):
      status.append("shrinking")
    else:
      status.append("not shrinking")
  if all(s == "close" for s in status):
    verdict = f"agrees: within {100 * tol:.0f}% at t={parts[0][1][-1]}"
  elif "not shrinking" not in status:
    verdict = (f"partly: converging, but more than {100 * tol:.0f}% off at "
               f"t={parts[0][1][-1]}")
  else:
    verdict = "disagrees: the gap does not shrink over the last decade of t"
  return {"experiment": name, "claim": f"{claim} ({inst['name']})", "paper": claim,
          "jbai": f"{what} (largest gap over the last decade -> gap at the horizon): "
                  + "; ".join(texts),
          "verdict": verdict}


# --- beta_t ----------------------------------------------------------------------

def report_beta_t(config: dict, records: dict, out: str) -> list:
  runs = _runs(config, records)
  rows, claims = [], []
  plt = plots.pyplot()
  fig, axes = plots.grid(plt, len(config["instances"])) if plt else (None, None)
  for j, inst in enumerate(config["instances"]):
    w, _ = reference.optimal(inst["family"], inst["means"])
    w_top = float(w[int(np.argmax(inst["means"]))])
    parts = []
    for (i2, rule, res) in runs:
      if i2 is not inst:
        continue
      s = res["share"]
      for k, t in enumerate(res["times"]):
        rows.append([inst["name"], rule, t, s["mean"][k], _se(s, k),
                     s["q10"][k], s["q50"][k], s["q90"][k], w_top])
      parts.append((rule, res["times"], (np.asarray(s["mean"]) - w_top) / w_top))
      if plt:
        ax = axes[j]
        c = plots.COLORS.get(rule)
        ax.plot(res["times"], s["mean"], color=c, label=f"{plots.name(rule)} (mean)")
        ax.fill_between(res["times"], s["q10"], s["q90"], color=c, alpha=0.15,
                        label=f"{plots.name(rule)} (10%-90%)")
    if plt:
      ax = axes[j]
      ax.axhline(w_top, color="k", ls="--", lw=1, label=r"$w_{a^*}(\nu)$")
      ax.set_xscale("log")
      ax.set_xlabel("t")
      ax.set_ylabel(r"$\beta_t = T_t(a^*)/t$")
      ax.set_title(_title(inst), fontsize=9)
      ax.set_ylim(0, 1)
      ax.legend(fontsize=7)
    if parts:
      claims.append(_convergence_claim(
          "beta_t", inst, "beta_t = T_t(a*)/t converges to w_a*(nu)", parts,
          f"relative gap to w_a* = {w_top:.4f}", 0.10))
  write_csv(os.path.join(out, "beta_t.csv"),
            ["instance", "rule", "t", "share_mean", "share_se", "share_q10",
             "share_q50", "share_q90", "w_top"], rows)
  if plt:
    fig.suptitle(f"Best arm's share, {config['trials']} trials", fontsize=10)
    plots.save(plt, fig, os.path.join(out, "beta_t.png"))
  return claims


# --- oversampled -----------------------------------------------------------------

def report_oversampled(config: dict, records: dict, out: str) -> list:
  runs = _runs(config, records)
  rows, claims = [], []
  plt = plots.pyplot()
  fig, axes = plots.grid(plt, len(config["instances"])) if plt else (None, None)
  horizon = config["horizon"]
  for j, inst in enumerate(config["instances"]):
    _, gam = reference.optimal(inst["family"], inst["means"])
    dev = {}
    for (i2, rule, res) in runs:
      if i2 is not inst:
        continue
      g = np.asarray(res["gamma"]["mean"])
      rel = (g - gam) / gam
      for k, t in enumerate(res["times"]):
        rows.append([inst["name"], rule, t, g[k], gam, rel[k]])
      dev[rule] = (_at(res["times"], rel, horizon / 10), _at(res["times"], rel, horizon))
      if plt:
        axes[j].plot(res["times"], rel, color=plots.COLORS.get(rule),
                     label=plots.name(rule))
    if plt:
      ax = axes[j]
      ax.axhline(0.0, color="k", ls="--", lw=1)
      ax.set_xscale("log")
      ax.set_xlabel("t")
      ax.set_ylabel(r"$(\Gamma_t(T_t/t) - \Gamma(\nu)) / \Gamma(\nu)$")
      ax.set_title(_title(inst), fontsize=9)
      ax.legend(fontsize=7)
    if "always-top" in dev:
      (e, te), (l, tl) = dev["always-top"]
      text = f"always-top {100 * e:+.1f}% at t={te} -> {100 * l:+.1f}% at t={tl}"
      others = [(r, d) for r, d in dev.items() if r != "always-top"]
      for r, ((e2, _), (l2, _)) in others:
        text += f"; {plots.name(r)} {100 * e2:+.1f}% -> {100 * l2:+.1f}%"
      diverges = abs(l) > abs(e) and abs(l) > 0.2
      beaten = all(abs(l2) < abs(l) for _, (_, (l2, _)) in others)
      verdict = ("agrees: always-top moves away from Gamma(nu)" if diverges and beaten
                 else "disagrees: always-top does not move away from Gamma(nu)")
      claims.append({"experiment": "oversampled",
                     "claim": f"sampling over-sampled arms: Gamma_t diverges ({inst['name']})",
                     "paper": "Gamma_t(T_t/t) diverges from Gamma(nu) under always-top",
                     "jbai": f"relative deviation from Gamma(nu) = {gam:.4g}: {text}",
                     "verdict": verdict})
  write_csv(os.path.join(out, "oversampled.csv"),
            ["instance", "rule", "t", "gamma_mean", "gamma_star", "relative_deviation"],
            rows)
  if plt:
    fig.suptitle("Sampling the over-sampled arm: deviation of the transport cost",
                 fontsize=10)
    plots.save(plt, fig, os.path.join(out, "oversampled.png"))
  return claims
