"""The `jbai` command line: run, oracle, rules, reproduce.

Bad input (unknown rule, family or threshold; delta not in (0, 1); a tie for the
best arm; a mean outside Theta) prints one line naming the value and exits with 2.
"""

import argparse
import inspect
import json
import math
import os
import sys
import time

DEFAULT_RUN = {"family": "gaussian", "means": "1.2,1,1,1,1", "rule": "itcb",
               "delta": 1e-8, "trials": 1000}


class Progress:
  """A one-line text progress bar on stderr (silent when stderr is not a terminal
  unless forced)."""

  def __init__(self, label: str, enabled: bool):
    self.label, self.enabled, self.start = label, enabled, time.perf_counter()

  def __call__(self, done, total, *_):
    if not self.enabled:
      return
    frac = done / max(total, 1)
    bar = "#" * int(30 * frac)
    elapsed = time.perf_counter() - self.start
    sys.stderr.write(f"\r{self.label} [{bar:<30}] {done}/{total} {elapsed:6.1f}s")
    if done >= total:
      sys.stderr.write("\n")
    sys.stderr.flush()


def parse_means(text: str) -> list:
  try:
    return [float(x) for x in text.split(",") if x.strip()]
  except ValueError:
    raise ValueError(f"--means must be comma-separated numbers, got {text!r}") from None


def family_from_args(args):
  """Builds the family from --family and its parameter options."""
  from jbai import families
  params = {"sigma": args.sigma, "lo": args.lo, "hi": args.hi,
            "shape": getattr(args, "shape", None)}
  if args.family not in families.BUILTIN:
    raise ValueError(f"unknown family {args.family!r}; choose from {sorted(families.BUILTIN)}")
  accepted = inspect.signature(families.BUILTIN[args.family]).parameters
  for name, value in params.items():
    if value is not None and name not in accepted:
      raise ValueError(f"family {args.family!r} takes no parameter --{name}")
  return families.get(args.family, **{k: v for k, v in params.items() if v is not None})


def add_family_args(p):
  p.add_argument("--family", default=DEFAULT_RUN["family"], help="reward family")
  p.add_argument("--means", default=DEFAULT_RUN["means"], help="comma-separated arm means")
  p.add_argument("--sigma", type=float, default=None, help="Gaussian standard deviation")
  p.add_argument("--shape", type=float, default=None, help="Weibull shape k")
  p.add_argument("--lo", type=float, default=None, help="lower end of Theta")
  p.add_argument("--hi", type=float, default=None, help="upper end of Theta")


def cmd_oracle(args) -> int:
  import jax
  jax.config.update("jax_enable_x64", True)
  import numpy as np
  from jbai import engine, oracle
  family = family_from_args(args)
  means = parse_means(args.means)
  delta = float(engine.check_delta(args.delta)[0])
  w, gam, info = oracle.optimal_allocation(family, np.asarray(means), method=args.method)
  w = [float(x) for x in np.asarray(w)]
  gam = float(gam)
  out = {"family": repr(family), "means": means, "w": w, "gamma": gam,
         "t_star": 1 / gam, "delta": delta, "t_star_log": math.log(1 / delta) / gam,
         "method": args.method}
  if args.json:
    print(json.dumps(out))
    return 0
  print(f"family  {family!r}")
  print(f"{'arm':>4} {'mean':>12} {'w(nu)':>10}")
  for i, (m, x) in enumerate(zip(means, w)):
    print(f"{i:>4} {m:>12.6g} {x:>10.6f}")
  print(f"Gamma(nu)              {gam:.6g}")
  print(f"T*(nu) = 1/Gamma       {1 / gam:.6g}")
  print(f"T*(nu) log(1/delta)    {out['t_star_log']:.6g}   (delta = {delta:g})")
  return 0


def run_summary(res) -> dict:
  s = res.summary[0]
  out = dict(s)
  out.update({k: res.stats[k] for k in ("wall_seconds", "compile_seconds", "utilisation",
                                        "useful_steps", "rule", "family", "threshold")})
  out["steps_per_second"] = (res.stats["timed_useful_steps"] / res.stats["wall_seconds"]
                             if res.stats["wall_seconds"] > 0 else None)
  return out


