"""`jbai grad`: E[tau] and P(error) with their gradients in the means, beta or eps.

Each (rule, threshold) is simulated with scores; per delta the record holds the
Monte Carlo means with standard errors and 95% intervals, their gradients in the
parameter of --wrt (one entry per arm for "means", one for "beta" or "eps") by the
estimator of --estimator ("causal" or "score": the likelihood-ratio estimators of
`jbai.core.estimators.monte_carlo`; "fd": central finite differences with common
random numbers, `jbai.finite_difference`, the only one for eps, bias O(h^2);
"richardson": Richardson's extrapolation of two of them, at h and 2h, bias O(h^4);
"auto", the default: causal for the means, richardson for beta and fd for eps,
docs/performance.md), the
simulated steps they cost, and, for reference, the gradient in the means of
T*(nu) log(1/delta) from the exact oracle's implicit derivatives.
"""

import sys

from jbai.cli import render
from jbai.cli.plan import plan_command
from jbai.host.atomic import write_json
from jbai.host.paths import check_output
from jbai.host.progress import Progress
from jbai.host.summary import Z95


def _ci95(value, se) -> list:
  """[value - Z95 se, value + Z95 se], computed in the dtype of `value` and `se`."""
  return [float(value - Z95 * se), float(value + Z95 * se)]


WRT = ("means", "beta", "eps")
ESTIMATORS = ("auto", "causal", "score", "fd", "richardson")
DIFFERENCES = ("fd", "richardson")  # the estimators that run `jbai.finite_difference`
# --h of fd when not given: in beta a wider step (the coin flips that a step of h
# changes are few, so the difference's variance grows as 1/h), elsewhere a narrow one.
DEFAULT_H = {"means": 0.02, "beta": 0.1, "eps": 0.02}


def choose(wrt: str, estimator: str, h=None) -> tuple:
  """(estimator, h) that `jbai grad` runs: "auto" is causal for the means, the
  CRN finite difference (bias O(h^2)) for eps, and in beta Richardson's
  extrapolation of two (bias O(h^4)): at h = 0.1 the plain difference's bias, about
  4% of the gradient, outgrows its standard error beyond a few thousand trials,
  and the extrapolation keeps a tenth of the likelihood-ratio estimator's variance
  at equal steps (docs/performance.md)."""
  if estimator == "auto":
    estimator = {"means": "causal", "beta": "richardson", "eps": "fd"}[wrt]
  return estimator, (DEFAULT_H[wrt] if h is None else h)


def add_grad_args(p):
  """--wrt, --estimator, --h."""
  p.add_argument("--wrt", default="means", choices=WRT,
                 help="the parameter to differentiate in (default: means)")
  p.add_argument("--estimator", default="auto", choices=ESTIMATORS,
                 help="causal or score: likelihood-ratio estimators; fd: central finite "
                 "differences with common random numbers (needed for eps), bias O(h^2); "
                 "richardson: fd at h and 2h (on a quarter of the trials) extrapolated, bias "
                 "O(h^4); auto (default): "
                 "causal for the means, richardson for beta, fd for eps")
  p.add_argument("--h", type=float, default=None,
                 help="half-step of fd and richardson (default 0.1 for beta, 0.02 for the "
                 "means and eps)")


def _as_rows(g, wrt: str, d: int) -> list:
  """One entry per parameter: [K] for the means, [1] for beta or eps."""
  import numpy as np
  g = np.asarray(g)
  return (g[d] if wrt == "means" else np.atleast_1d(g[d])).tolist()


STOPPED_QUANTITIES = (("tau", "mean_tau"), ("error", "error_rate"))  # label, Difference field


def _differences(key, rule, family, means, trials, wrt, h, extrapolate=False,
                 quantities=STOPPED_QUANTITIES, **run) -> tuple:
  """({label: (grads, ses)} for each (label, field) of `quantities`, simulated
  steps) of central finite differences with common random numbers in each
  parameter of `wrt` (Richardson's extrapolation of two with `extrapolate`), the
  run's other arguments (delta, threshold, max_steps, or budget and checkpoints)
  in `run`."""
  import numpy as np
  from jbai.core.finite_differences import finite_difference
  points = range(len(means)) if wrt == "means" else [wrt]
  out = {label: ([], []) for label, _ in quantities}
  steps = 0
  for p in points:
    fd = finite_difference(key, family, np.asarray(means), rule, n_trials=trials, wrt=p, h=h,
                           extrapolate=extrapolate, **run)
    for label, field in quantities:
      out[label][0].append(np.asarray(getattr(fd, field)))
      out[label][1].append(np.asarray(getattr(fd, field + "_se")))
    steps += int(fd.simulated_steps)
  stack = lambda xs: np.stack(xs, axis=-1) if wrt == "means" else xs[0]  # [D, K] or [D]
  return {k: (stack(g), stack(se)) for k, (g, se) in out.items()}, steps


