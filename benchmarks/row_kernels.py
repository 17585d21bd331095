"""What one XLA:CPU kernel over a pool's [lanes, K] array costs, against K.

A step of the pool is a few dozen kernels, most of them elementwise maps and
reductions over [lanes, K] arrays (K arms a lane). This times the simplest ones,
each alone in a `lax.fori_loop` of 512 iterations (best of 5 calls, ns per lane
an iteration), for each K:
  - "map": x * 0.999 + 1e-3 on [lanes, K];
  - "flat": the same map on the same data laid out as [lanes * K];
  - "lanes minor": the same map on [K, lanes];
  - "max": x + 1e-3 * max over the arms (a row reduction, broadcast back);
  - "masked sum": x + 1e-3 * sum(where(x > 0.5, x, 0)) over the arms.
The map's cost per element should not depend on the shape; where "map" is well
above "flat", the kernel's loop over the arms is what costs.

Usage: python benchmarks/row_kernels.py [--lanes 256] [--arms 5,8,9,12,16,20,32,64,128]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

ITERS = 512


def ns_per_lane(f, x, lanes: int, rounds: int = 5) -> float:
  loop = jax.jit(lambda x: jax.lax.fori_loop(0, ITERS, lambda i, x: f(x), x))
  x = jax.block_until_ready(loop(x))  # compiles
  best = np.inf
  for _ in range(rounds):
    t0 = time.perf_counter()
    x = jax.block_until_ready(loop(x))
    best = min(best, time.perf_counter() - t0)
  return 1e9 * best / (ITERS * lanes)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--lanes", type=int, default=256)
  parser.add_argument("--arms", default="5,8,9,12,16,20,32,64,128")
  args = parser.parse_args()
  lanes = args.lanes
  mapped = lambda x: x * 0.999 + 1e-3
  kernels = {
      "map": (mapped, lambda k: (lanes, k)),
      "flat": (mapped, lambda k: (lanes * k,)),
      "lanes minor": (mapped, lambda k: (k, lanes)),
      "max": (lambda x: x + 1e-3 * jnp.max(x, axis=1, keepdims=True), lambda k: (lanes, k)),
      "masked sum": (lambda x: x + 1e-3 * jnp.sum(jnp.where(x > 0.5, x, 0.0), axis=1,
                                                  keepdims=True), lambda k: (lanes, k)),
  }
  print(f"ns per lane an iteration, {lanes} lanes, float32, {jax.devices()[0].device_kind}")
  print(f"{'K':>5} " + " ".join(f"{name:>12}" for name in kernels) + f" {'map / flat':>11}")
  rng = np.random.default_rng(0)
  for k in map(int, args.arms.split(",")):
    row = {name: ns_per_lane(f, jnp.asarray(rng.random(shape(k)), jnp.float32), lanes)
           for name, (f, shape) in kernels.items()}
    print(f"{k:>5} " + " ".join(f"{row[name]:>12.2f}" for name in kernels)
          + f" {row['map'] / row['flat']:>11.1f}", flush=True)


if __name__ == "__main__":
  main()