def cmd_run(args) -> int:
  import jax
  import numpy as np
  from jbai import engine, rules, thresholds
  family = family_from_args(args)
  means = parse_means(args.means)
  rule = rules.get(args.rule, beta=args.beta, eps=args.eps)
  threshold = thresholds.get(args.threshold)
  delta = float(engine.check_delta(args.delta)[0])
  show = not args.json and (sys.stderr.isatty() or args.progress)
  res = engine.simulate(jax.random.key(args.seed), family, means, rule, delta,
                        args.trials, threshold=threshold, max_steps=args.max_steps,
                        progress=Progress(f"{args.rule}", show))
  out = run_summary(res)
  if args.out:
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
      json.dump(out, f, indent=1)
    np.savez(os.path.splitext(args.out)[0] + ".npz", tau=res.tau, answer=res.answer,
             correct=res.correct, hit_cap=res.hit_cap, counts=res.counts)
  if args.json:
    print(json.dumps(out))
    return 0
  lo, hi = out["tau_ci95"]
  elo, ehi = out["error_ci95"]
  rows = [("rule", out["rule"]), ("family", out["family"]), ("means", means),
          ("threshold", out["threshold"]), ("delta", f"{delta:g}"),
          ("trials", out["trials"]),
          ("mean tau", f"{out['mean_tau']:.1f}  (95% CI {lo:.1f} .. {hi:.1f})"),
          ("median / max tau", f"{out['median_tau']:.0f} / {out['max_tau']}"),
          ("error rate", f"{out['error_rate']:.4f}  (Wilson 95% CI {elo:.4f} .. {ehi:.4f})"),
          ("trials at the cap", f"{out['hit_cap']}  (max_steps = {args.max_steps})"),
          ("T*(nu)", f"{out['t_star']:.2f}"),
          ("T*(nu) log(1/delta)", f"{out['t_star_log']:.1f}"),
          ("E[tau] / T* log(1/delta)", f"{out['ratio']:.3f}"),
          ("w(nu)", "[" + ", ".join(f"{x:.4f}" for x in out["w_star"]) + "]"),
          ("compile / run seconds",
           f"{out['compile_seconds']:.2f} / {out['wall_seconds']:.2f}"),
          ("trial-steps per second", f"{out['steps_per_second']:.3g}"),
          ("lane utilisation", f"{out['utilisation']:.3f}")]
  for k, v in rows:
    print(f"{k:<26} {v}")
  if out["hit_cap"]:
    print(f"warning: {out['hit_cap']} trial(s) reached max_steps without stopping; "
          "they count as errors and enter mean tau at the cap")
  return 0


def cmd_rules(args) -> int:
  from jbai import rules
  for name, doc, params in rules.describe():
    print(f"{name:<12} {doc}" + (f"  [{params}]" if params else ""))
  return 0


def cmd_reproduce(args) -> int:
  try:
    from jbai import reproduce
  except ImportError:
    raise ValueError("jbai reproduce is not available in this installation") from None
  return reproduce.main(args)


def build_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog="jbai", description="Fixed-confidence best-arm identification in JAX.")
  sub = parser.add_subparsers(dest="command")

  p = sub.add_parser("run", help="simulate a BAI algorithm (the main job)")
  add_family_args(p)
  p.add_argument("--rule", default=DEFAULT_RUN["rule"], help="sampling rule (see `jbai rules`)")
  p.add_argument("--delta", type=float, default=DEFAULT_RUN["delta"], help="confidence level")
  p.add_argument("--trials", type=int, default=DEFAULT_RUN["trials"])
  p.add_argument("--threshold", default="gk16", help="stopping threshold: gk16, kk, paper")
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--max-steps", type=int, default=1_000_000)
  p.add_argument("--beta", type=float, default=None, help="top-two parameter")
  p.add_argument("--eps", type=float, default=None, help="TCB/ITCB look-ahead r_t = eps/t")
  p.add_argument("--json", action="store_true", help="print one JSON object")
  p.add_argument("--out", default=None, help="also write the JSON here (and arrays as .npz)")
  p.add_argument("--progress", action="store_true", help="show progress even when not a tty")
  p.set_defaults(func=cmd_run)

  p = sub.add_parser("oracle", help="optimal allocation w(nu) and complexity Gamma(nu)")
  add_family_args(p)
  p.add_argument("--delta", type=float, default=1e-8)
  p.add_argument("--method", default="exact", choices=["exact", "optax"])
  p.add_argument("--json", action="store_true")
  p.set_defaults(func=cmd_oracle)

  p = sub.add_parser("rules", help="list the sampling rules")
  p.set_defaults(func=cmd_rules)

  p = sub.add_parser("reproduce", help="reproduce the paper's numerical section")
  p.add_argument("--scale", default="smoke", choices=["smoke", "paper"])
  p.add_argument("--only", default=None, help="run only this experiment")
  p.add_argument("--out", default="results", help="output folder")
  p.set_defaults(func=cmd_reproduce)
  return parser


def main(argv=None) -> int:
  parser = build_parser()
  args = parser.parse_args(argv)
  if args.command is None:
    args = parser.parse_args(["run"] + list(argv or sys.argv[1:]))
  try:
    return args.func(args)
  except ValueError as e:
    print(f"jbai: error: {e}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())
