"""Garivier & Kaufmann (2016), Table 1: mean stopping time and error rate of the
rules of their experiments, beside jbai's TCB and ITCB.

Their Section 6 ("Numerical Experiments"): Bernoulli instances
[0.5, 0.45, 0.43, 0.4] and [0.3, 0.21, 0.2, 0.19, 0.18], delta = 0.1 and 0.01,
N = 3000 trials, the threshold beta(t, delta) = log((log t + 1) / delta) (jbai's
`gk16` threshold) for the Chernoff stop and the same rate in the confidence
bounds of KL-LUCB and KL-Racing. The rules, in their own setting:

  tas-c            C-tracking without the eps-projection, forced exploration when
                   min N <= sqrt(t) - K/2 (`tas_c(forced="sqrt-t-k2",
                   projection="none")`), GLLR stop;
  tas-d            D-tracking with the same forced exploration, GLLR stop;
  kl-lucb          KL-LUCB at rate gk16, its own confidence stop;
  kl-racing        KL-Racing at rate gk16, its own elimination stop;
  chernoff-racing  Chernoff-Racing at rate gk16, its own elimination stop;
  tcb, itcb        jbai's rules, GLLR stop.

A GLLR-stopped rule samples without delta, so one job serves both levels; the
rules with their own stops sample with delta (`jbai.stops.base`): one job per
level. The report writes gk16.csv and gk16.md: per (instance, delta, rule), mean
tau with its normal 95% interval and the error rate (wrong answers and trials at
the cap) with its Wilson 95% interval.
"""

import os

from jbai.host import io
from jbai.reproduce.jobs import Experiment, result_of, rule_label, simulate_job

# (label, rule, rule parameters, GLLR-stopped)
RULES = [
    ("TaS-C", "tas-c", {"forced": "sqrt-t-k2", "projection": "none"}, True),
    ("TaS-D", "tas-d", {"forced": "sqrt-t-k2"}, True),
    ("KL-LUCB", "kl-lucb", {"rate": "gk16"}, False),
    ("KL-Racing", "kl-racing", {"rate": "gk16"}, False),
    ("Chernoff-Racing", "chernoff-racing", {"rate": "gk16"}, False),
    ("TCB", "tcb", {}, True),
    ("ITCB", "itcb", {}, True),
]


def _jobs_of(config: dict, inst: dict, rule: str, params: dict, gllr: bool) -> list:
  """[(delta list, job)]: one job for both levels (GLLR), else one per level."""
  groups = [config["deltas"]] if gllr else [[d] for d in config["deltas"]]
  return [(deltas, simulate_job(inst["family"], inst["means"], rule, params, deltas,
                                config["trials"], "gk16" if gllr else None,
                                config["max_steps"], config["seed"]))
          for deltas in groups]


def plan(config: dict) -> list:
  """[(instance, label, rule, params, deltas, job)] in run order."""
  rules = [r for r in RULES if r[1] in config["rules"]]
  out = []
  for inst in config["instances"]:
    for label, rule, params, gllr in rules:
      for deltas, job in _jobs_of(config, inst, rule, params, gllr):
        out.append((inst, label, rule, params, deltas, job))
  return out


def jobs(config: dict) -> list:
  return [entry[-1] for entry in plan(config)]


def rows(config: dict, records: dict) -> list:
  """One dict per (instance, delta, rule) whose job has run, ordered by instance,
  then delta, then rule."""
  table = []
  for inst, label, rule, params, deltas, job in plan(config):
    res = result_of(records, job)
    if res is None:
      continue
    for s in res["per_delta"]:
      table.append({
          "instance": inst["name"], "means": inst["means"], "delta": s["delta"],
          "rule": label, "setting": rule_label(rule, params),
          "stop": "gllr(gk16)" if job["threshold"] else "own", "trials": res["trials"],
          "mean_tau": s["mean_tau"], "tau_lo": s["tau_ci95"][0],
          "tau_hi": s["tau_ci95"][1], "error_rate": s["error_rate"],
          "error_lo": s["error_ci95"][0], "error_hi": s["error_ci95"][1],
          "wrong": s["wrong"], "hit_cap": s["hit_cap"], "t_star": s["t_star"]})
  order = {inst["name"]: i for i, inst in enumerate(config["instances"])}
  rank = {r[0]: i for i, r in enumerate(RULES)}
  table.sort(key=lambda r: (order[r["instance"]], -r["delta"], rank[r["rule"]]))
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
  header = ["instance", "delta", "rule", "setting", "stop", "trials", "mean_tau", "tau_lo",
            "tau_hi", "error_rate", "error_lo", "error_hi", "wrong", "hit_cap", "t_star"]
  io.write_csv(os.path.join(out, "gk16.csv"), header,
               [[r[h] for h in header] for r in table])
  io.write_text(os.path.join(out, "gk16.md"), markdown(table))
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
