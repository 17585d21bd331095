"""E[tau] of a rule with the variances told against estimated, as delta shrinks.

On one instance (default means 1, 0.8, 0.5, 0.3 and sigma 1, 0.3, 2, 1), runs --rule
(default tcb) on the three models of Gaussian arms with a sigma per arm
(`jbai.variance.families`): gaussian-het with `kk` (sigma told), gaussian-ev with `ev`
and gaussian-uv with `uv` (sigma estimated), each trajectory recording the first
crossing of every delta. Prints per model and delta the mean tau with its 95%
half-width, the error rate, T* log(1/delta) of the model (T*_known for het and ev,
T*_uv for uv) and their ratio, and the steps per second of the run.

Usage: python benchmarks/unknown_variance.py [--trials 300] [--rule tcb]
                                             [--deltas 0.1,0.01,1e-4]
"""

import argparse
import time

import jax
import numpy as np

import jbai
from jbai.variance import families

MEANS = [1.0, 0.8, 0.5, 0.3]
SIGMA = (1.0, 0.3, 2.0, 1.0)


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--trials", type=int, default=300)
  p.add_argument("--rule", default="tcb")
  p.add_argument("--deltas", default="0.1,0.01,1e-4")
  args = p.parse_args()
  deltas = [float(d) for d in args.deltas.split(",")]
  models = [("gaussian-het", families.known_sigma(SIGMA), "kk"),
            ("gaussian-ev", families.unknown_sigma(SIGMA, "ev"), "ev"),
            ("gaussian-uv", families.unknown_sigma(SIGMA, "uv"), "uv")]
  print(f"rule {args.rule}, means {MEANS}, sigma {list(SIGMA)}, {args.trials} trials")
  print(f"{'model':<13} {'stop':<4} {'delta':>7} {'mean tau':>17} {'error':>6} "
        f"{'T* log(1/d)':>11} {'ratio':>6}")
  for name, family, stop in models:
    t0 = time.perf_counter()
    res = jbai.simulate(jax.random.key(0), family, MEANS, args.rule, deltas, args.trials,
                        threshold=stop)
    seconds = time.perf_counter() - t0
    for d, row in zip(deltas, res.summary):
      half = 0.5 * (row["tau_ci95"][1] - row["tau_ci95"][0])
      print(f"{name:<13} {stop:<4} {d:>7.0e} {row['mean_tau']:>9.0f} +- {half:>5.0f} "
            f"{row['error_rate']:>6.3f} {row['t_star_log']:>11.1f} {row['ratio']:>6.2f}")
    steps = int(np.sum(np.asarray(res.tau)[..., -1] if np.ndim(res.tau) > 1 else res.tau))
    print(f"{'':<13} ({seconds:.1f} s with compilation, {steps / seconds:.3g} steps/s)")


if __name__ == "__main__":
  main()
