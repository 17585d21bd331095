"""`jbai oracle`: the optimal allocation w(nu), Gamma(nu), T*(nu) and T*(nu) log(1/delta).

With --eps-good EPS, the eps-good oracle (`jbai.oracle.eps`): w*_eps(nu),
Gamma_eps(nu), T*_eps(nu), T*_eps(nu) log(1/delta) and the answer that attains it.
With --top M or --above LEVEL, the oracle of another question (`jbai.problems`):
top-m identification or thresholding, with the answer set. With --budget, also the
fixed budget's (`jbai.oracle.budget`): the static
allocation w_FB(nu) of largest large-deviation rate Gamma_FB(nu), and the rate of
w(nu) at a fixed budget.
"""

from jbai.cli import render
from jbai.cli.plan import checked_deltas, family_from_args, is_bounded, per_arm, problem_of


def cmd_oracle(args) -> int:
  """`jbai oracle`, in float64: returns 0."""
  import jax
  jax.config.update("jax_enable_x64", True)
  import numpy as np
  from jbai.core.inputs import log_inv_delta
  from jbai.oracle import (budget_allocation, budget_rate, eps_optimal_allocation,
                           optimal_allocation)
  family = family_from_args(args)
  means = args.means
  deltas = checked_deltas(args.delta)
  if getattr(args, "arms", None) is not None:
    return _linear(args, family, means, deltas)
  eps = getattr(args, "eps_good", None)
  problem = _problem(args)
  if per_arm(family):
    return _per_arm(args, family, means, deltas)
  if is_bounded(family):
    return _bounded(args, family, means, deltas)
  if problem is not None:
    return _other_answer(args, problem, family, means, deltas)
  if eps is not None and args.budget:
    raise ValueError("--budget gives the best arm's oracle at a fixed budget; it does not "
                     "take --eps-good")
  if eps is None:
    w, gam, _ = optimal_allocation(family, np.asarray(means), method=args.method)
  else:
    if args.method != "exact":
      raise ValueError(f"--eps-good takes the exact method (the eps oracle's nested "
                       f"bisection), not --method {args.method}")
    w, gam, answer = eps_optimal_allocation(family, np.asarray(means), eps)
  w = [float(x) for x in np.asarray(w)]
  gam = float(gam)
  logs = [float(v) / gam for v in log_inv_delta(deltas)]  # log(1/delta), any magnitude
  single = len(deltas) == 1
  out = {"family": repr(family), "means": means, "w": w, "gamma": gam,
         "t_star": 1 / gam, "delta": deltas[0] if single else deltas,
         "t_star_log": logs[0] if single else logs, "method": args.method}
  if eps is not None:
    out.update({"eps_good": float(eps), "answer": int(answer)})
  if args.budget:
    w_fb, rate = budget_allocation(family, np.asarray(means))
    out.update({"w_budget": [float(x) for x in np.asarray(w_fb)],
                "gamma_budget": float(rate),
                "gamma_budget_of_w": float(budget_rate(family, np.asarray(means),
                                                       np.asarray(w)))})
  if args.json:
    render.print_json(out)
  else:
    render.print_oracle(out, logs)
  return 0


def _linear(args, family, means, deltas) -> int:
  """`jbai oracle --arms X --theta THETA`: T* and w* of the linear model by
  `jbai.linear.linear_solve` (its ascent, polish and certificate, in float64)."""
  import numpy as np
  from jbai.linear import linear_solve, spec_of
  for option, given in (("--eps-good", getattr(args, "eps_good", None) is not None),
                        ("--top", getattr(args, "top", None) is not None),
                        ("--above", getattr(args, "above", None) is not None),
                        ("--budget", args.budget), ("--method optax", args.method != "exact")):
    if given:
      raise ValueError(f"the linear model's oracle is the best arm's; it does not take {option}")
  spec = spec_of(family)
  sol = linear_solve(np.asarray(spec.features), np.asarray(args.theta, float), spec.sigma)
  t_star = float(sol.t_star)
  logs, at_deltas = _at_deltas(t_star, deltas)
  out = {"family": repr(family), "arms": spec.features.tolist(),
         "theta": [float(v) for v in args.theta], "means": means,
         "w": [float(x) for x in np.asarray(sol.w)], "gamma": float(sol.gamma),
         "t_star": t_star, "gap": float(sol.gap), "converged": bool(sol.converged),
         **at_deltas,
         "method": "linear"}
  if args.json:
    render.print_json(out)
  else:
    render.print_oracle(out, logs)
    if not out["converged"]:
      print(f"not converged: T*(nu) lies in [{t_star / (1 + out['gap']):.6g}, {t_star:.6g}] "
            "(the certificate of jbai.linear.linear_solve)")
  return 0