def _check_scored(wrt: str, rule, scored) -> None:
  """Refuses a likelihood-ratio gradient in a parameter the rule has no score in."""
  if wrt != "means" and wrt not in scored:
    raise ValueError(f"--wrt {wrt}: {rule!r} has no likelihood-ratio score in {wrt} "
                     "(a deterministic parameter): use --estimator fd")


def grad_records(res, run, family, means, deltas, wrt: str = "means",
                 estimator: str = "causal", differences=None, fd_steps: int = 0) -> list:
  """One record per delta of a run with scores: E[tau], P(error), their gradients
  in `wrt` (one entry per parameter) by `estimator` with standard errors and 95%
  CIs, the simulated steps, and the oracle's gradient of T*(nu) log(1/delta).
  With a likelihood-ratio estimator and wrt="means", "grad_params" also holds the
  gradients in the rule's scored runtime parameters. `differences` and
  `fd_steps` are `_differences`'s, for estimator "fd" or "richardson"."""
  import jax
  import numpy as np
  from jbai.core.estimators import monte_carlo
  from jbai.oracle.t_star import t_star_log_gradient
  if estimator in DIFFERENCES:
    moments = jax.tree.map(np.asarray, monte_carlo(res, False, estimator="score"))
    grads = differences
  else:
    moments = jax.tree.map(np.asarray, monte_carlo(res, False, estimator=estimator))
    _check_scored(wrt, run.rule, moments["tau"][2])
    grads = {label: (m[2][wrt], m[3][wrt]) for label, m in moments.items()}
  asked = getattr(run.threshold, "problem", None)
  oracle_grad, t_star_log = t_star_log_gradient(family, means, deltas, asked)
  steps = int(np.sum(res.steps)) + int(fd_steps)
  records = []
  for d, delta in enumerate(deltas):
    rec = {"rule": repr(run.rule), "threshold": repr(run.threshold), "delta": delta,
           **({} if asked is None else {"question": repr(asked)}),
           "trials": int(res.tau.shape[0]), "hit_cap": int(res.hit_cap[:, d].sum()),
           "wrt": wrt, "estimator": estimator, "simulated_steps": steps,
           "t_star_log": float(t_star_log[d]),
           "grad_t_star_log": oracle_grad[d].tolist()}
    for label, name in (("tau", "mean_tau"), ("error", "error_rate")):
      value, se, lr_grads, lr_ses = moments[label]
      rec[name], rec[f"{name}_se"] = float(value[d]), float(se[d])
      rec[f"{name}_ci95"] = _ci95(value[d], se[d])
      rec[f"grad_{name}"] = _as_rows(grads[label][0], wrt, d)
      rec[f"grad_{name}_se"] = _as_rows(grads[label][1], wrt, d)
      rec[f"grad_{name}_ci95"] = [_ci95(g, e) for g, e in
                                  zip(rec[f"grad_{name}"], rec[f"grad_{name}_se"])]
      if estimator not in DIFFERENCES and wrt == "means":
        for param in lr_grads:
          if param != "means":
            rec.setdefault("grad_params", {}).setdefault(param, {}).update(
                {name: float(lr_grads[param][d]), f"{name}_se": float(lr_ses[param][d])})
    records.append(rec)
  return records


