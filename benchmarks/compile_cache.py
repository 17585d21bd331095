"""Start-up of a first and a second process, with JAX's persistent compilation
cache and jbai's program cache (exported chunk programs, `jbai.program_cache`).

Runs the same simulation (ITCB, Gaussian [1.2, 1, 1, 1, 1], delta = 1e-8, 200
trials, float32) in two fresh Python processes that share an empty cache
directory, and prints for each: the chunk program's tracing, lowering and XLA
compilation (or loading from the cache) during its first call, from
`jax.monitoring`'s events; the run's own `compile_seconds` (the first chunk:
tracing, lowering, compiling or loading, and running it); and the wall time of
the whole `jbai.simulate` call. Then it runs `jbai run --trials 200 --json`
twice from the command line, sharing another empty cache directory, and prints
each one's `compile_seconds` and the wall time of the whole command (Python's
start and imports included). Each is repeated with new empty directories, and
the median is printed (min .. max in brackets).

Usage: python benchmarks/compile_cache.py [--repeats 3]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = """
import collections, json, time, jax, jax.monitoring
events = collections.defaultdict(float)
calls, first_call = [0], [False]
def listen(name, secs, **kw):
  if first_call[0]:
    events[name] += secs
jax.monitoring.register_event_duration_secs_listener(listen)
import jbai
from jbai import engine
compiled = engine._compiled
def watched(*args, **kwargs):  # flags the first call of the first chunk program
  fn, sharding = compiled(*args, **kwargs)
  def call(*a):
    first_call[0] = calls[0] == 0
    calls[0] += 1
    try:
      return fn(*a)
    finally:
      first_call[0] = False
  return call, sharding
engine._compiled = watched
start = time.perf_counter()
res = jbai.simulate(jax.random.key(0), "gaussian", [1.2, 1, 1, 1, 1], "itcb", 1e-8, 200)
wall = time.perf_counter() - start
print(json.dumps({"compile_seconds": res.stats["compile_seconds"], "simulate": wall, **events}))
"""

SIMULATE_ROWS = [
    ("chunk: tracing", "/jax/core/compile/jaxpr_trace_duration"),
    ("chunk: lowering", "/jax/core/compile/jaxpr_to_mlir_module_duration"),
    ("chunk: XLA compile or load", "/jax/core/compile/backend_compile_duration"),
    ("run's compile_seconds", "compile_seconds"),
    ("jbai.simulate wall", "simulate")]
CLI_ROWS = [("compile_seconds", "compile_seconds"), ("command wall", "wall")]


def environment(cache: str) -> dict:
  env = dict(os.environ, JBAI_COMPILATION_CACHE_DIR=cache)
  for name in ("JBAI_NO_COMPILATION_CACHE", "JAX_COMPILATION_CACHE_DIR"):
    env.pop(name, None)
  return env


def run_simulate(cache: str) -> dict:
  out = subprocess.run([sys.executable, "-c", CHILD], env=environment(cache), check=True,
                       capture_output=True, text=True)
  return json.loads(out.stdout.splitlines()[-1])


def run_cli(cache: str) -> dict:
  jbai = os.path.join(os.path.dirname(sys.executable), "jbai")
  command = [jbai] if os.path.exists(jbai) else [sys.executable, "-m", "jbai.cli"]
  start = time.perf_counter()
  out = subprocess.run(command + ["run", "--trials", "200", "--json"], env=environment(cache),
                       check=True, capture_output=True, text=True)
  wall = time.perf_counter() - start
  return {"compile_seconds": json.loads(out.stdout)["compile_seconds"], "wall": wall}


def pair(run) -> list:
  """[first, second] process of `run`, sharing a new empty cache directory."""
  folder = tempfile.mkdtemp()
  try:
    cache = os.path.join(folder, "cache")
    return [run(cache), run(cache)]
  finally:
    shutil.rmtree(folder)


def table(title: str, rows: list, runs: list) -> None:
  print(f"{title:<30} {'first process':>24} {'second process':>24}")
  for label, key in rows:
    cells = []
    for proc in range(2):
      values = [r[proc].get(key, 0.0) for r in runs]
      cells.append(f"{statistics.median(values):.2f} [{min(values):.2f} .. {max(values):.2f}]")
    print(f"  {label:<28} {cells[0]:>24} {cells[1]:>24}")


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  sims = [pair(run_simulate) for _ in range(args.repeats)]
  clis = [pair(run_cli) for _ in range(args.repeats)]
  print(f"seconds, median of {args.repeats} [min .. max]")
  table("jbai.simulate (one process)", SIMULATE_ROWS, sims)
  table("jbai run --trials 200 --json", CLI_ROWS, clis)
