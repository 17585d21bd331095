"""Time of the eps-GLLR pair cost alone: `jbai.eps_transport.eps_transport`.

For each family (Bernoulli, Poisson, exponential by default) times one jitted
call on --pairs random pairs (n_a, m_a, n_b, m_b, eps) in float32 (--x64:
float64), for each method: "golden" (64 golden-section steps on the objective's
values), "bisect" (bisection on its derivative, the default for non-Gaussian
families) and "bisect-jvp" (bisection with the derivative by autodiff of the
family's kl, the route of families without the exponential-family closed form).
Prints the median microseconds per call over --repeats calls after a compiling
one, and each method's time over bisect's.

Usage: python benchmarks/eps_transport.py [--pairs 4096] [--repeats 200]
                                          [--families bernoulli,poisson] [--x64]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from jbai import families
from jbai.eps_transport import eps_transport

METHODS = ("golden", "bisect", "bisect-jvp")


def pairs(name, n, rng, dtype):
  """(n_a, m_a, n_b, m_b, eps), each [n], inside Theta of the family's defaults."""
  fam = families.get(name)
  top = 1.0 if name == "bernoulli" else 10.0
  m = rng.uniform(max(fam.lo, 0.0), top, (2, n))
  counts = np.exp(rng.uniform(0.0, np.log(1e5), (2, n)))
  eps = rng.uniform(0.0, 0.1 * top, n)
  return tuple(jnp.asarray(v, dtype) for v in (counts[0], m.max(0), counts[1], m.min(0), eps))


def timer(fam, method, args, repeats):
  """Median seconds of one call."""
  if method == "bisect-jvp":
    fam, method = fam._replace(transport_x=None), "bisect"
  fn = jax.jit(lambda *a: eps_transport(fam, *a, method=method).value)
  fn(*args).block_until_ready()
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    fn(*args).block_until_ready()
    times.append(time.perf_counter() - t0)
  return float(np.median(times))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--pairs", type=int, default=4096)
  parser.add_argument("--repeats", type=int, default=200)
  parser.add_argument("--families", default="bernoulli,poisson,exponential")
  parser.add_argument("--x64", action="store_true")
  args = parser.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  dtype = jnp.float64 if args.x64 else jnp.float32
  rng = np.random.default_rng(0)
  print(f"device {jax.devices()[0].platform}, {jnp.dtype(dtype).name}, {args.pairs} pairs, "
        f"median of {args.repeats} calls")
  print(f"{'family':<12} " + " ".join(f"{m + ' us':>14}" for m in METHODS)
        + "  golden/bisect")
  for name in args.families.split(","):
    fam = families.get(name)
    batch = pairs(name, args.pairs, rng, dtype)
    us = {m: 1e6 * timer(fam, m, batch, args.repeats) for m in METHODS}
    print(f"{name:<12} " + " ".join(f"{us[m]:>14.1f}" for m in METHODS)
          + f"  {us['golden'] / us['bisect']:>13.2f}", flush=True)


if __name__ == "__main__":
  main()
