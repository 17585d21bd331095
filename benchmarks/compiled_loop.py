"""jbai on its defaults against a compiled per-trial loop (numba), in one process.

For TCB and ITCB on Gaussian (sigma = 1) and Bernoulli instances with K = 5 and
K = 20 arms (delta = 1e-8), and on Gaussian instances with K = 100 and K = 1,000
arms (delta = 0.01, fewer trials), gk16, float32 for jbai, prints:
  - the mean stopping time with its 95% confidence interval, for jbai and for the
    loop of `benchmarks/loop_kernels.py` (written independently of jbai's code), and
    whether they agree (a correctness check: |difference| <= 1.96 standard errors of
    the difference);
  - useful trial-steps per second of jbai on its defaults (`jbai.use_cpu_cores()`,
    one device per usable core, as the `jbai` command has it; `jbai.simulate` with
    its default pool, programs compiled before timing), of the loop on one thread
    (@njit) and on every core (numba.prange), the ratios jbai / loop, and jbai per
    core against the loop on one thread.
With --json PATH it also writes the rows; --devices N gives jbai N devices.

Needs numba (`pip install jbai[bench]`).

Usage: python benchmarks/compiled_loop.py [--trials 2000] [--trials-20 400]
         [--trials-100 100] [--trials-1000 12] [--cases tcb:gaussian-5,...]
         [--json out.json]
"""

import argparse
import json
import math
import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loop_kernels as lk  # noqa: E402

import jbai  # noqa: E402

DELTA = 1e-8
INSTANCES = {
    "gaussian-5": ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0]),
    "bernoulli-5": ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06]),
    # K = 20: the K = 5 instances' hard pairs, then arms spread below them.
    "gaussian-20": ("gaussian", [1.2, 1.0, 1.0, 1.0] +
                    [round(float(x), 4) for x in np.linspace(0.9, 0.2, 16)]),
    "bernoulli-20": ("bernoulli", [0.8, 0.6, 0.55] +
                     [round(float(x), 4) for x in np.linspace(0.5, 0.05, 17)]),
    # Many arms: one best arm 0.5 above the others.
    "gaussian-100": ("gaussian", [1.5] + [1.0] * 99),
    "gaussian-1000": ("gaussian", [1.5] + [1.0] * 999),
}
DELTAS = {"gaussian-100": 0.01, "gaussian-1000": 0.01}  # the others: DELTA
FAMILY = {"gaussian": lk.GAUSSIAN, "bernoulli": lk.BERNOULLI}
RULE = {"tcb": lk.TCB, "itcb": lk.ITCB}
CASES = [f"{r}:{i}" for i in INSTANCES for r in ("tcb", "itcb")]


def mean_ci(tau):
  """(mean, half-width of the 95% normal confidence interval)."""
  tau = np.asarray(tau, float)
  return tau.mean(), 1.96 * tau.std(ddof=1) / math.sqrt(len(tau))


def loop_rate(run, family, rule, means, delta, trials, max_steps, seed=0):
  """The loop `run` (run_serial or run_parallel) on `trials` trials, compiled
  before timing: (useful steps per second, tau)."""
  args = (FAMILY[family], RULE[rule], np.asarray(means, float), math.log(1 / delta), 1.0,
          max_steps)
  run(*args, 1)  # compiles
  lk.seed(seed)
  t0 = time.perf_counter()
  tau, _ = run(*args, trials)
  return tau.sum() / (time.perf_counter() - t0), tau


def jbai_rate(family, means, rule, delta, trials, max_steps, lanes=None, seed=0, **kwargs):
  """jbai.simulate once its programs are compiled (a one-step run compiles the first
  pool; a tail pool's first chunk is left out of the timing): (useful steps per
  second, tau, utilisation)."""
  jbai.simulate(jax.random.key(seed), family, means, rule, delta, trials, max_steps=1,
                lanes=lanes, **kwargs)
  res = jbai.simulate(jax.random.key(seed), family, means, rule, delta, trials,
                      max_steps=max_steps, lanes=lanes, **kwargs)
  st = res.stats
  return st["timed_useful_steps"] / st["wall_seconds"], np.asarray(res.tau), st["utilisation"]


