"""Throughput of the simulation engine.

Prints, from one run (float32, on the default JAX device):
  1. useful trial-steps per second and lane utilisation of jbai with lane
     recycling, of jbai as a plain vmap over trials (one lane per trial, no
     recycling), and of a plain per-trial Python/NumPy loop (benchmarks/plain_loop.py),
     for TCB, ITCB and EB-TCI on Gaussian [1.2, 1, 1, 1, 1] and Bernoulli
     [0.8, 0.5, 0.3, 0.29, 0.06] at delta = 1e-8 with 2000 trials, with the ratios;
  2. the per-step cost against K (5, 50, 500, 5000 arms);
  3. the engine's working memory against n_trials.

Usage: python benchmarks/throughput.py [--trials 2000] [--quick]
"""

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain_loop  # noqa: E402

import jbai  # noqa: E402
from jbai.core import pool as pool_lib  # noqa: E402
from jbai.core.lane import Config  # noqa: E402
from jbai.host import programs  # noqa: E402

INSTANCES = [("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0]),
             ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06])]
RULES = ["tcb", "itcb", "ebtci"]
DELTA = 1e-8


def jbai_run(family, means, rule, trials, plain=False):
  """jbai's throughput once its program is compiled (a one-step run compiles it;
  the tail's smaller pool, if any, compiles during the run, and that chunk is left
  out of the timing): useful trial-steps per second, lane utilisation, and the
  result. plain=True: one lane per trial, no recycling and no shrinking of the
  pool (a plain vmap over trials)."""
  kwargs = dict(lanes=trials, shrink=None) if plain else {}
  jbai.simulate(jax.random.key(0), family, means, rule, DELTA, trials, max_steps=1, **kwargs)
  res = jbai.simulate(jax.random.key(0), family, means, rule, DELTA, trials, **kwargs)
  st = res.stats
  return st["timed_useful_steps"] / st["wall_seconds"], st["utilisation"], res


def plain_run(family, means, rule, budget_s):
  """Trials of the NumPy loop until budget_s seconds are spent: steps per second."""
  steps, t0, seed = 0, time.perf_counter(), 0
  while time.perf_counter() - t0 < budget_s:
    tau, _ = plain_loop.run_trial(rule, family, means, DELTA, seed)
    steps += tau
    seed += 1
  return steps / (time.perf_counter() - t0), seed


def per_step_cost(num_arms, lanes=64, seconds=2.0, rule="tcb"):
  """Microseconds per lane-step of a rule on a Gaussian slippage instance with K
  arms (delta tiny so that no trial stops while timing), and the pool's bytes."""
  family, thr = jbai.families.gaussian(), jbai.thresholds.gk16()
  rule = jbai.rules.get(rule)
  means = np.full(num_arms, 1.0)
  means[0] = 1.2
  devices = tuple(jax.local_devices())
  fn, sharding = programs.chunk_program(family, rule.program(), thr, num_arms, 1, lanes, 256,
                                        devices)
  config = Config(key=jax.random.key_data(jax.random.key(0)),
                  means=jnp.asarray(means[None], jnp.float32),
                  n_trials=jnp.asarray(10**6, jnp.int32),
                  max_steps=jnp.asarray(10**8, jnp.int32),
                  thr_params=thr.init(jnp.asarray([1e-30], jnp.float32), num_arms),
                  rule_state=rule.init(num_arms))
  pool = pool_lib.initial_pool(family, rule, config, num_arms, 1, lanes)
  pool = jax.device_put(jax.tree.map(lambda x: jnp.broadcast_to(x, (len(devices),) + x.shape),
                                     pool), sharding)
  total = jnp.asarray(10**6, jnp.int32)
  pool = jax.block_until_ready(fn(pool, config, total))  # compile and warm up
  steps, t0 = 0, time.perf_counter()
  while time.perf_counter() - t0 < seconds:
    pool = jax.block_until_ready(fn(pool, config, total))
    steps += int(jnp.sum(pool.steps))
  dt = time.perf_counter() - t0
  pool_bytes = sum(x.nbytes for x in jax.tree.leaves(pool.lanes))
  return dt / (steps * lanes) * 1e6, pool_bytes


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--trials", type=int, default=2000)
  parser.add_argument("--plain-seconds", type=float, default=20.0)
  parser.add_argument("--quick", action="store_true", help="one rule, one instance")
  args = parser.parse_args()
  print(f"device: {jax.devices()[0].device_kind} x{jax.local_device_count()}, "
        f"jax {jax.__version__}, dtype {jnp.zeros(()).dtype}")
  print(f"\n1. Throughput at delta = {DELTA:g}, {args.trials} trials (useful trial-steps/s)")
  head = (f"{'rule':<6} {'instance':<10} {'recycled':>10} {'util':>5} {'plain vmap':>11} "
          f"{'util':>5} {'numpy loop':>11} {'x vmap':>7} {'x numpy':>8} {'mean tau':>9}")
  print(head)
  for family, means in INSTANCES[:1] if args.quick else INSTANCES:
    for rule in RULES[:1] if args.quick else RULES:
      rec, util, res = jbai_run(family, means, rule, args.trials)
      vm, vutil, _ = jbai_run(family, means, rule, args.trials, plain=True)
      plain, n_plain = plain_run(family, means, rule, args.plain_seconds)
      print(f"{rule:<6} {family:<10} {rec:>10.3g} {util:>5.2f} {vm:>11.3g} {vutil:>5.2f} "
            f"{plain:>11.3g} {rec / vm:>7.2f} {rec / plain:>8.0f} {res.tau.mean():>9.0f}",
            flush=True)
  print(f"   (numpy loop timed on the trials that fit in {args.plain_seconds:g} s)")
  print("\n2. Per-step cost of TCB against K (64 lanes, Gaussian slippage)")
  print(f"{'K':>6} {'us/lane-step':>13} {'per arm (ns)':>13} {'pool bytes':>11}")
  for k in [5, 50, 500, 5000]:
    us, nbytes = per_step_cost(k)
    print(f"{k:>6} {us:>13.3f} {1e3 * us / k:>13.2f} {nbytes:>11}", flush=True)
  print("\n3. Working memory (lane pool) does not depend on n_trials:")
  for n in [100, 10_000]:
    tcb = jbai.rules.tcb()
    pool = pool_lib.initial_pool(jbai.families.gaussian(), tcb, Config(
        key=jax.random.key_data(jax.random.key(0)), means=jnp.ones((1, 5)),
        n_trials=jnp.asarray(n), max_steps=jnp.asarray(10), thr_params=None,
        rule_state=tcb.init(5)), 5, 1, 64)
    print(f"   n_trials={n:>6}: pool of 64 lanes = "
          f"{sum(x.nbytes for x in jax.tree.leaves(pool))} bytes")


if __name__ == "__main__":
  main()
