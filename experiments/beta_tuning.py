"""Beyond the paper: tune a top-two rule's beta per instance by gradient.

For T3C and EB-TCI on one instance, Adam descends E[tau] in beta on Richardson's
extrapolation of central finite differences with common random numbers
(`jbai.finite_difference(..., extrapolate=True)`, the estimator that `jbai grad
--wrt beta` picks: at equal simulated steps its standard error is below the
likelihood-ratio estimators', and it has no O(h^2) bias to move the point where
the gradient vanishes; docs/performance.md), from beta = 0.5. One tuning's result
(the mean of the last half of its iterates) is a noisy optimum, so the tuning runs
R times with independent keys, and the tuned beta is the mean of the R results
with its Student-t 95% interval. It is compared with the oracle's beta* =
w*_top(nu) (`jbai.oracle.optimal_allocation`; T*_beta(nu) is smallest there, so
E[tau] / log(1/delta) is, as delta -> 0) and with a grid of E[tau] over beta. At
both betas, a fresh extrapolated difference with more trials gives d E[tau] / d
beta with its 95% interval (0 inside the interval at beta* says that beta* is a
stationary point of E[tau] at this delta, within the noise), and E[tau] at the
tuned beta minus E[tau] at beta*, per trial with common random numbers.

Prints beta*, then one table row per rule: the tuned beta with its interval, the R
tuned betas, whether beta* lies in the interval, the two slopes, the difference of
E[tau], the grid (E[tau] +- 1.96 se at each beta, and its argmin), the simulated
steps of the R tunings and the wall seconds of the row.
`main(config)` returns the rows as dicts.

  python experiments/beta_tuning.py [--quick] [--repeats R] [--delta D]
"""

import argparse
import time

import jax
import numpy as np
import optax
import scipy.stats

import jbai

CONFIG = {
    "family": "gaussian",
    "means": [1.5] + [1.0] * 7,  # beta* = 1 / (1 + sqrt 7) = 0.2743 (figure1's instance)
    "rules": ["t3c", "ebtci"],
    "delta": 1e-6,          # at 1e-3 E[tau]'s minimum lies further above beta* (docs/reproduction.md)
    "trials": 300,         # per Adam step (at beta +- h; a quarter at beta +- 2h)
    "h": 0.05,             # beta stays in [2h + 0.01, 1 - 2h - 0.01], so beta +- 2h in (0, 1)
    "steps": 32,
    "learning_rate": 0.05,  # times decay^i at step i
    "decay": 0.9,
    # Adam's moment decays: with b2 = 0.999 the normalisation remembers the first,
    # large gradients, and the steps die out before the iterates come back from
    # their overshoot below beta*; b1 = 0.5 overshoots less
    "b1": 0.5,
    "b2": 0.9,
    "repeats": 4,          # independent tunings, for the tuned beta's interval
    "grid": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5],
    "grid_trials": 600,
    "check_trials": 4000,  # the slopes and E[tau] at the tuned beta and at beta*
    "seed": 0,
}
Z95 = 1.96


def tune(rule: str, c: dict, key) -> tuple:
  """Adam on beta in [2h + 0.01, 1 - 2h - 0.01] (Richardson's points beta +- 2h in
  (0, 1)), its rate decaying geometrically: (iterates, simulated steps)."""
  low = 2 * c["h"] + 0.01
  opt = optax.adam(optax.exponential_decay(c["learning_rate"], 1, c["decay"]), b1=c["b1"],
                   b2=c["b2"])
  beta = np.float32(0.5)
  state = opt.init(beta)
  path, steps = [], 0
  for i in range(c["steps"]):
    fd = jbai.finite_difference(jax.random.fold_in(key, i), c["family"], np.asarray(c["means"]),
                                jbai.rules.get(rule, beta=0.5), c["delta"], c["trials"],
                                wrt="beta", h=c["h"], params={"beta": beta},
                                extrapolate=True)
    steps += int(fd.simulated_steps)
    updates, state = opt.update(np.float32(fd.mean_tau), state, beta)
    beta = np.float32(np.clip(optax.apply_updates(beta, updates), low, 1 - low))
    path.append(float(beta))
  return path, steps


