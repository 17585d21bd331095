"""Pool size against throughput: how many lanes per device the machine wants.

For TCB on Gaussian [1.2, 1, 1, 1, 1] and ITCB on Bernoulli [0.8, 0.5, 0.3, 0.29,
0.06] (delta = 1e-8, gk16, float32), runs `jbai.simulate` with each pool size (lanes
per device) on every device (`jbai.use_cpu_cores` on a CPU: one device per core,
or --devices), twice: the first run compiles every program it reaches (the pool,
and the tail's smaller pools); the second is timed whole, tail and host loop
included, as a user's run is. Prints useful trial-steps per second, lane
utilisation, the pool sizes the run moved through, and the ratio to the default
pool (`jbai.core.pool.default_lanes`).

Usage: python benchmarks/lanes.py [--trials 8000] [--lanes 32,64,128,256,512]
         [--devices N]
"""

import argparse
import time

import jax

import jbai
from jbai.core import pool

CASES = [("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0], "tcb"),
         ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06], "itcb")]


def rate(family, means, rule, trials, lanes):
  """Useful steps per second of a whole run (its programs compiled), the
  utilisation and the pool sizes."""
  run = lambda: jbai.simulate(jax.random.key(0), family, means, rule, 1e-8, trials,
                              lanes=lanes, shrink=0.0)
  run()  # compiles every pool the run reaches
  t0 = time.perf_counter()
  res = run()
  return (res.stats["useful_steps"] / (time.perf_counter() - t0), res.stats["utilisation"],
          res.stats["pool_sizes"])


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=8000)
  parser.add_argument("--lanes", default="32,64,128,256,512")
  parser.add_argument("--devices", type=int, default=None,
                      help="CPU devices (default: one per usable core)")
  args = parser.parse_args()
  if jax.config.jax_platforms in (None, "", "cpu"):
    jbai.use_cpu_cores(args.devices)
  n_devices = jax.local_device_count()
  default = pool.default_lanes(args.trials, n_devices)
  sizes = sorted({default, *map(int, args.lanes.split(","))})
  print(f"device {jax.devices()[0].platform} ({jax.devices()[0].device_kind}) x "
        f"{n_devices}, {args.trials} trials, default pool {default} lanes per device")
  for family, means, rule in CASES:
    print(f"\n{rule} on {family} {means}")
    print(f"{'lanes':>7} {'steps/s':>10} {'utilisation':>12} {'x default':>10}  pool sizes")
    rows = {n: rate(family, means, rule, args.trials, n) for n in sizes}
    for n, (r, u, s) in rows.items():
      print(f"{n:>7} {r:>10.3g} {u:>12.2f} {r / rows[default][0]:>10.2f}  {s}", flush=True)
