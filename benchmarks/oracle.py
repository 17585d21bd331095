"""Throughput of the oracle: w(nu) and Gamma(nu) for a batch of instances.

Prints, from one run (float64, on the default JAX device), instances per second of
  * jbai's exact solver (nested bisection, jit + vmap),
  * jbai's optax solver (projected mirror ascent, jit + vmap),
  * a plain per-instance SciPy loop: the construction of Garivier & Kaufmann
    (2016) with nested `scipy.optimize.brentq`, written below,
on 10,000 random Gaussian and Bernoulli instances with K = 10 arms, with the
ratios to the SciPy loop and each solver's largest |w - w_exact|. The SciPy loop
is timed on the first `SCIPY_SUBSET` instances and extrapolated (it says so).
Compilation is timed separately and excluded from the rates.

Usage: python benchmarks/oracle.py [--instances 10000] [--arms 10] [--scipy-subset 300]
"""

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import brentq  # noqa: E402

import jbai  # noqa: E402
from jbai import oracle  # noqa: E402

SEED = 0


# ----------------------------------------------------------------- SciPy reference
def kl_gaussian(p, q):
  return 0.5 * (p - q) ** 2


def kl_bernoulli(p, q):
  eps = 1e-15
  q = min(max(q, eps), 1 - eps)
  out = 0.0
  if p > 0:
    out += p * np.log(p / q)
  if p < 1:
    out += (1 - p) * np.log((1 - p) / (1 - q))
  return out


def scipy_allocation(kl, means):
  """w(nu) of one instance: Garivier & Kaufmann (2016), nested brentq."""
  means = np.asarray(means, float)
  a = int(np.argmax(means))
  mu_a = means[a]
  others = [i for i in range(means.size) if i != a]

  def point(x, mu_i):  # transport minimiser of KL(mu_a, m) + x KL(mu_i, m)
    return (mu_a + x * mu_i) / (1 + x)

  def g(x, mu_i):
    m = point(x, mu_i)
    return kl(mu_a, m) + x * kl(mu_i, m)

  def x_of_y(y, mu_i):
    hi = 1.0
    while g(hi, mu_i) < y:
      hi *= 2
    return brentq(lambda x: g(x, mu_i) - y, 0.0, hi, xtol=1e-14, rtol=1e-15)

  def f(y):
    total = 0.0
    for i in others:
      m = point(x_of_y(y, means[i]), means[i])
      total += kl(mu_a, m) / kl(means[i], m)
    return total - 1

  # F rises from -1 at y = 0 to +inf at y_max = min_i KL(mu_a, mu_i); bracket the
  # root away from y_max, where KL(mu_i, m_i) is lost in rounding.
  y_max = min(kl(mu_a, means[i]) for i in others)
  lo, hi = 0.0, 0.5 * y_max
  while f(hi) < 0:
    lo, hi = hi, 0.5 * (hi + y_max)
  y = brentq(f, lo, hi, xtol=1e-15 * y_max, rtol=1e-15)
  x = np.ones(means.size)
  for i in others:
    x[i] = x_of_y(y, means[i])
  return x / x.sum()


# ------------------------------------------------------------------------- runs
def instances(family, n, k):
  key = jax.random.PRNGKey(SEED)
  if family.name == "gaussian":
    return jax.random.uniform(key, (n, k), minval=0.0, maxval=1.0)
  return jax.random.uniform(key, (n, k), minval=0.05, maxval=0.95)


def timed(fn, *args):
  t0 = time.perf_counter()
  out = jax.block_until_ready(fn(*args))
  return out, time.perf_counter() - t0


def run(family, kl, n, k, subset):
  means = instances(family, n, k)
  rows = []
  exact = jax.jit(lambda m: oracle.exact_solve(family, m))
  optax_ = jax.jit(lambda m: oracle.projected_solve(family, m))
  results = {}
  for name, solve in (("jbai exact (jit + vmap)", exact), ("jbai optax (jit + vmap)", optax_)):
    _, compile_s = timed(lambda m: solve.lower(m).compile(), means)
    (w, _), run_s = timed(solve, means)
    results[name] = w
    rows.append([name, n / run_s, run_s, compile_s])
  w_exact = results["jbai exact (jit + vmap)"]

  sub = np.asarray(means[:subset])
  t0 = time.perf_counter()
  w_scipy = np.stack([scipy_allocation(kl, row) for row in sub])
  scipy_s = (time.perf_counter() - t0) * n / subset
  rows.append(["scipy brentq loop (*)", n / scipy_s, scipy_s, 0.0])
  errors = [float(jnp.max(jnp.abs(results[r[0]] - w_exact))) for r in rows[:2]]
  errors.append(float(np.max(np.abs(w_scipy - np.asarray(w_exact[:subset])))))
  return rows, errors


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--instances", type=int, default=10_000)
  parser.add_argument("--arms", type=int, default=10)
  parser.add_argument("--scipy-subset", type=int, default=300)
  args = parser.parse_args()
  n, k, subset = args.instances, args.arms, min(args.scipy_subset, args.instances)
  print(f"oracle benchmark: {n:,} instances, K = {k}, float64, "
        f"device {jax.devices()[0].device_kind} ({jax.device_count()} device(s)), "
        f"jax {jax.__version__}")
  print(f"{'family':10s} {'solver':26s} {'inst/s':>10s} {'time (s)':>9s} "
        f"{'compile':>8s} {'vs scipy':>9s} {'max|w-w_exact|':>15s}")
  for family, kl in ((jbai.families.gaussian(), kl_gaussian),
                     (jbai.families.bernoulli(), kl_bernoulli)):
    rows, errors = run(family, kl, n, k, subset)
    scipy_rate = rows[-1][1]
    for (name, rate, secs, comp), err in zip(rows, errors):
      print(f"{family.name:10s} {name:26s} {rate:10.0f} {secs:9.2f} {comp:8.2f} "
            f"{rate / scipy_rate:9.1f} {err:15.1e}")
  print(f"(*) the SciPy loop was timed on the first {subset:,} instances and its time "
        f"extrapolated to {n:,}; its error column compares those {subset:,} only.")


if __name__ == "__main__":
  main()
