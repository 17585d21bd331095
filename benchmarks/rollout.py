"""The functional core against the host shell, and the cost of the scores.

Prints, from one run (float32, default device), useful trial-steps per second of
  * `jbai.simulate` (the host loop: chunks, progress, tail shrinking), timed on a
    second call so that nothing compiles;
  * `jbai.rollout` (the whole simulation in one compiled program), scores off;
  * `jbai.rollout` with scores (final statistics, reward and policy scores);
with the ratios rollout / simulate (target: >= 0.9) and scores-on / scores-off
step cost (target: <= 1.2). Both functions give the same per-trial results.

Usage: python benchmarks/rollout.py [--trials 2000] [--repeats 3]
"""

import argparse
import time

import jax
import numpy as np

import jbai

CASES = [  # (family, means, rule, delta)
    ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0], "tcb", 1e-8),
    ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0], "itcb", 1e-8),
    ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06], "itcb", 1e-8),
    ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06], "t3c", 1e-8),
    ("logcosh", [0.5, 0.0, -0.5], "tcb", 1e-2),
]


def simulate_rate(family, means, rule, delta, trials, repeats):
  """Best of `repeats` second calls: useful steps per second of the timed chunks."""
  rates = []
  for _ in range(repeats + 1):
    res = jbai.simulate(jax.random.key(0), family, means, rule, delta, trials)
    rates.append(res.stats["timed_useful_steps"] / res.stats["wall_seconds"])
  return max(rates[1:]), res


def rollout_rate(family, means, rule, delta, trials, repeats, scores):
  """Best of `repeats` calls after a compiling one: trial-steps per second."""
  run = jax.jit(lambda key: jbai.rollout(key, family, means, rule, delta, trials,
                                         scores=scores))
  out = jax.block_until_ready(run(jax.random.key(0)))
  best = 0.0
  for _ in range(repeats):
    t0 = time.perf_counter()
    out = jax.block_until_ready(run(jax.random.key(0)))
    best = max(best, float(np.sum(out.steps)) / (time.perf_counter() - t0))
  return best, out


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=2000)
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  print(f"device {jax.devices()[0].platform}, float32, {args.trials} trials, "
        f"best of {args.repeats}")
  print(f"{'rule':<6} {'family':<10} {'delta':>6} {'simulate':>10} {'rollout':>10} "
        f"{'+scores':>10} {'roll/sim':>9} {'scores cost':>11} {'same':>5}")
  for family, means, rule, delta in CASES:
    sim, res = simulate_rate(family, means, rule, delta, args.trials, args.repeats)
    core, out = rollout_rate(family, means, rule, delta, args.trials, args.repeats, False)
    scored, _ = rollout_rate(family, means, rule, delta, args.trials, args.repeats, True)
    same = np.array_equal(res.tau, out.tau) and np.array_equal(res.counts, out.counts)
    print(f"{rule:<6} {family:<10} {delta:>6.0e} {sim:>10.3g} {core:>10.3g} {scored:>10.3g} "
          f"{core / sim:>9.2f} {core / scored:>11.2f} {str(same):>5}", flush=True)


if __name__ == "__main__":
  main()
