"""Variance of the gradient estimators of E[tau] at equal simulated steps.

For each case, one run of n trials with scores gives both likelihood-ratio
estimators from the same trials ("causal", the default of `jbai.estimate`, and
"score", the whole score with a leave-one-out baseline), and
`jbai.finite_difference` (central differences with common random numbers, two
runs of n trials at beta +- h) the reference in beta. Costs differ, so each
standard error is compared at equal simulated steps: the efficiency of an
estimate is se^2 x steps (the variance it would have with one simulated step),
and a ratio of standard errors at equal steps is sqrt of the ratio of
efficiencies. Printed: the standard errors, and

  FD/causal   finite difference's se over the causal one's, at equal steps (> 1:
              the causal estimator is better; the target in beta is >= 1)
  var ratio   score's variance over causal's, same trials, pooled over --keys
              runs (the target in the means is >= 4; the median over the arms,
              and the smallest)

  python benchmarks/gradients.py [--trials 2000] [--h 0.1] [--keys 4]
"""

import argparse
import math

import jax
import numpy as np

import jbai
from jbai.core.estimators import monte_carlo

BETA_CASES = [  # (family, means): T3C and EB-TCI, beta = 0.5, K = 5
    ("bernoulli", [0.6, 0.5, 0.45, 0.4, 0.3]),
    ("gaussian", [1.0, 0.6, 0.5, 0.4, 0.2]),
]
MEANS_CASES = [  # (family, means, rule): K = 5 and K = 20
    ("gaussian", [1.0, 0.6, 0.5, 0.4, 0.2], "t3c"),
    ("bernoulli", [0.6, 0.5, 0.45, 0.4, 0.3], "ebtci"),
    ("gaussian", [1.0] + list(np.linspace(0.5, 0.0, 19)), "t3c"),
]
DELTAS = [1e-2, 1e-6]


def lr(key, family, means, rule, trials):
  """Both likelihood-ratio estimators from one run: ({estimator: moments}, steps)."""
  res = jbai.rollout(key, family, np.asarray(means), rule, DELTAS, trials, scores=True)
  moments = {e: jax.tree.map(np.asarray, monte_carlo(res, False, estimator=e))
             for e in ("causal", "score")}
  return moments, int(np.sum(res.steps))


def beta_table(trials: int, h: float, seed: int) -> list:
  rows = []
  for c, (family, means) in enumerate(BETA_CASES):
    for r, name in enumerate(("t3c", "ebtci")):
      rule = jbai.rules.get(name, beta=0.5)
      key = jax.random.key(seed + 10 * c + r)
      moments, steps = lr(key, family, means, rule, trials)
      fd = jbai.finite_difference(jax.random.fold_in(key, 1), family, np.asarray(means), rule,
                                  DELTAS, trials, wrt="beta", h=h)
      fd_steps = int(fd.simulated_steps)
      for d, delta in enumerate(DELTAS):
        se = {e: float(moments[e]["tau"][3]["beta"][d]) for e in moments}
        g = {e: float(moments[e]["tau"][2]["beta"][d]) for e in moments}
        fd_se = float(fd.mean_tau_se[d])
        eff = lambda s, n: s * s * n
        rows.append({
            "family": family, "rule": name, "delta": delta,
            "causal": (g["causal"], se["causal"]), "score": (g["score"], se["score"]),
            "fd": (float(fd.mean_tau[d]), fd_se),
            "fd_over_causal": math.sqrt(eff(fd_se, fd_steps) / eff(se["causal"], steps)),
            "fd_over_score": math.sqrt(eff(fd_se, fd_steps) / eff(se["score"], steps)),
            "steps": steps, "fd_steps": fd_steps})
  return rows


def means_table(trials: int, seed: int, keys: int) -> list:
  """Per case and delta: each arm's variance ratio pooled over `keys` runs (the
  sum of the score estimator's se^2 over the sum of the causal one's; the
  per-trial terms are heavy-tailed, a few long trials weigh on one run's ratio),
  its median and smallest over the arms, and the range of one run's median."""
  rows = []
  for c, (family, means, name) in enumerate(MEANS_CASES):
    rule = jbai.rules.get(name, beta=0.5)
    var = [{e: 0.0 for e in ("score", "causal")} for _ in DELTAS]
    medians, steps = [[] for _ in DELTAS], 0
    for j in range(keys):
      key = jax.random.fold_in(jax.random.key(seed + 100 + c), j)
      moments, n = lr(key, family, means, rule, trials)
      steps += n
      for d in range(len(DELTAS)):
        se2 = {e: moments[e]["tau"][3]["means"][d] ** 2 for e in moments}
        medians[d].append(float(np.median(se2["score"] / se2["causal"])))
        for e in se2:
          var[d][e] = var[d][e] + se2[e]
    for d, delta in enumerate(DELTAS):
      ratio = var[d]["score"] / var[d]["causal"]
      rows.append({"family": family, "rule": name, "K": len(means), "delta": delta,
                   "median": float(np.median(ratio)), "min": float(np.min(ratio)),
                   "runs": (min(medians[d]), max(medians[d])), "steps": steps})
  return rows


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=2000)
  parser.add_argument("--h", type=float, default=0.1)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--keys", type=int, default=4, help="runs pooled in the means' table")
  args = parser.parse_args()
  print(f"dE[tau]/dbeta at beta = 0.5, {args.trials} trials per run; FD: h = {args.h}, "
        f"two runs of {args.trials} trials; se at equal steps compared by se^2 x steps")
  print("| family | rule | delta | causal (se) | score (se) | FD, CRN (se) | "
        "FD/causal at equal steps | FD/score at equal steps |")
  print("|---|---|---|---|---|---|---|---|")
  for r in beta_table(args.trials, args.h, args.seed):
    print(f"| {r['family']} | {r['rule']} | {r['delta']:g} | {r['causal'][0]:.4g} "
          f"({r['causal'][1]:.3g}) | {r['score'][0]:.4g} ({r['score'][1]:.3g}) | "
          f"{r['fd'][0]:.4g} ({r['fd'][1]:.3g}) | {r['fd_over_causal']:.2f} | "
          f"{r['fd_over_score']:.2f} |")
  print()
  print(f"dE[tau]/dmu, {args.keys} runs of {args.trials} trials: variance of score over "
        "causal, same trials, pooled over the runs")
  print("| family | rule | K | delta | var ratio, median over arms | smallest | one run's "
        "median, range over the runs |")
  print("|---|---|---|---|---|---|---|")
  for r in means_table(args.trials, args.seed, args.keys):
    print(f"| {r['family']} | {r['rule']} | {r['K']} | {r['delta']:g} | {r['median']:.2f} | "
          f"{r['min']:.2f} | {r['runs'][0]:.2f} to {r['runs'][1]:.2f} |")