def _problem(args):
  """The problem that --top or --above asks for (`jbai.cli.plan.problem_of`), or None
  (the best arm); refused with an option it does not take."""
  problem = problem_of(args)
  asked = "--top" if getattr(args, "top", None) is not None else "--above"
  for option, given in (("--eps-good", getattr(args, "eps_good", None) is not None),
                        ("--budget", args.budget), ("--method optax", args.method != "exact")):
    if problem is not None and given:
      raise ValueError(f"{asked} gives its own exact oracle; it does not take {option}")
  return problem


def _other_answer(args, problem, family, means, deltas) -> int:
  """`jbai oracle --top M` or `--above LEVEL`: T*, w* and the answer set."""
  import numpy as np
  from jbai import problems
  sol = problems.oracle(problem, family, np.asarray(means))
  t_star = float(sol.t_star)
  logs, at_deltas = _at_deltas(t_star, deltas)
  out = {"family": repr(family), "means": means, "problem": repr(problem),
         "w": [float(x) for x in np.asarray(sol.w)], "gamma": 1 / t_star, "t_star": t_star,
         "answer": [int(i) for i in np.flatnonzero(np.asarray(sol.answer))],
         **at_deltas,
         "method": "exact"}
  if args.json:
    render.print_json(out)
  else:
    render.print_oracle(out, logs)
  return 0


def _per_arm(args, family, means, deltas) -> int:
  """`jbai oracle` with a sigma per arm: T* and w* of the known-variance oracle
  (`jbai.variance.solve`); with --unknown-variance, those of the unknown-variance
  model (`jbai.variance.solve_uv`), beside T*_known and the ratio T*_uv / T*_known
  (`jbai.variance.cost_of_not_knowing`)."""
  import numpy as np
  from jbai import variance
  for option, given in (("--top/--above", problem_of(args) is not None),
                        ("--eps-good", getattr(args, "eps_good", None) is not None),
                        ("--budget", args.budget)):
    if given:
      raise ValueError(f"a sigma per arm (--sigma list, --unknown-variance) has the best "
                       f"arm's oracle only; it does not take {option}")
  sigma = dict(family.params)["sigma"]
  ratio, uv, known = variance.cost_of_not_knowing(np.asarray(means), np.asarray(sigma))
  unknown = bool(args.unknown_variance)
  sol = uv if unknown else known
  t_star = float(sol.t_star)
  logs, at_deltas = _at_deltas(t_star, deltas)
  out = {"family": repr(family), "means": means, "sigma": list(sigma),
         "w": [float(x) for x in np.asarray(sol.w)], "gamma": 1 / t_star, "t_star": t_star,
         **at_deltas,
         "method": "exact"}
  if unknown:
    out.update({"t_star_known": float(known.t_star), "ratio_uv_known": float(ratio)})
  if args.json:
    render.print_json(out)
  else:
    render.print_oracle(out, logs)
    if unknown:
      print(f"{'T*_known(nu)':<23}{out['t_star_known']:.6g}   (the variances told)")
      print(f"{'T*(nu) / T*_known(nu)':<23}{out['ratio_uv_known']:.6g}   (the cost of not "
            "knowing them)")
  return 0


def _bounded(args, family, means, deltas) -> int:
  """`jbai oracle --laws ...`: T* and w* of the true laws (`jbai.bounded.optimal`,
  KL_inf of each law, a Beta law by 64 Gauss-Jacobi atoms), in float64."""
  import numpy as np
  from jbai import bounded
  for option, given in (("--top/--above", problem_of(args) is not None),
                        ("--eps-good", getattr(args, "eps_good", None) is not None),
                        ("--budget", args.budget)):
    if given:
      raise ValueError(f"--laws has the best arm's oracle only; it does not take {option}")
  sol = bounded.optimal(bounded.arm_laws(dict(family.params)["laws"]))
  t_star = float(sol.t_star)
  logs, at_deltas = _at_deltas(t_star, deltas)
  out = {"family": repr(family), "laws": args.laws, "means": means,
         "w": [float(x) for x in np.asarray(sol.w)], "gamma": 1 / t_star, "t_star": t_star,
         **at_deltas,
         "method": "exact", "converged": bool(sol.converged)}
  if args.json:
    render.print_json(out)
  else:
    render.print_oracle(out, logs)
  return 0


def _at_deltas(t_star: float, deltas: list) -> tuple:
  """(T* log(1/delta) for each delta, the record's "delta" and "t_star_log": one
  value each for one delta, else lists)."""
  from jbai.core.inputs import log_inv_delta
  logs = [float(v) * t_star for v in log_inv_delta(deltas)]
  single = len(deltas) == 1
  return logs, {"delta": deltas[0] if single else deltas,
                "t_star_log": logs[0] if single else logs}