def compare(case, trials, max_steps=10**7, lanes=None):
  """One row: jbai, the one-thread loop and the all-core loop on `case`."""
  rule, name = case.split(":")
  family, means = INSTANCES[name]
  delta = DELTAS.get(name, DELTA)
  jb, tau_j, util = jbai_rate(family, means, rule, delta, trials, max_steps, lanes)
  one, tau_1 = loop_rate(lk.run_serial, family, rule, means, delta, trials, max_steps, seed=1)
  every, tau_p = loop_rate(lk.run_parallel, family, rule, means, delta, trials, max_steps,
                           seed=2)
  cores = jax.local_device_count()
  (mj, hj), (ml, hl) = mean_ci(tau_j), mean_ci(np.concatenate([tau_1, tau_p]))
  agree = abs(mj - ml) <= math.hypot(hj, hl)
  return {"rule": rule, "instance": name, "delta": delta, "trials": trials, "jbai_tau": mj,
          "jbai_ci": hj, "loop_tau": ml, "loop_ci": hl, "agree": bool(agree), "jbai": jb,
          "utilisation": util, "devices": cores, "loop_1": one, "loop_all": every,
          "x_loop_1": jb / one, "x_loop_all": jb / every, "x_loop_1_per_core": jb / cores / one}


def print_row(r):
  print(f"{r['rule']:<5} {r['instance']:<13} {r['trials']:>6} "
        f"{r['jbai_tau']:>9.0f} ±{r['jbai_ci']:<6.0f} {r['loop_tau']:>9.0f} ±{r['loop_ci']:<6.0f} "
        f"{'yes' if r['agree'] else 'NO':>5} {r['jbai']:>9.3g} {r['loop_1']:>9.3g} "
        f"{r['loop_all']:>9.3g} {r['x_loop_1']:>7.2f} {r['x_loop_all']:>7.2f} "
        f"{r['x_loop_1_per_core']:>7.2f}", flush=True)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=2000, help="trials, K = 5")
  parser.add_argument("--trials-20", type=int, default=400, help="trials, K = 20")
  parser.add_argument("--trials-100", type=int, default=100, help="trials, K = 100")
  parser.add_argument("--trials-1000", type=int, default=12, help="trials, K = 1000")
  parser.add_argument("--cases", default=",".join(CASES))
  parser.add_argument("--lanes", type=int, default=None)
  parser.add_argument("--devices", type=int, default=None,
                      help="jbai's CPU devices (default: one per usable core)")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  jbai.use_cpu_cores(args.devices)  # jbai on its defaults, as the jbai command runs
  import numba
  print(f"jbai on {jax.local_device_count()} x {jax.devices()[0].device_kind} "
        f"(jax {jax.__version__}); numba {numba.__version__} on "
        f"{numba.get_num_threads()} threads ({os.cpu_count()} CPUs); delta = {DELTA:g} "
        f"(K = 100 and 1000: {DELTAS['gaussian-100']:g}), gk16")
  print(f"{'rule':<5} {'instance':<13} {'trials':>6} {'jbai tau':>16} {'loop tau':>16} "
        f"{'agree':>5} {'jbai/s':>9} {'loop 1/s':>9} {'loop N/s':>9} {'x 1':>7} {'x N':>7} "
        f"{'x 1/core':>7}")
  trials = {"20": args.trials_20, "100": args.trials_100, "1000": args.trials_1000}
  rows = []
  for case in args.cases.split(","):
    rows.append(compare(case, trials.get(case.rsplit("-", 1)[1], args.trials),
                        lanes=args.lanes))
    print_row(rows[-1])
  print("(steps/s: useful trial-steps per second; x 1, x N: jbai / the loop on one "
        "thread, on every core; x 1/core: jbai per device / the loop on one thread; "
        "tau ± the 95% CI half-width; the loop's tau pools its two runs)")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)


if __name__ == "__main__":
  main()
