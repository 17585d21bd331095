"""The cost of the scores in a run to a budget: `jbai.estimate` against `jbai.budget`.

Uniform sampling to a budget on Bernoulli and Gaussian arms (K = 5), its programs
compiled before timing: `jbai.budget` takes each arm's share of the next
checkpoint in one step (`jbai.core.blocks.share`); `jbai.estimate`, whose scores
need a reward a step, reads the same block a reward at a time, a descent of
about log2(the arm's share) conditional splits a reward (hypergeometric on
Bernoulli arms, normal on Gaussian ones). Prints the seconds of each and their
ratio, in one process.

Usage: python benchmarks/budget_scores.py [--trials 1000] [--budget 2000]
"""

import argparse
import time

import jax

import jbai

INSTANCES = {"bernoulli": [0.5, 0.45, 0.43, 0.4, 0.3], "gaussian": [0.5, 0.4, 0.35, 0.3, 0.2]}


def seconds(run) -> float:
  """Wall seconds of `run()`, its programs compiled by a first call."""
  run()
  t0 = time.perf_counter()
  run()
  return time.perf_counter() - t0


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=1000)
  parser.add_argument("--budget", type=int, default=2000)
  args = parser.parse_args()
  key = jax.random.key(0)
  print(f"uniform, K = 5, {args.trials} trials to {args.budget}: seconds")
  print(f"{'family':<10} {'budget':>8} {'estimate':>9} {'ratio':>7}")
  for family, means in INSTANCES.items():
    plain = seconds(lambda: jbai.budget(key, family, means, "uniform", args.budget,
                                        args.trials, checkpoints=[args.budget]))
    scored = seconds(lambda: jbai.estimate(key, family, means, "uniform", None, args.trials,
                                           budget=args.budget))
    print(f"{family:<10} {plain:>8.2f} {scored:>9.2f} {scored / plain:>7.1f}", flush=True)


if __name__ == "__main__":
  main()
