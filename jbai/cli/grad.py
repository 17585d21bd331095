"""`jbai grad`: E[tau] and P(error) with their likelihood-ratio gradients in the means.

Each (rule, threshold) is simulated with scores; per delta the record holds the
Monte Carlo means with standard errors and 95% intervals, their gradients in the
means (and in the rule's scored runtime parameters), and, for reference, the
gradient of T*(nu) log(1/delta) from the exact oracle's implicit derivatives.
"""

import sys

from jbai.cli import render
from jbai.cli.plan import plan_command
from jbai.host import io
from jbai.host.summary import Z95


def _ci95(value, se) -> list:
  """[value - Z95 se, value + Z95 se], computed in the dtype of `value` and `se`."""
  return [float(value - Z95 * se), float(value + Z95 * se)]


def grad_records(res, run, family, means, deltas) -> list:
  """One record per delta of a run with scores: E[tau], P(error), their
  likelihood-ratio gradients in the means (and in the rule's scored runtime
  parameters) with standard errors and 95% CIs, and the oracle's gradient of
  T*(nu) log(1/delta)."""
  import jax
  import numpy as np
  from jbai.core.estimate import monte_carlo
  from jbai.oracle.t_star import t_star_log_gradient
  moments = jax.tree.map(np.asarray, monte_carlo(res.tau, res.correct, res.reward_score,
                                                 res.policy_score, False))
  oracle_grad, t_star_log = t_star_log_gradient(family, means, deltas)
  records = []
  for d, delta in enumerate(deltas):
    rec = {"rule": repr(run.rule), "threshold": repr(run.threshold), "delta": delta,
           "trials": int(res.tau.shape[0]), "hit_cap": int(res.hit_cap[:, d].sum()),
           "t_star_log": float(t_star_log[d]),
           "grad_t_star_log": oracle_grad[d].tolist()}
    for label, name in (("tau", "mean_tau"), ("error", "error_rate")):
      value, se, grads, ses = moments[label]
      rec[name], rec[f"{name}_se"] = float(value[d]), float(se[d])
      rec[f"{name}_ci95"] = _ci95(value[d], se[d])
      rec[f"grad_{name}"] = grads["means"][d].tolist()
      rec[f"grad_{name}_se"] = ses["means"][d].tolist()
      rec[f"grad_{name}_ci95"] = [_ci95(g, e) for g, e in
                                  zip(rec[f"grad_{name}"], rec[f"grad_{name}_se"])]
      for param in grads:
        if param != "means":
          rec.setdefault("grad_params", {}).setdefault(param, {}).update(
              {name: float(grads[param][d]), f"{name}_se": float(ses[param][d])})
    records.append(rec)
  return records


def cmd_grad(args) -> int:
  """`jbai grad`: returns 0."""
  import jax
  from jbai.host.simulate import simulate
  plan = plan_command(args)
  show = not args.json and (sys.stderr.isatty() or args.progress)
  records = []
  for run in plan.runs:
    res = simulate(jax.random.key(args.seed), plan.family, plan.means, run.rule,
                   plan.deltas, args.trials, threshold=run.threshold,
                   max_steps=args.max_steps, chunk=args.chunk,
                   progress=io.Progress(run.label, show, live=True), scores=True)
    records += grad_records(res, run, plan.family, plan.means, plan.deltas)
  payload = records[0] if len(records) == 1 else records
  if args.out:
    io.write_json(args.out, payload)
  if args.json:
    render.print_json(payload)
    return 0
  for i, rec in enumerate(records):
    if i:
      print()
    render.print_grad(rec, plan.means)
  return 0
