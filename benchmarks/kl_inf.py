"""Cost of KL_inf (`jbai.bounded.kl_inf`) and of the bounded GLR per pair and per lane.

For each grid size G, arm count K and lane count L, times one jitted call on
random histograms [L, K, G] (multinomial counts of 20 .. 400 rewards, random
levels) of
  * KL_inf^- and KL_inf^+ together (`kl_inf_pair`): ns per evaluation (one arm,
    one lane, one direction);
  * the GLR Lambda(a, b) of the empirical best a against every other arm
    (`pair_glr`, a bisection over the common mean, two KL_inf solves a step): ns
    per pair and per lane (K - 1 pairs);
and, in the same process on the same [L, K] shapes, the Bernoulli KL
(`jbai.families.bernoulli().kl`) per evaluation and the Bernoulli transport cost by
golden section per pair (`jbai.transport_cost`), with the ratios. Median of
--repeats calls after a compiling one; float32 (--x64: float64).

Usage: python benchmarks/kl_inf.py [--grids 11,101] [--arms 5,20] [--lanes 64,1024]
                                   [--repeats 20] [--x64]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jbai
from jbai import bounded


def median_seconds(fn, args, repeats):
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - t0)
  return float(np.median(times))


def inputs(rng, lanes, arms, points, dtype):
  counts = rng.multinomial(400, np.ones(points) / points, size=(lanes, arms)).astype(float)
  probs = counts / counts.sum(-1, keepdims=True)
  grid = np.arange(points) / (points - 1)
  means = probs @ grid
  mu = np.clip(means + rng.normal(0, 0.1, means.shape), 0.01, 0.99)
  n = rng.integers(20, 400, (lanes, arms)).astype(float)
  return (jnp.asarray(grid, dtype), jnp.asarray(probs, dtype), jnp.asarray(mu, dtype),
          jnp.asarray(n, dtype), jnp.asarray(means, dtype))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--grids", default="11,101")
  parser.add_argument("--arms", default="5,20")
  parser.add_argument("--lanes", default="64,1024")
  parser.add_argument("--repeats", type=int, default=20)
  parser.add_argument("--x64", action="store_true")
  args = parser.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  dtype = jnp.float64 if args.x64 else jnp.float32
  rng = np.random.default_rng(0)
  ber = jbai.families.bernoulli()

  kl_pair = jax.jit(lambda z, p, mu: [r.value for r in bounded.kl_inf_pair(z, p, p, mu)])
  ber_kl = jax.jit(lambda m, mu: ber.kl(m, mu))

  def glr(z, p, n, means):
    a = jnp.argmax(means, -1)
    pa = jnp.take_along_axis(p, a[:, None, None], 1)
    na = jnp.take_along_axis(n, a[:, None], 1)
    return bounded.pair_glr(z, na, pa, n, p).value

  def ber_glr(n, means):
    a = jnp.argmax(means, -1)
    ma = jnp.take_along_axis(means, a[:, None], 1)
    na = jnp.take_along_axis(n, a[:, None], 1)
    return jbai.transport_cost(ber, na, ma, n, means, method="golden").value

  glr, ber_glr = jax.jit(glr), jax.jit(ber_glr)
  print(f"dtype {jnp.dtype(dtype).name}, device {jax.devices()[0].platform}")
  print(f"{'G':>4} {'K':>3} {'L':>5} | {'KL_inf ns/eval':>14} {'Bern KL':>8} {'ratio':>6} | "
        f"{'GLR ns/pair':>11} {'ns/lane':>9} {'Bern golden':>11} {'ratio':>6}")
  for points in (int(g) for g in args.grids.split(",")):
    for arms in (int(k) for k in args.arms.split(",")):
      for lanes in (int(v) for v in args.lanes.split(",")):
        z, p, mu, n, means = inputs(rng, lanes, arms, points, dtype)
        evals = 2 * lanes * arms
        t_kl = median_seconds(kl_pair, (z, p, mu), args.repeats) / evals * 1e9
        t_ber = median_seconds(ber_kl, (jnp.concatenate([means, means]),
                                        jnp.concatenate([mu, mu])), args.repeats) / evals * 1e9
        pairs = lanes * (arms - 1)
        t_glr = median_seconds(glr, (z, p, n, means), args.repeats)
        t_bgl = median_seconds(ber_glr, (n, means), args.repeats)
        print(f"{points:>4} {arms:>3} {lanes:>5} | {t_kl:>14.1f} {t_ber:>8.2f} {t_kl / t_ber:>6.0f} | "
              f"{t_glr / pairs * 1e9:>11.0f} {t_glr / lanes * 1e9:>9.0f} "
              f"{t_bgl / pairs * 1e9:>11.1f} {t_glr / t_bgl:>6.0f}")


if __name__ == "__main__":
  main()
