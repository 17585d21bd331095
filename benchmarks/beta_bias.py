"""The bias of the central finite difference in beta, measured.

For T3C and EB-TCI (beta = 0.5, K = 5, the cases of benchmarks/gradients.py), the
CRN central differences FD(h) of E[tau] at h = 0.05, 0.1 and 0.2, all from one key,
so that the differences at h and 2h share their randomness: FD(h) = g + c h^2 +
O(h^4), and (FD(2h) - FD(h)) / 3 estimates FD(h)'s bias c h^2 with a small
standard error. Prints one row per case and delta: each FD with its 95% interval,
and the bias of FD(0.1) with its interval and as a share of the gradient.

  python benchmarks/beta_bias.py [--trials 10000]
"""

import argparse

import jax
import numpy as np

import jbai
from beta_variance import crn_differences
from gradients import BETA_CASES, DELTAS

HS = (0.05, 0.1, 0.2)


def main(trials: int, seed: int = 11) -> None:
  print(f"{trials} trials per point, one key for every h; +- is 1.96 se")
  print("| family | rule | delta | " + " | ".join(f"FD({h:g})" for h in HS) +
        " | bias of FD(0.1), (FD(0.2) - FD(0.1)) / 3 |")
  print("|---|---|---|" + "---|" * (len(HS) + 1))
  for name in ("t3c", "ebtci"):
    for family, means in BETA_CASES:
      rule = jbai.rules.get(name, beta=0.5)
      key = jax.random.key(seed)
      d = {h: crn_differences(key, family, means, rule, DELTAS, trials, h)[0] for h in HS}
      ci = lambda x: 1.96 * x.std(axis=0, ddof=1) / np.sqrt(trials)
      for j, delta in enumerate(DELTAS):
        bias = (d[0.2][:, j] - d[0.1][:, j]) / 3
        cells = " | ".join(f"{d[h][:, j].mean():.0f} ± {ci(d[h][:, j]):.0f}" for h in HS)
        print(f"| {family} | {name} | {delta:g} | {cells} | {bias.mean():.1f} ± "
              f"{ci(bias):.1f} ({100 * bias.mean() / d[0.1][:, j].mean():.1f}%) |", flush=True)


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=10_000)
  main(parser.parse_args().trials)
