"""Scaling with CPU cores: jbai on N CPU devices against the numba loop on N threads.

For each N of --devices (default 1, 2, 4, 8, 16, up to the usable cores), a fresh
process (the CPU device count is fixed when JAX starts) runs:
  - jbai: `jbai.use_cpu_cores(N)`, then `jbai.simulate` on its default pool, timed
    whole (tail and host loop included) after a run that compiles its programs;
  - the loop: `benchmarks/loop_kernels.py`'s `run_parallel` on N numba threads,
    compiled before timing;
on the same trials (TCB and ITCB, Gaussian [1.2, 1, 1, 1, 1], delta = 1e-8, gk16,
float32 for jbai). It prints useful trial-steps per second of both, their ratio, and
each one's speed-up over N = 1, and with --json PATH writes the rows.

Needs numba (`pip install jbai[bench]`).

Usage: python benchmarks/cores.py [--devices 1,2,4,8,16] [--trials 8000]
         [--rules tcb,itcb] [--json out.json]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MEANS = [1.2, 1.0, 1.0, 1.0, 1.0]
DELTA = 1e-8

CHILD = """
import json, math, sys, time
sys.path.insert(0, {here!r})
import jax, numpy as np, numba, jbai
import loop_kernels as lk
n, trials = {n}, {trials}
jbai.use_cpu_cores(n)
numba.set_num_threads(n)
rows = []
for rule in {rules!r}:
  run = lambda: jbai.simulate(jax.random.key(0), "gaussian", {means!r}, rule, {delta!r}, trials)
  run()  # compiles every pool the run reaches
  t0 = time.perf_counter(); res = run(); wall = time.perf_counter() - t0
  args = (lk.GAUSSIAN, {{"tcb": lk.TCB, "itcb": lk.ITCB}}[rule], np.asarray({means!r}),
          math.log(1 / {delta!r}), 1.0, 10**7)
  lk.run_parallel(*args, 2 * n)  # compiles
  lk.seed(1)
  t0 = time.perf_counter(); tau, _ = lk.run_parallel(*args, trials)
  loop_wall = time.perf_counter() - t0
  rows.append({{"rule": rule, "devices": n, "trials": trials,
               "jbai": res.stats["useful_steps"] / wall, "jbai_tau": float(res.tau.mean()),
               "loop": float(tau.sum()) / loop_wall, "loop_tau": float(tau.mean()),
               "pool_sizes": res.stats["pool_sizes"]}})
print(json.dumps(rows))
"""


def run(n: int, trials: int, rules: list) -> list:
  code = CHILD.format(here=HERE, n=n, trials=trials, rules=rules, means=MEANS, delta=DELTA)
  env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
  env["JAX_PLATFORMS"] = "cpu"
  out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                       capture_output=True, text=True).stdout
  return json.loads(out.strip().splitlines()[-1])


def main():
  sys.path.insert(0, os.path.dirname(HERE))
  from jbai.host.cores import usable_cores
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--devices", default="1,2,4,8,16")
  parser.add_argument("--trials", type=int, default=8000)
  parser.add_argument("--rules", default="tcb,itcb")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  cores = usable_cores()
  counts = [n for n in map(int, args.devices.split(",")) if n <= cores]
  rules = args.rules.split(",")
  print(f"{cores} usable cores; Gaussian {MEANS}, delta = {DELTA:g}, {args.trials} trials")
  print(f"{'rule':<5} {'N':>3} {'jbai/s':>9} {'loop/s':>9} {'jbai/loop':>9} "
        f"{'jbai xN=1':>9} {'loop xN=1':>9} {'jbai tau':>9} {'loop tau':>9}")
  rows, base = [], {}
  for n in counts:
    for r in run(n, args.trials, rules):
      base.setdefault(r["rule"], r)
      b = base[r["rule"]]
      print(f"{r['rule']:<5} {n:>3} {r['jbai']:>9.3g} {r['loop']:>9.3g} "
            f"{r['jbai'] / r['loop']:>9.2f} {r['jbai'] / b['jbai']:>9.2f} "
            f"{r['loop'] / b['loop']:>9.2f} {r['jbai_tau']:>9.0f} {r['loop_tau']:>9.0f}",
            flush=True)
      rows.append(r)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)


if __name__ == "__main__":
  main()
