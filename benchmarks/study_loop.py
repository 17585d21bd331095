"""A study end to end against the loop a user would write, on every core.

For each case (instances x trials x arms): drawn Gaussian instances (sigma = 1,
means uniform on [0, 1], the best arm at least --min-gap above the others), TCB,
delta = 0.01, gk16. jbai runs it as a person types it: `jbai study spec.toml --out
DIR` in a new process, timed from the command to its tables (start-up, compiles and
figures included), once with an empty compilation cache and once with the cache
that run filled. The loop (`benchmarks/loop_kernels.py`, numba, every (instance,
trial) pair spread over every core with prange) then runs the same instances, read
from the study's study.json, with the same trial counts and cap, compiled before
timing. Prints, per case:
  - the steps (rewards) of jbai's trials, and the mean stopping time of each with
    its 95% interval and whether they agree (|difference| <= 1.96 standard errors);
  - seconds: jbai cold and warm (and the compile seconds its jobs report), the loop;
  - the ratios loop seconds / jbai seconds (1 is the loop's speed);
  - with --processes P (P > 1), warm with `jbai study --processes P` (each job's
    trials in P worker processes, one per core, one device each: a run of its own
    fills the cache with their programs first), and its ratio.

Needs numba (`pip install jbai[bench]`).

Usage: python benchmarks/study_loop.py [--cases 200x50x5,200x400x5,100x50x20]
         [--min-gap 0.1] [--processes 2] [--json out.json]
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loop_kernels as lk  # noqa: E402

from jbai.host.summary import mean_ci  # noqa: E402
from jbai.studies import read_table  # noqa: E402

DELTA = 0.01
MAX_STEPS = 10**6  # a study's default cap
SPEC = """[study]
name = "study-loop"
seed = {seed}
trials = {trials}
delta = {delta}
threshold = "gk16"
max_steps = {max_steps}

[[instances]]
family = "gaussian"
draw = {{ count = {instances}, arms = {arms}, low = 0.0, high = 1.0, min_gap = {gap} }}

[[rules]]
name = "tcb"
"""


def run_study(spec_path, out, cache, processes=1):
  """(wall seconds of `jbai study` in a new process, its jobs' compile seconds)."""
  env = dict(os.environ, JBAI_COMPILATION_CACHE_DIR=cache)
  t0 = time.perf_counter()
  subprocess.run(["jbai", "study", spec_path, "--out", out, "--processes", str(processes)],
                 env=env, check=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  wall = time.perf_counter() - t0
  compile_s = sum(json.loads(line)["result"].get("compile_seconds") or 0.0
                  for line in open(os.path.join(out, "runs.jsonl")))
  return wall, compile_s


def study_taus(out):
  """([I, K] means of the study's instances, [I * n] stopping times)."""
  spec = json.load(open(os.path.join(out, "study.json")))["spec"]
  means = np.array([inst["means"] for inst in spec["instances"]])
  return means, np.asarray(read_table(os.path.join(out, "trials.csv"))["tau"], float)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cases", default="200x50x5,200x400x5,100x50x20",
                      help="instances x trials x arms, comma-separated")
  parser.add_argument("--min-gap", type=float, default=0.1)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--processes", type=int, default=1,
                      help="also run warm with jbai study --processes P")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  lk.seed(args.seed)
  rows = []
  print(f"TCB, drawn Gaussian instances (min gap {args.min_gap}), delta = {DELTA}, gk16; "
        f"{os.cpu_count()} CPUs")
  print(f"{'case':>11} {'steps':>8} {'jbai tau':>16} {'loop tau':>16} {'agree':>5} "
        f"{'cold s':>7} {'compile':>7} {'warm s':>7} {'loop s':>7} {'x cold':>6} {'x warm':>6}"
        + (f" {'warm P':>7} {'x P':>6}" if args.processes > 1 else ""))
  for case in args.cases.split(","):
    n_inst, trials, arms = map(int, case.split("x"))
    work = tempfile.mkdtemp(prefix="study-loop-")
    try:
      spec = os.path.join(work, "spec.toml")
      with open(spec, "w") as f:
        f.write(SPEC.format(seed=args.seed, trials=trials, delta=DELTA, max_steps=MAX_STEPS,
                            instances=n_inst, arms=arms, gap=args.min_gap))
      cache = os.path.join(work, "cache")
      cold, compile_s = run_study(spec, os.path.join(work, "cold"), cache)
      warm, _ = run_study(spec, os.path.join(work, "warm"), cache)
      shared = None
      if args.processes > 1:  # its first run compiles the one-device programs of its workers
        run_study(spec, os.path.join(work, "shared-cold"), cache, args.processes)
        shared = run_study(spec, os.path.join(work, "shared"), cache, args.processes)[0]
      means, tau = study_taus(os.path.join(work, "warm"))
      log_inv_delta = math.log(1 / DELTA)
      lk.run_instances(lk.GAUSSIAN, lk.TCB, means[:2], log_inv_delta, 1.0, MAX_STEPS, 2)
      t0 = time.perf_counter()
      loop_tau, _ = lk.run_instances(lk.GAUSSIAN, lk.TCB, means, log_inv_delta, 1.0,
                                     MAX_STEPS, trials)
      loop_s = time.perf_counter() - t0
    finally:
      shutil.rmtree(work, ignore_errors=True)
    (m_j, h_j), (m_l, h_l) = mean_ci(tau), mean_ci(loop_tau.ravel())
    agree = abs(m_j - m_l) <= math.hypot(h_j, h_l)
    row = dict(case=case, steps=float(tau.sum()), jbai_tau=m_j, jbai_ci=h_j, loop_tau=m_l,
               loop_ci=h_l, agree=bool(agree), cold_s=cold, compile_s=compile_s,
               warm_s=warm, loop_s=loop_s, ratio_cold=loop_s / cold, ratio_warm=loop_s / warm,
               processes=args.processes, warm_processes_s=shared)
    rows.append(row)
    print(f"{case:>11} {row['steps']:>8.2g} {m_j:>9.0f} ± {h_j:<4.0f} {m_l:>9.0f} ± {h_l:<4.0f} "
          f"{'yes' if agree else 'NO':>5} {cold:>7.1f} {compile_s:>7.1f} {warm:>7.1f} "
          f"{loop_s:>7.2f} {row['ratio_cold']:>6.2f} {row['ratio_warm']:>6.2f}"
          + (f" {shared:>7.1f} {loop_s / shared:>6.2f}" if shared else ""), flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)


if __name__ == "__main__":
  main()
