"""Garivier & Kaufmann (2016), Table 1: mean stopping time and error rate of the
rules of their experiments, beside jbai's TCB and ITCB.

The item is the study shipped as jbai/studies/shipped/gk16.toml (`jbai study gk16`),
their Section 6: Bernoulli instances [0.5, 0.45, 0.43, 0.4] and
[0.3, 0.21, 0.2, 0.19, 0.18], delta = 0.1 and 0.01, N = 3000 trials, the threshold
log((log t + 1) / delta) for the Chernoff stop and the same rate in the confidence
bounds of KL-LUCB, KL-Racing and Chernoff-Racing, Track-and-Stop C and D in their
code's setting. Its config is that spec (`specs.GK16`), its jobs the study's
(`jbai.studies.plan`): a GLLR-stopped rule samples without delta, so one job
serves both levels; a rule with its own stop samples with delta, one job per level.

The report writes gk16.csv and gk16.md from the study's cells: per (instance, delta,
rule), mean tau with its normal 95% interval, the error rate (wrong answers and
trials at the cap) with its Wilson 95% interval, and T*(nu) as a `jbai.simulate`
summary gives it (the oracle in the simulation's float dtype).
"""

import os

from jbai.host.atomic import write_csv, write_text
from jbai.reproduce.experiment import Experiment
from jbai.studies import plan as plan_lib, spec as spec_lib, tables
from jbai.studies.jobs import rule_label

# The rules as their paper names them.
LABELS = {"tas-c": "TaS-C", "tas-d": "TaS-D", "kl-lucb": "KL-LUCB", "kl-racing": "KL-Racing",
          "chernoff-racing": "Chernoff-Racing", "tcb": "TCB", "itcb": "ITCB"}
# gk16.csv's numbers: {column: the study's cells.csv column}.
NUMBERS = {"trials": "trials", "mean_tau": "mean_tau", "tau_lo": "tau_ci_low",
           "tau_hi": "tau_ci_high", "error_rate": "error_rate", "error_lo": "error_ci_low",
           "error_hi": "error_ci_high", "wrong": "wrong", "hit_cap": "at_cap",
           "t_star": "t_star"}
COLUMNS = ["instance", "delta", "rule", "setting", "stop", *NUMBERS]


def jobs(config: dict) -> list:
  return [job for *_, job in plan_lib.plan(spec_lib.resolve(config))]


def t_stars(resolved: dict) -> list:
  """T*(nu) = 1 / Gamma(nu) of each instance, the exact oracle in the study's float
  dtype (`jbai.oracle.optimal`, as in a `jbai.simulate` summary)."""
  import jax
  from jbai.families import get
  from jbai.oracle import optimal
  with jax.enable_x64(resolved["study"]["dtype"] == "float64"):
    return [1.0 / optimal(get(i["family"], **i["family_params"]), i["means"])[1]
            for i in resolved["instances"]]


def rows(config: dict, records: dict) -> list:
  """One dict per (instance, delta, rule) whose job has run, ordered by instance,
  then delta (largest first), then rule (the spec's order)."""
  resolved = spec_lib.resolve(config)
  means = {i["name"]: i["means"] for i in resolved["instances"]}
  settings = {(s["rule"], tables.params_text(s["params"])): rule_label(s["rule"], s["params"])
              for s in resolved["settings"]}
  cells, _ = tables.tables(resolved, records, t_stars(resolved))
  table = []
  for c in (dict(zip(tables.CELL_COLUMNS, cell)) for cell in cells):
    table.append({"instance": c["instance"], "means": means[c["instance"]],
                  "delta": c["delta"], "rule": LABELS.get(c["rule"], c["rule"]),
                  "setting": settings[c["rule"], c["params"]],
                  "stop": "own" if c["threshold"] == "own" else f"gllr({c['threshold']})",
                  **{k: c[v] for k, v in NUMBERS.items()}})
  order = list(means)
  table.sort(key=lambda r: (order.index(r["instance"]), -r["delta"]))
  return table


def markdown(table: list) -> str:
  """The table as markdown: one block per (instance, delta)."""
  lines = ["| instance | delta | rule | stop | N | mean tau (95% CI) | error rate "
           "(Wilson 95% CI) | at cap |", "|---|---|---|---|---|---|---|---|"]
  for r in table:
    means = "[" + ", ".join(f"{m:g}" for m in r["means"]) + "]"
    lines.append(
        f"| {means} | {r['delta']:g} | {r['rule']} | {r['stop']} | {r['trials']} | "
        f"{r['mean_tau']:.0f} ({r['tau_lo']:.0f}, {r['tau_hi']:.0f}) | "
        f"{r['error_rate']:.4f} ({r['error_lo']:.4f}, {r['error_hi']:.4f}) | "
        f"{r['hit_cap']} |")
  return "\n".join(lines) + "\n"


def report(config: dict, records: dict, out: str) -> list:
  table = rows(config, records)
  write_csv(os.path.join(out, "gk16.csv"), COLUMNS, [[r[h] for h in COLUMNS] for r in table])
  write_text(os.path.join(out, "gk16.md"), markdown(table))
  claims = []
  for r in table:
    ok = r["error_lo"] <= r["delta"]
    claims.append({
        "experiment": "gk16",
        "claim": f"{r['rule']} on {r['instance']}, delta = {r['delta']:g}: error <= delta",
        "paper": "delta-PAC (published figures: see docs/reproduction.md)",
        "jbai": (f"tau {r['mean_tau']:.0f} ({r['tau_lo']:.0f}, {r['tau_hi']:.0f}); "
                 f"error {r['error_rate']:.4f} ({r['error_lo']:.4f}, {r['error_hi']:.4f})"),
        "verdict": ("consistent (Wilson lower bound <= delta)" if ok
                    else "error rate above delta (Wilson lower bound > delta)")})
  return claims


EXPERIMENT = Experiment("gk16", "Garivier & Kaufmann 2016, Table 1", jobs, report)
