"""Same key, same trial in float32: every rule on Gaussian, Bernoulli and Poisson
arms, run on 1, 8 and 64 lanes and on one device against two, counting the
trials whose stopping times or answers differ from the run on 8 lanes.

  python experiments/float32_invariance.py [--trials 40] [--rules tcb,itcb] [--out FILE]

It runs in float32 (JAX's default) on two CPU devices of this machine
(`jbai.use_cpu_cores(2)`); docs/design/ties.md has the table it prints.
"""

import argparse
import json
import time

import jax

import jbai

INSTANCES = {  # as hard as the slow tier's: thousands of steps a trial at delta = 0.1
    "gaussian": [1.0, 0.8, 0.7, 0.6],
    "bernoulli": [0.5, 0.45, 0.43, 0.4],
    "poisson": [1.0, 0.9, 0.86, 0.8],
}
DELTA = 0.1
LANES = (1, 8, 64)


def differing(a, b) -> int:
  """Trials whose tau or answer differ between two results."""
  return int(((a.tau != b.tau) | (a.answer != b.answer)).sum())


def row(family: str, rule: str, trials: int) -> dict:
  devices = jax.devices()
  run = lambda **kw: jbai.simulate(jax.random.key(11), family, INSTANCES[family], rule,
                                   DELTA, trials, **kw)
  try:
    base = run(lanes=8, devices=devices[:1])
  except ValueError as e:  # a rule that does not apply to the family
    return {"refused": str(e).splitlines()[0]}
  out = {f"lanes {w}": differing(run(lanes=w, devices=devices[:1]), base)
         for w in LANES if w != 8}
  out["default, 1 device"] = differing(run(devices=devices[:1]), base)
  out["default, 2 devices"] = differing(run(devices=devices[:2]), base)
  out["mean tau"] = float(base.tau.mean())
  return out


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=40)
  parser.add_argument("--rules", default=",".join(
      name for name, factory in jbai.rules.RULES.items() if factory().budget is None))
  parser.add_argument("--families", default=",".join(INSTANCES))
  parser.add_argument("--out", default=None)
  args = parser.parse_args()
  jbai.use_cpu_cores(2)
  jbai.enable_compilation_cache()
  table = []
  for family in args.families.split(","):
    for rule in args.rules.split(","):
      start = time.perf_counter()
      r = {"family": family, "rule": rule, **row(family, rule, args.trials)}
      r["seconds"] = round(time.perf_counter() - start, 1)
      table.append(r)
      print(json.dumps(r), flush=True)
  if args.out:
    with open(args.out, "w") as f:
      json.dump(table, f, indent=1)


if __name__ == "__main__":
  main()
