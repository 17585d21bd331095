"""One study on 1, 2, ... processes of one core each, against one process on every core.

The study: B blocks of drawn Gaussian instances (sigma = 1, means uniform on
[0, 1], the best arm at least --min-gap above the others; block b drawn with seed
b, so B jobs), TCB, delta = 0.01, gk16, --trials trials per instance. Each row is
`jbai study` as a person types it, in new processes, timed from the command to the
tables (start-up, compiles, the barrier and the figures included), after a first
run of the same row that fills the compilation cache (a process of a jax.distributed
job other than 0 does not write the cache, so it compiles every time):

  every core      `jbai study`: one process, one CPU device per core (the baseline)
  1 core          `taskset -c 0 jbai study --devices 1`
  --processes P   `jbai study --processes P`: each job's trials in P worker processes,
                  one core and one device each
  distributed P   P processes joined by jax.distributed on loopback, process i
                  `taskset -c i ... --devices 1`: process i runs jobs j = i mod P

P runs over 2 .. the usable cores. Prints the wall seconds of each row, its ratio to
the baseline (> 1: faster), the load average before and after (the machine may be
shared), and checks that every row's cells.csv is the baseline's, byte for byte.

Usage: python benchmarks/study_processes.py [--blocks 4] [--instances 10]
         [--trials 200] [--arms 5] [--json out.json]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from jbai.host.cores import usable_cores

SPEC_HEAD = """[study]
name = "study-processes"
seed = 0
trials = {trials}
delta = 0.01
threshold = "gk16"
"""
BLOCK = """
[[instances]]
family = "gaussian"
[instances.draw]
count = {instances}
arms = {arms}
low = 0.0
high = 1.0
min_gap = {gap}
seed = {seed}
"""
RULES = """
[[rules]]
name = "tcb"
"""


def free_port() -> int:
  """A port the kernel has just handed out (the benchmark's; jbai opens none)."""
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def study_command(spec: str, out: str, *extra) -> list:
  return [sys.executable, "-m", "jbai.cli", "study", spec, "--out", out, "--quiet", *extra]


def run_row(row: str, spec: str, out: str, env: dict) -> float:
  """Wall seconds of the row's command(s), from the first start to the last end."""
  cores = sorted(os.sched_getaffinity(0))
  if row.startswith("distributed"):
    n, port = int(row.split()[1]), free_port()
    cmds = [["taskset", "-c", str(cores[i % len(cores)])] + study_command(
        spec, out, "--devices", "1", "--coordinator", f"127.0.0.1:{port}",
        "--num-processes", str(n), "--process-id", str(i)) for i in range(n)]
  elif row.startswith("--processes"):
    cmds = [study_command(spec, out, "--processes", row.split()[1])]
  elif row == "1 core":
    cmds = [["taskset", "-c", str(cores[0])] + study_command(spec, out, "--devices", "1")]
  else:
    cmds = [study_command(spec, out)]
  t0 = time.perf_counter()
  procs = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
           for c in cmds]
  errors = [p.communicate()[1] for p in procs]
  seconds = time.perf_counter() - t0
  for p, err in zip(procs, errors):
    if p.returncode:
      raise SystemExit(f"{row}: exit code {p.returncode}: {err.decode()[-2000:]}")
  return seconds


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--blocks", type=int, default=4, help="blocks of instances (jobs)")
  parser.add_argument("--instances", type=int, default=10, help="instances per block")
  parser.add_argument("--trials", type=int, default=200)
  parser.add_argument("--arms", type=int, default=5)
  parser.add_argument("--min-gap", type=float, default=0.1)
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  cores = usable_cores()
  rows = ["every core", "1 core"]
  for p in range(2, cores + 1):
    rows += [f"--processes {p}", f"distributed {p}"]
  work = tempfile.mkdtemp(prefix="study-processes-")
  env = dict(os.environ, JBAI_COMPILATION_CACHE_DIR=os.path.join(work, "cache"))
  spec = os.path.join(work, "spec.toml")
  with open(spec, "w") as f:
    f.write(SPEC_HEAD.format(trials=args.trials) + "".join(
        BLOCK.format(instances=args.instances, arms=args.arms, gap=args.min_gap, seed=b + 1)
        for b in range(args.blocks)) + RULES)
  print(f"TCB, {args.blocks} blocks x {args.instances} drawn Gaussian instances (K = "
        f"{args.arms}, min gap {args.min_gap}) x {args.trials} trials, delta = 0.01, gk16; "
        f"{cores} usable cores; load average {os.getloadavg()[0]:.2f} before")
  print(f"{'row':>16} {'seconds':>8} {'x every core':>12} {'same cells':>10}")
  results, base = [], None
  try:
    for row in rows:
      tag = row.replace(" ", "").replace("-", "")
      run_row(row, spec, os.path.join(work, f"{tag}-warm-up"), env)  # fills the cache
      out = os.path.join(work, tag)
      seconds = run_row(row, spec, out, env)
      with open(os.path.join(out, "cells.csv"), "rb") as f:
        cells = f.read()
      base = base or (seconds, cells)
      results.append({"row": row, "seconds": seconds, "ratio": base[0] / seconds,
                      "same_cells": cells == base[1]})
      print(f"{row:>16} {seconds:>8.1f} {base[0] / seconds:>12.2f} "
            f"{'yes' if cells == base[1] else 'NO':>10}", flush=True)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  print(f"load average {os.getloadavg()[0]:.2f} after")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"args": vars(args), "cores": cores, "rows": results}, f, indent=1)


if __name__ == "__main__":
  main()
