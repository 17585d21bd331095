"""`jbai oracle`: the optimal allocation w(nu), Gamma(nu), T*(nu) and T*(nu) log(1/delta)."""

from jbai.cli import render
from jbai.cli.plan import checked_deltas, family_from_args


def cmd_oracle(args) -> int:
  """`jbai oracle`, in float64: returns 0."""
  import jax
  jax.config.update("jax_enable_x64", True)
  import numpy as np
  from jbai.core.inputs import log_inv_delta
  from jbai.oracle import optimal_allocation
  family = family_from_args(args)
  means = args.means
  deltas = checked_deltas(args.delta)
  w, gam, _ = optimal_allocation(family, np.asarray(means), method=args.method)
  w = [float(x) for x in np.asarray(w)]
  gam = float(gam)
  logs = [float(v) / gam for v in log_inv_delta(deltas)]  # log(1/delta), any magnitude
  single = len(deltas) == 1
  out = {"family": repr(family), "means": means, "w": w, "gamma": gam,
         "t_star": 1 / gam, "delta": deltas[0] if single else deltas,
         "t_star_log": logs[0] if single else logs, "method": args.method}
  if args.json:
    render.print_json(out)
  else:
    render.print_oracle(out, logs)
  return 0
