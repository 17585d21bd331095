"""Why the CRN finite difference beats the likelihood ratio in beta: a variance
decomposition at equal simulated steps.

On one case (T3C, beta = 0.5), from one run with scores: the per-trial variance
of the causal likelihood-ratio term y = sum_{s < tau} c_s (tau - s - 1) (c_s the
score of step s's coin), without control variates, with the state baselines only
(the first F columns of policy_score_cv), and with all (adding the future-noise
columns); and, for the central difference with common random numbers at several
h, the per-trial variance of (tau(beta + h) - tau(beta - h)) / 2h and the share of
trial pairs whose stopping times differ; then Richardson's extrapolation
(4 FD(h) - FD(2h)) / 3, with its correction on all trials or on a quarter (the
default of `jbai.finite_difference`), and the estimate (FD(2h) - FD(h)) / 3 of
FD(h)'s bias (every h from the same key). Efficiency is variance x simulated steps per trial estimate
(lower is better).

  python benchmarks/beta_variance.py [--trials 1000]
"""

import argparse

import jax
import numpy as np

import jbai
from jbai.core.estimators import cross_fitted
from jbai.core.finite_differences import BIAS_SHARE, bias_trials, richardson_terms
from jbai.core.lane import N_FEATURES


def crn_differences(key, family, means, rule, delta, trials: int, h: float) -> tuple:
  """Per-trial central differences (tau(beta + h) - tau(beta - h)) / 2h, both runs
  with `key`: (differences [trials, ...], mean simulated steps of the pair per
  trial, share of pairs whose stopping times differ)."""
  runs = [jbai.rollout(key, family, np.asarray(means), rule, delta, trials,
                       params={"beta": 0.5 + s * h}, scores=False) for s in (1, -1)]
  t = [np.asarray(r.tau, np.float64) for r in runs]
  steps = sum(float(np.mean(np.asarray(r.steps))) for r in runs)
  return (t[0] - t[1]) / (2 * h), steps, float(np.mean(t[0] != t[1]))


def main(family, means, rule_name, delta, trials, hs, seed=0):
  rule = jbai.rules.get(rule_name, beta=0.5)
  key = jax.random.key(seed)
  res = jbai.rollout(key, family, np.asarray(means), rule, delta, trials, scores=True)
  steps = float(np.mean(np.asarray(res.steps)))
  y = np.asarray(res.causal_policy_score["beta"], np.float64)[:, None]
  cv = np.asarray(res.policy_score_cv["beta"], np.float64)[:, None, :]
  print(f"{family} {means} {rule_name} delta={delta:g}, {trials} trials, "
        f"{steps:.0f} steps per trial")
  print("| estimator | gradient | per-trial variance | steps per estimate | variance x steps |")
  print("|---|---|---|---|---|")
  for label, cols in (("LR causal, no control variate", 0),
                      ("LR causal, state baselines", N_FEATURES),
                      ("LR causal, + future-noise (the default)", cv.shape[-1])):
    if cols == 0:
      g, se = y.mean(), y.std(ddof=1) / np.sqrt(trials)
    else:
      g, se = (float(np.asarray(a)[0]) for a in cross_fitted(y, cv[..., :cols]))
    var = se ** 2 * trials
    print(f"| {label} | {g:.0f} +- {1.96 * se:.0f} | {var:.3g} | {steps:.0f} | {var * steps:.3g} |")
  diffs = {}
  for h in hs:
    d, st, differ = crn_differences(jax.random.fold_in(key, 1), family, means, rule, delta,
                                    trials, h)
    diffs[h] = (d, st)
    var = d.var(ddof=1)
    print(f"| FD, CRN, h = {h:g} ({differ:.0%} of pairs differ) | "
          f"{d.mean():.0f} +- {1.96 * np.sqrt(var / trials):.0f} | {var:.3g} | {st:.0f} | "
          f"{var * st:.3g} |")
  # Every h runs with the same key, so the differences at h and 2h share their
  # randomness: (FD(2h) - FD(h)) / 3 estimates FD(h)'s O(h^2) bias precisely, and
  # (4 FD(h) - FD(2h)) / 3 removes it (bias O(h^4), four runs). jbai.finite_difference
  # (extrapolate=True) estimates that correction on the first bias_trials(trials)
  # only (trial j is the same at any n_trials), weighted trials / bias_trials(trials).
  for h in hs:
    if 2 * h not in diffs:
      continue
    (d1, s1), (d2, s2) = diffs[h], diffs[2 * h]
    for label, k in (("correction on all", trials),
                     (f"correction on 1/{BIAS_SHARE}, the default", bias_trials(trials))):
      r = np.asarray(richardson_terms(d1, d2[:k]), np.float64)
      var = r.var(ddof=1)
      steps = s1 + s2 * k / trials
      print(f"| Richardson, h = {h:g}, {label} | {r.mean():.0f} +- "
            f"{1.96 * np.sqrt(var / trials):.0f} | {var:.3g} | {steps:.0f} | {var * steps:.3g} |")
  for h in hs:
    if 2 * h in diffs:
      b = (diffs[2 * h][0] - diffs[h][0]) / 3
      print(f"bias of FD at h = {h:g}, (FD(2h) - FD(h)) / 3: {b.mean():.1f} +- "
            f"{1.96 * b.std(ddof=1) / np.sqrt(trials):.1f}")


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=1000)
  args = parser.parse_args()
  main("gaussian", [1.0, 0.6, 0.5, 0.4, 0.2], "t3c", 1e-2, args.trials,
       [0.01, 0.03, 0.05, 0.1, 0.2])