def tune_repeated(rule: str, c: dict, key) -> tuple:
  """R independent tunings (key fold_in j): (tuned betas, total simulated steps)."""
  betas, total = [], 0
  for j in range(c["repeats"]):
    path, steps = tune(rule, c, jax.random.fold_in(key, j))
    betas.append(float(np.mean(path[len(path) // 2:])))
    total += steps
  return betas, total


def t_interval(xs) -> tuple:
  """Mean and Student-t 95% half-width of independent values: t_{0.975, R-1} sd / sqrt R."""
  xs = np.asarray(xs, np.float64)
  if xs.size < 2:
    raise ValueError(f"repeats = {xs.size}: an interval needs at least 2")
  half = scipy.stats.t.ppf(0.975, xs.size - 1) * xs.std(ddof=1) / np.sqrt(xs.size)
  return float(xs.mean()), float(half)


def slope(rule: str, beta: float, c: dict, key) -> tuple:
  fd = jbai.finite_difference(key, c["family"], np.asarray(c["means"]),
                              jbai.rules.get(rule, beta=0.5), c["delta"], c["check_trials"],
                              wrt="beta", h=c["h"], params={"beta": beta}, extrapolate=True)
  return float(fd.mean_tau), float(fd.mean_tau_se)


def taus(rule: str, beta: float, c: dict, key, trials: int) -> np.ndarray:
  """The stopping times of `trials` trials at beta (a runtime parameter: one
  compiled program per trial count)."""
  res = jbai.rollout(key, c["family"], np.asarray(c["means"]), jbai.rules.get(rule, beta=0.5),
                     c["delta"], trials, params={"beta": beta}, scores=False)
  return np.asarray(res.tau, np.float64)


def gap(rule: str, beta: float, beta_star: float, c: dict, key) -> tuple:
  """E[tau] at beta minus E[tau] at beta*, per trial with common random numbers:
  (mean, standard error)."""
  d = taus(rule, beta, c, key, c["check_trials"]) - taus(rule, beta_star, c, key,
                                                         c["check_trials"])
  return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))


def grid(rule: str, c: dict, key) -> list:
  """E[tau] and its standard error at each beta of the grid."""
  out = []
  for b in c["grid"]:
    tau = taus(rule, b, c, key, c["grid_trials"])
    out.append((b, tau.mean(), tau.std(ddof=1) / np.sqrt(tau.size)))
  return out


def run_rule(rule: str, beta_star: float, c: dict, key) -> dict:
  """One rule: R tunings, the slopes at their mean and at beta* (common random
  numbers), and the grid."""
  t0 = time.time()
  betas, steps = tune_repeated(rule, c, jax.random.fold_in(key, 0))
  tuned, half = t_interval(betas)
  g_t, se_t = slope(rule, tuned, c, jax.random.fold_in(key, 1))
  g_s, se_s = slope(rule, beta_star, c, jax.random.fold_in(key, 1))
  difference = gap(rule, tuned, beta_star, c, jax.random.fold_in(key, 1))
  pts = grid(rule, c, jax.random.fold_in(key, 2))
  return {"rule": rule, "betas": betas, "tuned": tuned, "half": half,
          "star_inside": abs(beta_star - tuned) <= half, "beta_star": beta_star,
          "slope_tuned": (g_t, se_t), "slope_star": (g_s, se_s), "gap": difference,
          "grid": pts,
          "grid_argmin": min(pts, key=lambda p: p[1])[0], "steps": steps,
          "seconds": time.time() - t0}


def row_text(row: dict) -> str:
  (g_t, se_t), (g_s, se_s), (d, se_d) = row["slope_tuned"], row["slope_star"], row["gap"]
  pts = '; '.join(f'{x:g}: {y:.0f} +- {Z95 * z:.0f}' for x, y, z in row["grid"])
  return (f"| {row['rule']} | {row['tuned']:.3f} +- {row['half']:.3f} "
          f"({', '.join(f'{b:.3f}' for b in row['betas'])}) | "
          f"{'yes' if row['star_inside'] else 'no'} | "
          f"{g_t:.0f} +- {Z95 * se_t:.0f} | {g_s:.0f} +- {Z95 * se_s:.0f} | "
          f"{d:.1f} +- {Z95 * se_d:.1f} | "
          f"{row['grid_argmin']:g} ({pts}) | {row['steps']:.3g} | {row['seconds']:.0f} |")


def main(c: dict) -> list:
  """Prints beta* and the table; returns one dict per rule (see `run_rule`)."""
  if c["repeats"] < 2:
    raise ValueError(f"repeats = {c['repeats']}: the tuned beta's interval needs at least 2")
  w = jbai.oracle.optimal_allocation(c["family"], np.asarray(c["means"]))[0]
  beta_star = float(np.asarray(w)[int(np.argmax(c["means"]))])
  key = jax.random.key(c["seed"])
  print(f"{c['family']} {c['means']}, delta = {c['delta']:g}; beta* = w*_top = {beta_star:.4f}")
  print(f"| rule | tuned beta +- t 95% (mean over {c['repeats']} repeats of the mean of "
        f"the last half of {c['steps']} Adam steps; each repeat's) | beta* inside | "
        "dE/dbeta at tuned | dE/dbeta at beta* | E[tau] at tuned - at beta* | "
        "grid argmin (E[tau] +- 1.96 se) | steps | s |")
  print("|---|---|---|---|---|---|---|---|---|")
  rows = []
  for r, rule in enumerate(c["rules"]):
    rows.append(run_rule(rule, beta_star, c, jax.random.fold_in(key, r)))
    print(row_text(rows[-1]), flush=True)
  return rows


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="a few trials, to check it runs")
  parser.add_argument("--repeats", type=int, default=None,
                      help=f"independent tunings per rule (default {CONFIG['repeats']})")
  parser.add_argument("--delta", type=float, default=None,
                      help=f"confidence level (default {CONFIG['delta']:g})")
  args = parser.parse_args()
  config = dict(CONFIG)
  if args.quick:
    config.update(trials=20, steps=2, repeats=2, grid=[0.3, 0.5], grid_trials=20,
                  check_trials=20)
  if args.repeats is not None:
    config.update(repeats=args.repeats)
  if args.delta is not None:
    config.update(delta=args.delta)
  main(config)
