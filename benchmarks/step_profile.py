"""Where a step of the pool goes: time per lane-step against the pool width and the
steps per loop iteration (`unroll`), with and without refills, and the kernels of
the compiled chunk.

For a rule on Gaussian [1.2, 1, 1, 1, 1] (or another instance), compiles the chunk
program of `jbai.host.programs` for each (lanes, unroll) and times it:
  - "steady": delta = 1e-30 so that no trial stops: the steps alone (no refill);
  - "real": delta = 1e-8, trials end and the refills run.
The programs are timed in turn, best of --rounds calls of 512 steps each (the
machine's load then hits them alike). It prints ns per lane-step (per device),
useful steps per second (all devices), and from the compiled HLO
(`.compile().as_text()`) the number of fusions (XLA:CPU kernels) in the while
loop's body, counted once. With --devices N, a pool on each of N CPU devices
(`jbai.use_cpu_cores`), run side by side.

Usage: python benchmarks/step_profile.py [--rule tcb] [--lanes 16,64,256,1024]
         [--unroll 1,8] [--rounds 10] [--devices 1]
"""

import argparse
import os
import re
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compiled_loop import INSTANCES  # noqa: E402

import jbai  # noqa: E402
from jbai.core import pool as pool_lib  # noqa: E402
from jbai.core.lane import Config  # noqa: E402
from jbai.host import programs  # noqa: E402


def setup(family, rule, means, lanes, unroll, delta, chunk=512, n_devices=1):
  thr = jbai.thresholds.gk16()
  num_arms = len(means)
  devices = tuple(jax.local_devices()[:n_devices])
  fn, sharding = programs.chunk_program(family, rule.program(), thr, num_arms, 1, lanes,
                                        chunk, devices, False, unroll)
  config = Config(key=jax.random.key_data(jax.random.key(0)),
                  means=jnp.asarray(np.asarray(means)[None], jnp.float32),
                  n_trials=jnp.asarray(10**7, jnp.int32),
                  max_steps=jnp.asarray(10**8, jnp.int32),
                  thr_params=thr.init(jnp.asarray([delta], jnp.float32), num_arms),
                  rule_state=rule.init(num_arms))
  pool = pool_lib.initial_pool(family, rule, config, num_arms, 1, lanes)
  pool = jax.device_put(jax.tree.map(lambda x: jnp.stack([x] * n_devices), pool), sharding)
  return fn, pool, config, jnp.asarray(10**7, jnp.int32)


def lane_step_ns(programs_, rounds):
  """Per program (fn, pool, config, total, lanes): the best over `rounds` calls,
  taken in turn so that the machine's load hits every program alike, of ns per
  lane-step, and the useful fraction of its lane-steps."""
  pools = [jax.block_until_ready(fn(pool, config, total))  # compiles, warms up
           for fn, pool, config, total, _ in programs_]
  best = [np.inf] * len(programs_)
  useful = [0.0] * len(programs_)
  for _ in range(rounds):
    for i, (fn, _, config, total, lanes) in enumerate(programs_):
      t0 = time.perf_counter()
      pools[i] = jax.block_until_ready(fn(pools[i], config, total))
      dt = time.perf_counter() - t0
      steps = int(jnp.max(pools[i].steps))  # per device: they run side by side
      best[i] = min(best[i], 1e9 * dt / (steps * lanes))
      useful[i] = int(jnp.sum(pools[i].useful)) / (steps * lanes * pools[i].steps.shape[0])
  return best, useful


def kernels(fn, pool, config, total):
  """(fusions in the whole program, in its largest computation: the loop's body),
  from the compiled HLO text; each computation is counted once."""
  text = fn.lower(pool, config, total).compile().as_text()
  comps = re.split(r"\n(?=[%A-Z])", text)
  counts = [len(re.findall(r" fusion\(", c)) for c in comps]
  return sum(counts), max(counts)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rule", default="tcb")
  parser.add_argument("--instance", default="gaussian-5")
  parser.add_argument("--lanes", default="16,64,256,1024")
  parser.add_argument("--unroll", default="1,8")
  parser.add_argument("--rounds", type=int, default=10, help="timed calls per program")
  parser.add_argument("--devices", type=int, default=1,
                      help="CPU devices, a pool of --lanes on each (jbai.use_cpu_cores)")
  args = parser.parse_args()
  if args.devices > 1:
    jbai.use_cpu_cores(args.devices)
  family_name, means = INSTANCES[args.instance]
  family, rule = jbai.families.get(family_name), jbai.rules.get(args.rule)
  print(f"{args.rule} on {args.instance}, {jax.devices()[0].device_kind}")
  print(f"{'lanes':>6} {'unroll':>6} {'steady ns':>10} {'real ns':>8} {'useful':>7} "
        f"{'real useful/s':>13} {'fusions':>8} {'in body':>8}")
  cases = [(lanes, unroll) for lanes in map(int, args.lanes.split(","))
           for unroll in map(int, args.unroll.split(","))]
  steady = [setup(family, rule, means, n, u, 1e-30, n_devices=args.devices) + (n,)
            for n, u in cases]
  real = [setup(family, rule, means, n, u, 1e-8, n_devices=args.devices) + (n,)
          for n, u in cases]
  ns_s, _ = lane_step_ns(steady, args.rounds)
  ns_r, frac = lane_step_ns(real, args.rounds)
  for i, (lanes, unroll) in enumerate(cases):
    n_all, n_body = kernels(*steady[i][:4])
    print(f"{lanes:>6} {unroll:>6} {ns_s[i]:>10.0f} {ns_r[i]:>8.0f} {frac[i]:>7.2f} "
          f"{frac[i] / ns_r[i] * 1e9 * args.devices:>13.3g} {n_all:>8} {n_body:>8}",
          flush=True)

if __name__ == "__main__":
  main()
