"""What a chunk program costs to compile, against the step it runs.

For each rule and instance, lowers and compiles (no persistent cache) the chunk
program of `benchmarks/step_profile.py` (`jbai.host.programs`; the pool's loop: the vmapped lane step, the
refill that writes finished trials and starts new ones, the slots) and, as the
baseline in the same process, a loop of the vmapped lane step alone over the same
lanes. It prints, for both, the instructions and fusions (XLA:CPU kernels) of the
compiled HLO and the best of --repeats lowerings and compilations, and the ratio
of the chunk's compile time to the step's: what the pool's bookkeeping adds to
each program that a run, a test or a study compiles.

Usage: python benchmarks/compile_time.py [--cases tcb:gaussian-5,t3c:bernoulli-5]
         [--lanes 256] [--repeats 3]
"""

import argparse
import os
import re
import sys
import time

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_profile  # noqa: E402
from compiled_loop import INSTANCES  # noqa: E402

import jbai  # noqa: E402
from jbai.core import lane as lane_lib  # noqa: E402

CASES = "tcb:gaussian-5,tcb:bernoulli-20,t3c:bernoulli-5,tas-d:gaussian-5"


def size(compiled) -> tuple:
  """(instructions, fusions) of a compiled program's HLO text."""
  text = compiled.as_text()
  return len(re.findall(r"^\s*(?:ROOT )?%\S+ = ", text, re.M)), len(re.findall(r" fusion\(", text))


def timed(fn, *args, repeats: int) -> tuple:
  """(best lowering seconds, best compile seconds, instructions, fusions)."""
  lower, comp = [], []
  for _ in range(repeats):
    jax.clear_caches()
    t0 = time.perf_counter()
    lowered = fn.lower(*args)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    lower.append(t1 - t0)
    comp.append(time.perf_counter() - t1)
  return (min(lower), min(comp)) + size(compiled)


def step_loop(family, rule, thr):
  """The baseline: the vmapped lane step alone in a loop of 512 steps."""
  step = jax.vmap(lambda config, lane: lane_lib.step(family, rule, thr, config, lane)[0],
                  in_axes=(None, 0))

  def run(lanes, config):
    return jax.lax.fori_loop(0, 512, lambda _, l: step(config, l), lanes)

  return jax.jit(run)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cases", default=CASES, help="rule:instance, comma-separated")
  parser.add_argument("--lanes", type=int, default=256)
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  print(f"{'case':<18} {'program':<6} {'instr':>6} {'fusions':>7} {'lower s':>8} "
        f"{'compile s':>9} {'x step':>7}")
  for case in args.cases.split(","):
    rule_name, instance = case.split(":")
    family_name, means = INSTANCES[instance]
    family, rule = jbai.families.get(family_name), jbai.rules.get(rule_name)
    # step_profile's chunk program (gk16, one delta, one device, one step per iteration)
    chunk, pool, config, total = step_profile.setup(family, rule, means, args.lanes, 1, 0.01)
    lanes = jax.tree.map(lambda x: x[0], pool.lanes)
    base = timed(step_loop(family, rule, jbai.thresholds.gk16()), lanes, config,
                 repeats=args.repeats)
    full = timed(chunk, pool, config, total, repeats=args.repeats)
    for name, row in (("step", base), ("chunk", full)):
      print(f"{case:<18} {name:<6} {row[2]:>6} {row[3]:>7} {row[0]:>8.2f} {row[1]:>9.2f} "
            f"{row[1] / base[1]:>7.2f}", flush=True)


if __name__ == "__main__":
  main()
