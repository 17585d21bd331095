"""Likelihood-ratio gradients against finite differences with common random numbers.

For each case (family, means, rule, delta) and each input (every arm's mean, and
beta for a top-two rule), the likelihood-ratio gradient of E[tau] and of P(error)
from `jbai.estimate` (its default causal estimator, or --estimator score) is compared with the central difference of
`jbai.finite_difference` (both estimates with their standard errors, from
independent keys). Prints one row per comparison: z = (LR - FD) / sqrt(se_LR^2 +
se_FD^2), and the Bonferroni bound on |z| for all comparisons to hold jointly at
99%. Where no trial ends in error, both P(error) gradients are exactly 0 (z = 0) and
the row is left out of the count. With --budget, runs to a fixed budget instead
(BUDGET_CASES): the gradients of P(error) and of the simple regret at each
checkpoint. tests/test_estimate.py runs both (marked slow).

  python experiments/gradient_check.py [--trials 20000] [--estimator causal] [--budget]
"""

import math

import jax
import jax.numpy as jnp
from scipy.stats import norm

import jbai

# Each arm's own stream of rewards couples the two runs of a finite difference
# tightly, so its standard error is small, and its O(h^2) bias must be smaller
# still: E[tau] ~ 1 / gap^2 puts the secant about 2 h^2 / gap^2 above the
# tangent (2% at h = 0.02 on the gap 0.2, which 10,000 trials resolve).
CASES = [  # (family, means, rule, beta or None, finite-difference step h)
    ("gaussian", [1.0, 0.6, 0.4], "tcb", None, 0.015),
    ("bernoulli", [0.7, 0.5, 0.4], "tcb", None, 0.01),
    ("gaussian", [1.0, 0.6, 0.4], "t3c", 0.5, 0.05),
    ("bernoulli", [0.7, 0.5, 0.4], "t3c", 0.5, 0.05),
]
DELTAS = [0.1, 1e-3]
LEVEL = 0.99


# Runs to a budget (jbai.estimate's budget): P(error) and the simple regret at two
# checkpoints, on a Gaussian and a Bernoulli instance where P(error at T) is 5 to 20%.
BUDGET_CASES = [  # (family, means, rule, beta or None, h)
    ("gaussian", [1.0, 0.6, 0.4], "uniform", None, 0.05),
    ("bernoulli", [0.7, 0.5, 0.4], "tcb", None, 0.03),
    ("gaussian", [1.0, 0.6, 0.4], "t3c", 0.5, 0.1),
    ("bernoulli", [0.7, 0.5, 0.4], "t3c", 0.5, 0.1),
]
CHECKPOINTS = {"gaussian": [20, 60], "bernoulli": [50, 150]}  # the budget T last
QUANTITIES = {False: (("E[tau]", "mean_tau"), ("P(error)", "error_rate")),
              True: (("P(error)", "error_rate"), ("simple regret", "regret"))}


def comparisons(trials: int = 20_000, cases=CASES, deltas=DELTAS, seed: int = 0,
                estimator: str = "causal", budget: bool = False) -> list:
  """One row per (case, input, quantity, level): the two estimates and z. The
  levels are the deltas, or with `budget` the checkpoints of a run to a budget
  (CHECKPOINTS, the budget last): P(error) and the simple regret there."""
  rows = []
  for c, (family, means, rule_name, beta, h) in enumerate(cases):
    means = jnp.asarray(means)
    rule = jbai.rules.get(rule_name) if beta is None else jbai.rules.get(rule_name, beta=beta)
    params = {} if beta is None else {"beta": beta}
    key = jax.random.key(seed + 100 * c)
    levels = CHECKPOINTS[family] if budget else deltas
    run = (dict(delta=None, budget=levels[-1], checkpoints=levels) if budget
           else dict(delta=deltas))
    est = jbai.estimate(key, family, means, rule, n_trials=trials, params=params,
                        estimator=estimator, **run)
    inputs = [("beta", "beta")] if beta is not None else [(f"mu_{i}", i)
                                                         for i in range(len(means))]
    for label, wrt in inputs:
      fd = jbai.finite_difference(jax.random.fold_in(key, 1 + len(rows)), family, means, rule,
                                  n_trials=trials, wrt=wrt, h=h, params=params, **run)
      for quantity, field in QUANTITIES[budget]:
        lr, lr_se = getattr(est, "grad_" + field), getattr(est, "grad_" + field + "_se")
        fd_v, fd_se = getattr(fd, field), getattr(fd, field + "_se")
        key_lr = "beta" if wrt == "beta" else "means"
        for d, level in enumerate(levels):
          g = lr[key_lr][d] if wrt == "beta" else lr[key_lr][d, wrt]
          g_se = lr_se[key_lr][d] if wrt == "beta" else lr_se[key_lr][d, wrt]
          diff, se = float(g) - float(fd_v[d]), math.hypot(float(g_se), float(fd_se[d]))
          if se > 0:
            z = diff / se
          else:  # no trial ended in error: both estimates are exactly 0
            z = 0.0 if diff == 0 else math.inf
          rows.append({"family": family, "rule": rule_name, "level": level,
                       "quantity": quantity, "input": label, "lr": float(g),
                       "lr_se": float(g_se), "fd": float(fd_v[d]), "fd_se": float(fd_se[d]),
                       "se": se, "z": z})
  return rows


def bonferroni(n_comparisons: int, level: float = LEVEL) -> float:
  """The |z| bound for n two-sided comparisons holding jointly at `level`."""
  return float(norm.ppf(1 - (1 - level) / (2 * n_comparisons)))


def informative(rows: list) -> int:
  """The comparisons with a nonzero standard error (some trial ended in error)."""
  return sum(r["se"] > 0 for r in rows)


if __name__ == "__main__":
  import argparse

  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=20_000)
  parser.add_argument("--estimator", default="causal", choices=["causal", "score"])
  parser.add_argument("--budget", action="store_true",
                      help="runs to a budget (BUDGET_CASES): P(error) and the simple regret "
                      "at the checkpoints")
  args = parser.parse_args()
  jbai.enable_compilation_cache()
  rows = comparisons(args.trials, BUDGET_CASES if args.budget else CASES,
                     estimator=args.estimator, budget=args.budget)
  n = informative(rows)
  bound = bonferroni(n)
  print(f"{args.estimator} estimator, {args.trials} trials per estimate; |z| <= {bound:.2f} for all {n} comparisons "
        f"with errors seen jointly at {LEVEL:.0%} (z = 0: no trial ended in error)")
  level = "t" if args.budget else "delta"
  print(f"| family | rule | {level} | d/d | quantity | LR (se) | FD, CRN (se) | z |")
  print("|---|---|---|---|---|---|---|---|")
  for r in rows:
    print(f"| {r['family']} | {r['rule']} | {r['level']:g} | {r['input']} | {r['quantity']} | "
          f"{r['lr']:.4g} ({r['lr_se']:.2g}) | {r['fd']:.4g} ({r['fd_se']:.2g}) | "
          f"{r['z']:+.2f} |")
