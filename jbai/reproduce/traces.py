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
from typing import Callable, NamedTuple

import numpy as np

from jbai.host.atomic import write_csv
from jbai.reproduce import reference
from jbai.reproduce.experiment import Experiment
from jbai.studies import plots
from jbai.studies.jobs import finished, trace_job


def _plan(config: dict) -> list:
  """[(instance, rule, job)] in run order."""
  return [(inst, rule, trace_job(inst["family"], inst["means"], rule, config["trials"],
                                 config["horizon"], config["points"], config["seed"]))
          for inst in config["instances"] for rule in config["rules"]]


def jobs(config: dict) -> list:
  return [job for *_, job in _plan(config)]


def _runs(config, records, inst) -> list:
  """[(rule, result)] of the instance's jobs that have run."""
  return [(rule, res) for i2, rule, res in finished(records, _plan(config)) if i2 is inst]


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


# --- transport and beta_t: a mean over trials that converges to a reference ----

class _Convergence(NamedTuple):
  """A report of a trace statistic's mean against t, with its reference value."""

  name: str                            # the experiment, and the stem of its files
  stat: str                            # the statistic of the traces: "gamma" or "share"
  reference: Callable[[dict], float]   # instance -> the value the mean tends to
  ref_column: str                      # the CSV column of the reference
  relative_gap: bool                   # a last CSV column (mean - reference) / reference
  claim: str                           # what the paper says
  what: str                            # the reference in the claim ("{ref}" formatted)
  ylabel: str
  ref_label: str                       # the legend of the reference line
  ymax: Callable[[float], float]       # reference -> upper end of the y axis
  suptitle: str                        # the figure's title ("{trials}" formatted)


def _gamma_star(inst: dict) -> float:
  return reference.optimal(inst["family"], inst["means"])[1]


def _w_top(inst: dict) -> float:
  w, _ = reference.optimal(inst["family"], inst["means"])
  return float(w[int(np.argmax(inst["means"]))])


TRANSPORT = _Convergence(
    "transport", "gamma", _gamma_star, "gamma_star", True,
    "Gamma_t(T_t/t) converges to Gamma(nu)", "relative gap to Gamma(nu) = {ref:.4g}",
    r"$\Gamma_t(T_t/t)$", r"$\Gamma(\nu)$", lambda ref: 1.6 * ref,
    "Transport cost estimates, {trials} trials")

BETA_T = _Convergence(
    "beta_t", "share", _w_top, "w_top", False,
    "beta_t = T_t(a*)/t converges to w_a*(nu)", "relative gap to w_a* = {ref:.4f}",
    r"$\beta_t = T_t(a^*)/t$", r"$w_{a^*}(\nu)$", lambda ref: 1,
    "Best arm's share, {trials} trials")


def _report_convergence(spec: _Convergence, config: dict, records: dict, out: str) -> list:
  """<name>.csv (per instance, rule and recording time: the mean, its standard
  error and quantiles over trials), <name>.png, and a claim per instance."""
  rows, claims = [], []
  plt = plots.pyplot()
  fig, axes = plots.grid(plt, len(config["instances"])) if plt else (None, None)
  for j, inst in enumerate(config["instances"]):
    ref = spec.reference(inst)
    parts = []
    for rule, res in _runs(config, records, inst):
      x = res[spec.stat]
      for k, t in enumerate(res["times"]):
        rows.append([inst["name"], rule, t, x["mean"][k], _se(x, k), x["q10"][k],
                     x["q50"][k], x["q90"][k], ref]
                    + ([(x["mean"][k] - ref) / ref] if spec.relative_gap else []))
      parts.append((rule, res["times"], (np.asarray(x["mean"]) - ref) / ref))
      if plt:
        c = plots.COLORS.get(rule)
        axes[j].plot(res["times"], x["mean"], color=c, label=f"{plots.name(rule)} (mean)")
        axes[j].fill_between(res["times"], x["q10"], x["q90"], color=c, alpha=0.15,
                             label=f"{plots.name(rule)} (10%-90%)")
    if plt:
      ax = axes[j]
      ax.axhline(ref, color="k", ls="--", lw=1, label=spec.ref_label)
      ax.set_xscale("log")
      ax.set_xlabel("t")
      ax.set_ylabel(spec.ylabel)
      ax.set_title(_title(inst), fontsize=9)
      ax.set_ylim(0, spec.ymax(ref))
      ax.legend(fontsize=7)
    if parts:
      claims.append(_convergence_claim(spec.name, inst, spec.claim, parts,
                                       spec.what.format(ref=ref), 0.10))
  stat_columns = [f"{spec.stat}_{c}" for c in ("mean", "se", "q10", "q50", "q90")]
  write_csv(os.path.join(out, f"{spec.name}.csv"),
            ["instance", "rule", "t"] + stat_columns + [spec.ref_column]
            + (["relative_gap"] if spec.relative_gap else []), rows)
  if plt:
    fig.suptitle(spec.suptitle.format(trials=config["trials"]), fontsize=10)
    plots.save(plt, fig, os.path.join(out, f"{spec.name}.png"))
  return claims


