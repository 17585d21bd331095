"""The two-stage arg-max (`jbai.ties.argmax`) against jnp.argmax, alone and
in a step of the pool.

1. ns per element of each, over 16 lanes of K values in a compiled loop
   (2,000 iterations, best of 5), for K in --arms.
2. ns per lane-step of the chunk program (`benchmarks/step_profile.py`'s setup,
   δ = 1e-30 so that no trial stops, 16 lanes) for each rule of --rules on
   Gaussian K = 100 and 1,000, with the split on and off (ties.SPLIT_AT beyond
   K), both variants compiled in this process and timed in turn.

Run it on one thread (`PJRT_NPROC=1 taskset -c 0`) for per-core figures.

Usage: python benchmarks/argmax.py [--arms 20,32,100,1000] [--rules tcb,itcb]
         [--rounds 6]
"""

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compiled_loop import INSTANCES  # noqa: E402
from step_profile import setup  # noqa: E402

import jbai  # noqa: E402
from jbai import ties  # noqa: E402
from jbai.host import programs  # noqa: E402

LANES, REPS = 16, 2000


def best_seconds(fn, *args, rounds=5):
  jax.block_until_ready(fn(*args))  # compiles
  best = np.inf
  for _ in range(rounds):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    best = min(best, time.perf_counter() - t0)
  return best


def per_element_ns(argmax, num):
  """ns per element of `argmax` vmapped over LANES rows of num values, in a loop
  whose every iteration moves the values (so none is hoisted)."""
  x = jax.random.normal(jax.random.key(0), (LANES, num))

  def body(_, c):
    return c + jax.vmap(argmax)(x + c[:, None] * 1e-7).astype(jnp.float32)

  loop = jax.jit(lambda: jax.lax.fori_loop(0, REPS, body, jnp.zeros(LANES)))
  return 1e9 * best_seconds(loop) / (REPS * LANES * num)


def step_ns(rule, instance, rounds):
  """(split off, split on): ns per lane-step of the chunk program, timed in turn."""
  family, means = INSTANCES[instance]
  split, variants = ties.SPLIT_AT, []
  for at in (10**9, split):
    ties.SPLIT_AT = at  # read when the program is traced
    programs.chunk_program.cache_clear()
    fn, pool, config, total = setup(jbai.families.get(family), jbai.rules.get(rule), means,
                                    LANES, 1, 1e-30, chunk=64)
    variants.append([fn.lower(pool, config, total).compile(), pool, config, total])
  ties.SPLIT_AT = split
  best = [np.inf, np.inf]
  for v in variants:
    v[1] = jax.block_until_ready(v[0](*v[1:]))
  for _ in range(rounds):
    for i, v in enumerate(variants):
      t0 = time.perf_counter()
      v[1] = jax.block_until_ready(v[0](*v[1:]))
      steps = int(jnp.max(v[1].steps))
      best[i] = min(best[i], 1e9 * (time.perf_counter() - t0) / (steps * LANES))
  return best


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--arms", default="20,32,100,1000")
  parser.add_argument("--rules", default="tcb,itcb")
  parser.add_argument("--rounds", type=int, default=6, help="timed calls per program")
  args = parser.parse_args()
  print(f"arg-max over {LANES} lanes, ns per element ({jax.devices()[0].device_kind})")
  print(f"{'K':>6} {'jnp.argmax':>11} {'ties.argmax':>12} {'ratio':>6}")
  for num in map(int, args.arms.split(",")):
    plain = per_element_ns(lambda v: jnp.argmax(v), num)
    split = per_element_ns(ties.argmax, num)
    print(f"{num:>6} {plain:>11.2f} {split:>12.2f} {split / plain:>6.2f}", flush=True)
  print(f"\nchunk program, {LANES} lanes, ns per lane-step")
  print(f"{'rule':>6} {'instance':>14} {'split off':>10} {'split on':>9} {'ratio':>6}")
  for rule in args.rules.split(","):
    for instance in ("gaussian-100", "gaussian-1000"):
      off, on = step_ns(rule, instance, args.rounds)
      print(f"{rule:>6} {instance:>14} {off:>10.0f} {on:>9.0f} {on / off:>6.2f}", flush=True)


if __name__ == "__main__":
  main()