def _print_param_grad(rec: dict) -> None:
  """The text report of one record of `jbai grad --wrt beta|eps`."""
  from jbai.host.summary import Z95
  print(f"rule {rec['rule']}, threshold {rec['threshold']}, delta {rec['delta']:g}, "
        f"{rec['trials']} trials, {rec['hit_cap']} at the cap, {rec['simulated_steps']} "
        f"simulated steps; +- is a 95% CI")
  print(f"  E[tau]    {rec['mean_tau']:.6g} +- {Z95 * rec['mean_tau_se']:.3g}")
  print(f"  P(error)  {rec['error_rate']:.4g} +- {Z95 * rec['error_rate_se']:.2g}")
  how = rec["estimator"] + (f", CRN, h = {rec['h']:g}" if "h" in rec else "")
  print(f"  d/d{rec['wrt']} ({how}): E[tau] {rec['grad_mean_tau'][0]:.5g} +- "
        f"{Z95 * rec['grad_mean_tau_se'][0]:.2g}, P(error) {rec['grad_error_rate'][0]:.4g} "
        f"+- {Z95 * rec['grad_error_rate_se'][0]:.2g}")


def cmd_grad(args) -> int:
  """`jbai grad`: returns 0."""
  import jax
  from jbai.host.simulate import simulate
  linear = any(getattr(args, k, None) is not None for k in ("arms", "theta", "ridge"))
  if linear and getattr(args, "budget", None) is not None:
    raise ValueError("jbai grad --budget does not take the linear model (--arms) yet; "
                     "run it at a fixed confidence")
  if args.out:
    check_output(args.out, "--out")  # before anything runs: a bad --out loses no work
  wrt = getattr(args, "wrt", "means")
  estimator, h = choose(wrt, getattr(args, "estimator", "auto"), getattr(args, "h", None))
  if wrt == "eps" and estimator not in DIFFERENCES:
    raise ValueError("--wrt eps: TCB and ITCB choose deterministically in eps, so it has "
                     "no likelihood-ratio gradient: use --estimator fd or richardson")
  if getattr(args, "budget", None) is not None:
    records = budget_records(args, wrt, estimator, h)
    return _finish(args, records, records[0]["means"])
  plan = plan_command(args)
  show = not args.json and (sys.stderr.isatty() or args.progress)
  # One reward per step (scores): the default cap, not a block rule's own.
  from jbai.core.inputs import DEFAULT_MAX_STEPS
  max_steps = DEFAULT_MAX_STEPS if args.max_steps is None else args.max_steps
  records = []
  for run in plan.runs:
    res = simulate(jax.random.key(args.seed), plan.family, plan.means, run.rule,
                   plan.deltas, args.trials, threshold=run.threshold,
                   max_steps=max_steps, chunk=args.chunk,
                   progress=Progress(run.label, show, live=True), scores=True)
    differences, fd_steps = None, 0
    if estimator in DIFFERENCES:
      # A key apart from the run's, so that the values and the differences are independent.
      differences, fd_steps = _differences(
          jax.random.fold_in(jax.random.key(args.seed), 1), run.rule, plan.family, plan.means,
          args.trials, wrt, h, estimator == "richardson", delta=list(plan.deltas),
          threshold=run.threshold, max_steps=max_steps)
    new = grad_records(res, run, plan.family, plan.means, plan.deltas, wrt, estimator,
                       differences, fd_steps)
    if estimator in DIFFERENCES:
      for rec in new:
        rec["h"] = h
    if linear and wrt == "means":
      for rec in new:
        _in_theta(rec, plan.family)
    records += new
  return _finish(args, records, plan.means)


THETA_GRADS = ("grad_mean_tau", "grad_error_rate", "grad_t_star_log")


def _in_theta(rec: dict, family) -> None:
  """Adds to a record of the linear model the gradients in theta of E[tau],
  P(error) and T* log(1/delta): X^T times those in the means (the means are
  X theta, and the law of a run depends on theta through them only). Their
  standard errors would need the estimates' covariance across arms: not given."""
  import numpy as np
  from jbai.linear import spec_of
  x = spec_of(family).features
  for key in THETA_GRADS:
    rec[key + "_theta"] = (x.T @ np.asarray(rec[key], float)).tolist()


def _finish(args, records: list, means) -> int:
  """Writes (--out) and prints the records of `jbai grad`: returns 0."""
  payload = records[0] if len(records) == 1 else records
  if args.out:
    write_json(args.out, payload)
  if args.json:
    render.print_json(payload)
    return 0
  for i, rec in enumerate(records):
    if i:
      print()
    if "budget" in rec:
      _print_budget_grad(rec)
    elif rec["wrt"] == "means":
      render.print_grad(rec, means)
      for key in THETA_GRADS:
        if key + "_theta" in rec:
          print(f"  d{key[5:]}/dtheta  [{', '.join(f'{v:.5g}' for v in rec[key + '_theta'])}]")
    else:
      _print_param_grad(rec)
  return 0