def report_transport(config: dict, records: dict, out: str) -> list:
  """Gamma_t(T_t/t) against t, reference Gamma(nu) (paper Figure tc)."""
  return _report_convergence(TRANSPORT, config, records, out)


def report_beta_t(config: dict, records: dict, out: str) -> list:
  """T_t(a*)/t against t, reference w_a*(nu) (paper Figure beta)."""
  return _report_convergence(BETA_T, config, records, out)


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


# --- oversampled -----------------------------------------------------------------

def report_oversampled(config: dict, records: dict, out: str) -> list:
  """oversampled.csv (per instance, rule and recording time: the relative
  deviation of Gamma_t(T_t/t) from Gamma(nu)), oversampled.png, and a claim
  per instance (paper Figure bestarm)."""
  rows, claims = [], []
  plt = plots.pyplot()
  fig, axes = plots.grid(plt, len(config["instances"])) if plt else (None, None)
  horizon = config["horizon"]
  for j, inst in enumerate(config["instances"]):
    gam = _gamma_star(inst)
    dev = {}
    for rule, res in _runs(config, records, inst):
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
      claims.append(_divergence_claim(inst, gam, dev))
  write_csv(os.path.join(out, "oversampled.csv"),
            ["instance", "rule", "t", "gamma_mean", "gamma_star", "relative_deviation"],
            rows)
  if plt:
    fig.suptitle("Sampling the over-sampled arm: deviation of the transport cost",
                 fontsize=10)
    plots.save(plt, fig, os.path.join(out, "oversampled.png"))
  return claims


def _divergence_claim(inst: dict, gam: float, dev: dict) -> dict:
  """Does always-top move away from Gamma(nu), further than the other rules?

  dev: {rule: ((deviation, t) at horizon / 10, (deviation, t) at the horizon)}.
  """
  (e, te), (l, tl) = dev["always-top"]
  text = f"always-top {100 * e:+.1f}% at t={te} -> {100 * l:+.1f}% at t={tl}"
  others = [(r, d) for r, d in dev.items() if r != "always-top"]
  for r, ((e2, _), (l2, _)) in others:
    text += f"; {plots.name(r)} {100 * e2:+.1f}% -> {100 * l2:+.1f}%"
  diverges = abs(l) > abs(e) and abs(l) > 0.2
  beaten = all(abs(l2) < abs(l) for _, (_, (l2, _)) in others)
  verdict = ("agrees: always-top moves away from Gamma(nu)" if diverges and beaten
             else "disagrees: always-top does not move away from Gamma(nu)")
  return {"experiment": "oversampled",
          "claim": f"sampling over-sampled arms: Gamma_t diverges ({inst['name']})",
          "paper": "Gamma_t(T_t/t) diverges from Gamma(nu) under always-top",
          "jbai": f"relative deviation from Gamma(nu) = {gam:.4g}: {text}",
          "verdict": verdict}


EXPERIMENTS = [
    Experiment("transport", "Transport cost estimates Gamma_t(T_t/t)", jobs,
               report_transport),
    Experiment("beta_t", "Estimates of beta: the best arm's share", jobs, report_beta_t),
    Experiment("oversampled", "Sampling over-sampled arms (ablation always-top)", jobs,
               report_oversampled),
]
