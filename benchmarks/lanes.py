"""Pool size against throughput: how many lanes the default device wants.

For TCB on Gaussian [1.2, 1, 1, 1, 1] and ITCB on Bernoulli [0.8, 0.5, 0.3, 0.29,
0.06] (delta = 1e-8, gk16, float32), runs `jbai.simulate` with each pool size
after a run that compiles its programs, and prints useful trial-steps per second,
lane utilisation and the ratio to the default pool (`jbai.core.pool.default_lanes`).
On a CPU the default (at most 512 lanes) is near the best; on a GPU the step's
cost hardly grows with the lanes until the device is full.

Usage: python benchmarks/lanes.py [--trials 32768] [--lanes 64,512,4096,16384]
"""

import argparse

import jax

import jbai
from jbai.core import pool

CASES = [("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0], "tcb"),
         ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06], "itcb")]


def rate(family, means, rule, trials, lanes):
  """Useful steps per second of the timed chunks, and the utilisation."""
  jbai.simulate(jax.random.key(1), family, means, rule, 1e-8, lanes, lanes=lanes)  # compiles
  res = jbai.simulate(jax.random.key(0), family, means, rule, 1e-8, trials, lanes=lanes)
  return res.stats["timed_useful_steps"] / res.stats["wall_seconds"], res.stats["utilisation"]


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=32768)
  parser.add_argument("--lanes", default="64,512,4096,16384")
  args = parser.parse_args()
  default = pool.default_lanes(args.trials)
  sizes = sorted({default, *map(int, args.lanes.split(","))})
  print(f"device {jax.devices()[0].platform} ({jax.devices()[0].device_kind}), "
        f"{args.trials} trials, default pool {default} lanes")
  for family, means, rule in CASES:
    print(f"\n{rule} on {family} {means}")
    print(f"{'lanes':>7} {'steps/s':>10} {'utilisation':>12} {'x default':>10}")
    rows = {n: rate(family, means, rule, args.trials, n) for n in sizes}
    for n, (r, u) in rows.items():
      print(f"{n:>7} {r:>10.3g} {u:>12.2f} {r / rows[default][0]:>10.2f}")
