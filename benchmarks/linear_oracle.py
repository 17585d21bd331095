"""Throughput of the linear oracle (jbai.linear.linear_solve) against SciPy per instance.

Prints, for each size (d, K), on random unit arms (Tao et al. 2018's drawn
instances) with theta ~ N(0, I), in float64 on the default JAX device:
  * jbai's batched solve of `--instances` instances (jit + vmap), seconds per
    instance, compilation timed apart and excluded;
  * SciPy's SLSQP on the epigraph form (tests/linear_reference.py), one instance at
    a time, on the first `--scipy-subset` instances, seconds per instance;
  * their ratio, the share of instances jbai certifies (gap <= 1e-6), and the
    largest relative excess of SciPy's Gamma(w) over jbai's (negative: jbai higher).
The Newton polish runs where K <= `--polish-max-k` (its Jacobian is
[2K + 2, 2K + 1]); above, the ascent alone (the table says which).

Usage: python benchmarks/linear_oracle.py [--sizes 2x3,6x20,12x100,35x1000]
         [--instances 64] [--scipy-subset 4] [--polish-max-k 100]
"""

import argparse
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from jbai.linear import linear_solve  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from linear_reference import costs, scipy_oracle  # noqa: E402


def instances(d, k, n, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, k, d))
  x /= np.linalg.norm(x, axis=-1, keepdims=True)
  return x, rng.normal(size=(n, d))


def row(d, k, n, subset, polish_max_k):
  x, theta = instances(d, k, n)
  polish = k <= polish_max_k
  t0 = time.perf_counter()
  jax.block_until_ready(linear_solve(x[:1], theta[:1], 1.0, polish=polish))
  compile_s = time.perf_counter() - t0
  jax.block_until_ready(linear_solve(x, theta, 1.0, polish=polish))  # the batch's compile
  t0 = time.perf_counter()
  sol = jax.block_until_ready(linear_solve(x, theta, 1.0, polish=polish))
  jbai_s = (time.perf_counter() - t0) / n
  t0 = time.perf_counter()
  ref = [scipy_oracle(x[i], theta[i])[0] for i in range(subset)]
  scipy_s = (time.perf_counter() - t0) / subset
  mine = [costs(x[i], theta[i], 1.0, np.asarray(sol.w[i])).min() for i in range(subset)]
  excess = max(r / m - 1 for r, m in zip(ref, mine))
  return (f"| {d} | {k} | {'yes' if polish else 'no'} | {n} | {jbai_s * 1e3:.3f} | "
          f"{scipy_s * 1e3:.1f} | {scipy_s / jbai_s:.1f} | "
          f"{float(np.mean(np.asarray(sol.converged))):.2f} | {excess:.1e} | {compile_s:.1f} |")


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sizes", default="2x3,6x20,12x100,35x1000")
  parser.add_argument("--instances", type=int, default=64)
  parser.add_argument("--scipy-subset", type=int, default=4)
  parser.add_argument("--polish-max-k", type=int, default=100)
  args = parser.parse_args()
  print(f"device: {jax.devices()[0].device_kind}; float64")
  print("| d | K | polish | instances | jbai ms/instance | SciPy ms/instance | SciPy / jbai "
        "| certified | SciPy excess | compile s |")
  print("|---|---|---|---|---|---|---|---|---|---|")
  for size in args.sizes.split(","):
    d, k = (int(v) for v in size.split("x"))
    print(row(d, k, args.instances, min(args.scipy_subset, args.instances), args.polish_max_k),
          flush=True)


if __name__ == "__main__":
  main()
