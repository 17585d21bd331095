"""Time of the per-arm-variance costs and oracles of `jbai.variance`, against jbai's own.

Pair costs, one jitted call on --pairs random pairs (w_a, m_a, v_a, w_b, m_b, v_b):
jbai's Gaussian transport cost in closed form (`jbai.transport_cost`, the baseline,
known common sigma), the same by golden section (64 steps), `variance.gaussian_cost`
(known per-arm sigma, and the EV-GLR) and `variance.uv_cost` (the unknown-variance
GLR: two bisections of a cubic's sign). Oracles, one jitted call on --instances
random instances of --arms arms: jbai's exact Gaussian oracle (`jbai.oracle.exact_solve`,
the baseline), `variance.solve` (known per-arm sigma) and `variance.solve_uv` (unknown
variances). Prints the median microseconds per call over --repeats calls after a
compiling one, and each row's time over its baseline's.

Usage: python benchmarks/variance.py [--pairs 4096] [--instances 256] [--arms 5]
                                     [--repeats 50] [--x64]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jbai
from jbai import variance


def timer(fn, args, repeats):
  """Median seconds of one call of the jitted fn."""
  fn = jax.jit(fn)
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - t0)
  return float(np.median(times))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--pairs", type=int, default=4096)
  parser.add_argument("--instances", type=int, default=256)
  parser.add_argument("--arms", type=int, default=5)
  parser.add_argument("--repeats", type=int, default=50)
  parser.add_argument("--x64", action="store_true")
  args = parser.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  dtype = jnp.float64 if args.x64 else jnp.float32
  rng = np.random.default_rng(0)
  n = args.pairs
  m = np.sort(rng.uniform(-1, 1, (2, n)), axis=0)[::-1]
  w = np.exp(rng.uniform(0.0, np.log(1e4), (2, n)))
  v = rng.uniform(0.1, 10.0, (2, n))
  pair = tuple(jnp.asarray(x, dtype) for x in (w[0], m[0], v[0], w[1], m[1], v[1]))
  fam = jbai.families.gaussian()
  rows = [
      ("transport closed (baseline)",
       lambda wa, ma, va, wb, mb, vb: jbai.transport_cost(fam, wa, ma, wb, mb, "closed").value),
      ("transport golden",
       lambda wa, ma, va, wb, mb, vb: jbai.transport_cost(fam, wa, ma, wb, mb, "golden").value),
      ("variance.gaussian_cost", lambda *a: variance.gaussian_cost(*a).value),
      ("variance.uv_cost", lambda *a: variance.uv_cost(*a).value),
  ]
  print(f"device {jax.devices()[0].platform}, {jnp.dtype(dtype).name}, median of "
        f"{args.repeats} calls")
  print(f"pair costs, {n} pairs")
  base = None
  for name, fn in rows:
    us = 1e6 * timer(fn, pair, args.repeats)
    base = base or us
    print(f"  {name:<28} {us:>12.1f} us  {us / base:>8.2f} x", flush=True)
  means = jnp.asarray(rng.uniform(-1, 1, (args.instances, args.arms)), dtype)
  sigma = jnp.asarray(rng.uniform(0.3, 3.0, (args.instances, args.arms)), dtype)
  print(f"oracles, {args.instances} instances of {args.arms} arms")
  base = None
  for name, fn in [("jbai.oracle.exact_solve (baseline)",
                    lambda mu, s: jbai.oracle.exact_solve(fam, mu)[1]),
                   ("variance.solve", lambda mu, s: variance.solve(mu, s).gamma),
                   ("variance.solve_uv", lambda mu, s: variance.solve_uv(mu, s).gamma)]:
    us = 1e6 * timer(fn, (means, sigma), max(3, args.repeats // 10))
    base = base or us
    print(f"  {name:<34} {us:>12.1f} us  {us / base:>8.2f} x", flush=True)


if __name__ == "__main__":
  main()
