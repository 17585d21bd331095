"""Likelihood-ratio gradients against finite differences with common random numbers.

For each case (family, means, rule, delta) and each input (every arm's mean, and
beta for a top-two rule), the likelihood-ratio gradient of E[tau] and of P(error)
from `jbai.estimate` (its default causal estimator, or --estimator score) is compared with the central difference of
`jbai.finite_difference` (both estimates with their standard errors, from
independent keys). Prints one row per comparison: z = (LR - FD) / sqrt(se_LR^2 +
se_FD^2), and the Bonferroni bound on |z| for all comparisons to hold jointly at
99%. Where no trial ends in error, both P(error) gradients are exactly 0 (z = 0) and
the row is left out of the count. tests/test_estimate.py runs it (marked slow).

  python experiments/gradient_check.py [--trials 20000] [--estimator causal]
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


def comparisons(trials: int = 20_000, cases=CASES, deltas=DELTAS, seed: int = 0,
                estimator: str = "causal") -> list:
  """One row per (case, input, quantity, delta): the two estimates and z."""
  rows = []
  for c, (family, means, rule_name, beta, h) in enumerate(cases):
    means = jnp.asarray(means)
    rule = jbai.rules.get(rule_name) if beta is None else jbai.rules.get(rule_name, beta=beta)
    params = {} if beta is None else {"beta": beta}
    key = jax.random.key(seed + 100 * c)
    est = jbai.estimate(key, family, means, rule, deltas, trials, params=params,
                        estimator=estimator)
    inputs = [("beta", "beta")] if beta is not None else [(f"mu_{i}", i)
                                                         for i in range(len(means))]
    for label, wrt in inputs:
      fd = jbai.finite_difference(jax.random.fold_in(key, 1 + len(rows)), family, means, rule,
                                  deltas, trials, wrt=wrt, h=h, params=params)
      for quantity, lr, lr_se, fd_v, fd_se in (
          ("E[tau]", est.grad_mean_tau, est.grad_mean_tau_se, fd.mean_tau, fd.mean_tau_se),
          ("P(error)", est.grad_error_rate, est.grad_error_rate_se, fd.error_rate,
           fd.error_rate_se)):
        key_lr = "beta" if wrt == "beta" else "means"
        for d, delta in enumerate(deltas):
          g = lr[key_lr][d] if wrt == "beta" else lr[key_lr][d, wrt]
          g_se = lr_se[key_lr][d] if wrt == "beta" else lr_se[key_lr][d, wrt]
          diff, se = float(g) - float(fd_v[d]), math.hypot(float(g_se), float(fd_se[d]))
          if se > 0:
            z = diff / se
          else:  # no trial ended in error: both estimates are exactly 0
            z = 0.0 if diff == 0 else math.inf
          rows.append({"family": family, "rule": rule_name, "delta": delta,
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
  args = parser.parse_args()
  jbai.enable_compilation_cache()
  rows = comparisons(args.trials, estimator=args.estimator)
  n = informative(rows)
  bound = bonferroni(n)
  print(f"{args.estimator} estimator, {args.trials} trials per estimate; |z| <= {bound:.2f} for all {n} comparisons "
        f"with errors seen jointly at {LEVEL:.0%} (z = 0: no trial ended in error)")
  print(f"| family | rule | delta | d/d | quantity | LR (se) | FD, CRN (se) | z |")
  print("|---|---|---|---|---|---|---|---|")
  for r in rows:
    print(f"| {r['family']} | {r['rule']} | {r['delta']:g} | {r['input']} | {r['quantity']} | "
          f"{r['lr']:.4g} ({r['lr_se']:.2g}) | {r['fd']:.4g} ({r['fd_se']:.2g}) | "
          f"{r['z']:+.2f} |")