BUDGET_QUANTITIES = (("error_rate", "error_rate"), ("simple_regret", "regret"))  # record, Estimate


def budget_records(args, wrt: str, estimator: str, h: float) -> list:
  """`jbai grad --budget`: one record per rule and budget of P(error) and the
  simple regret of the rule's recommendation after T rewards (`jbai.estimate`'s
  run to a budget), with their gradients in `wrt` by `estimator`. An anytime rule
  runs once to the largest budget, recording every budget; a rule whose sampling
  depends on the budget runs once per budget."""
  import jax
  import numpy as np
  from jbai.cli.budget import check_options, plan_budget
  from jbai.core.estimate import estimate
  check_options(args)
  family, means, runs, problem = plan_budget(args)
  key = jax.random.key(args.seed)
  records = []
  for run in runs:
    at = dict(budget=run.budget, checkpoints=run.times, problem=problem)
    est = jax.tree.map(np.asarray, estimate(
        key, family, np.asarray(means), run.rule, None, args.trials, **at,
        estimator="score" if estimator in DIFFERENCES else estimator))
    steps = int(np.sum(est.trials.steps))
    if estimator in DIFFERENCES:
      grads, fd_steps = _differences(
          jax.random.fold_in(key, 1), run.rule, family, means, args.trials, wrt, h,
          estimator == "richardson", BUDGET_QUANTITIES, delta=None, **at)
      steps += fd_steps
    else:
      _check_scored(wrt, run.rule, est.grad_error_rate)
      grads = {name: (getattr(est, "grad_" + field)[wrt], getattr(est, "grad_" + field + "_se")[wrt])
               for name, field in BUDGET_QUANTITIES}
    for c, t in enumerate(run.times):
      if t not in run.shown:
        continue
      rec = {"rule": repr(run.rule), "label": run.label, "budget": int(t),
             **({} if problem is None else {"question": repr(problem)}),
             "trials": args.trials, "means": list(means), "wrt": wrt, "estimator": estimator,
             "simulated_steps": steps}
      if estimator in DIFFERENCES:
        rec["h"] = h
      for name, field in BUDGET_QUANTITIES:
        value, se = getattr(est, field)[c], getattr(est, field + "_se")[c]
        rec[name], rec[f"{name}_se"], rec[f"{name}_ci95"] = float(value), float(se), _ci95(value, se)
        g, g_se = (np.atleast_1d(a[c]).tolist() for a in grads[name])
        rec[f"grad_{name}"], rec[f"grad_{name}_se"] = g, g_se
        rec[f"grad_{name}_ci95"] = [_ci95(a, b) for a, b in zip(g, g_se)]
      records.append(rec)
  return records


def _print_budget_grad(rec: dict) -> None:
  """The text report of one (rule, budget) of `jbai grad --budget`."""
  how = rec["estimator"] + (f", CRN, h = {rec['h']:g}" if "h" in rec else "")
  print(f"rule {rec['rule']}, budget T = {rec['budget']}, {rec['trials']} trials, "
        f"{rec['simulated_steps']} simulated steps; +- is a 95% CI")
  print(f"  P(error at T)       {rec['error_rate']:.4g} +- {Z95 * rec['error_rate_se']:.2g}")
  print(f"  simple regret at T  {rec['simple_regret']:.4g} +- "
        f"{Z95 * rec['simple_regret_se']:.2g}")
  rows = ([(str(i), f"{m:.6g}") for i, m in enumerate(rec["means"])]
          if rec["wrt"] == "means" else [(rec["wrt"], "")])
  print(f"  {'d/d':>6} {'mean':>10} {'dP(error)/d (' + how + ')':>28} {'d regret/d':>22}")
  for i, (name, mean) in enumerate(rows):
    e = f"{rec['grad_error_rate'][i]:.4g} +- {Z95 * rec['grad_error_rate_se'][i]:.2g}"
    r = f"{rec['grad_simple_regret'][i]:.4g} +- {Z95 * rec['grad_simple_regret_se'][i]:.2g}"
    print(f"  {name:>6} {mean:>10} {e:>28} {r:>22}")
