"""Posterior draws per second: jbai.random.samplers against jax.random, under vmap.

A Thompson-sampling step draws one Beta (Bernoulli arms) or Gamma (Poisson,
exponential, Weibull arms) per arm for every lane. This times that draw alone:
`lanes` lanes of K arms, vmapped over the lanes' keys, inside a lax.scan of
`steps` steps whose posterior parameters change every step (as a trial's do), in
float32, and prints microseconds per step of all the lanes and the ratio of
jax.random's sampler (jax.random.beta / gamma, a rejection loop per element) to
jbai's (a fixed number of rounds for every element, then a loop that runs only
when some element needs it; jbai.random.samplers), measured in the same process.

Usage: python benchmarks/samplers.py [--lanes 32,512] [--arms 5,20] [--steps 2000]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from jbai.random import prng, samplers

# Shapes >= 1, as a conjugate posterior's: the families' call (at_least_one), and
# the general one, which also handles shapes below 1 ("-any").
SAMPLERS = {
    "beta": (lambda key, a, b: samplers.beta(key, a, b, at_least_one=True), jax.random.beta),
    "beta-any": (samplers.beta, jax.random.beta),
    "gamma": (lambda key, a, b: samplers.gamma(key, a, at_least_one=True),
              lambda key, a, b: jax.random.gamma(key, a)),
    "gamma-any": (lambda key, a, b: samplers.gamma(key, a),
                  lambda key, a, b: jax.random.gamma(key, a)),
}


def step_time(draw, lanes, arms, steps, repeats=5):
  """Seconds per step of `lanes` vmapped draws of `arms` parameters (best of repeats)."""
  rng = np.random.default_rng(0)
  a = jnp.asarray(rng.uniform(1, 3000, (lanes, arms)), jnp.float32)
  b = jnp.asarray(rng.uniform(1, 3000, (lanes, arms)), jnp.float32)

  @jax.jit
  def run(key):
    def body(total, i):
      shift = (i % 7).astype(jnp.float32)  # parameters that change every step
      keys = jax.random.split(jax.random.fold_in(key, i), lanes)
      x = jax.vmap(draw)(keys, a + shift, b + shift)
      return total + jnp.sum(x), None
    return jax.lax.scan(body, jnp.zeros(()), jnp.arange(steps))[0]

  # The engine's keys: jbai's threefry (jax's numbers, a fused lowering on CPU).
  key = lambda seed: prng.wrap(jax.random.key_data(jax.random.key(seed)))
  run(key(0)).block_until_ready()
  best = np.inf
  for seed in range(1, repeats + 1):
    start = time.perf_counter()
    run(key(seed)).block_until_ready()
    best = min(best, time.perf_counter() - start)
  return best / steps


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--lanes", default="32,512")
  parser.add_argument("--arms", default="5,20")
  parser.add_argument("--steps", type=int, default=2000)
  args = parser.parse_args()
  print(f"device {jax.devices()[0].platform}, float32, {args.steps} steps, "
        "parameters 1 to 3000 changing every step")
  print(f"{'sampler':9s} {'lanes':>6s} {'arms':>5s} {'jbai us/step':>13s} "
        f"{'jax.random us/step':>19s} {'jax.random / jbai':>18s}")
  for name, (ours, theirs) in SAMPLERS.items():
    for lanes in map(int, args.lanes.split(",")):
      for arms in map(int, args.arms.split(",")):
        t_ours = step_time(ours, lanes, arms, args.steps)
        t_theirs = step_time(theirs, lanes, arms, args.steps)
        print(f"{name:9s} {lanes:6d} {arms:5d} {t_ours * 1e6:13.2f} {t_theirs * 1e6:19.2f} "
              f"{t_theirs / t_ours:18.1f}", flush=True)
