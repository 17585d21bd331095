"""Beyond the paper: tune a top-two rule's beta per instance by gradient.

For T3C and EB-TCI on one instance, Adam descends E[tau] in beta on the central
finite difference with common random numbers (`jbai.finite_difference`, the
estimator that `jbai grad --wrt beta` picks: at equal simulated steps its standard
error is below the likelihood-ratio estimators', docs/performance.md), from
beta = 0.5. The tuned beta (the mean of the last half of the iterates) is compared
with the oracle's beta* = w*_top(nu) (`jbai.oracle.optimal_allocation`; T*_beta(nu)
is smallest there, so E[tau] / log(1/delta) is, as delta -> 0) and with a grid of
E[tau] over beta. At both betas, a fresh finite difference with more trials gives
d E[tau] / d beta with its 95% interval: 0 inside the interval at beta* says that
beta* is a stationary point of E[tau] at this delta, within the noise.

  python experiments/beta_tuning.py [--quick]
"""

import argparse
import time

import jax
import numpy as np
import optax

import jbai

CONFIG = {
    "family": "gaussian",
    "means": [1.5] + [1.0] * 7,  # beta* = 1 / (1 + sqrt 7) = 0.2743 (figure1's instance)
    "rules": ["t3c", "ebtci"],
    "delta": 1e-3,
    "trials": 300,         # per finite-difference point and Adam step
    "h": 0.05,
    "steps": 16,
    "learning_rate": 0.05,  # times decay^i at step i
    "decay": 0.85,
    "grid": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5],
    "grid_trials": 600,
    "check_trials": 2000,  # the finite differences at the tuned beta and at beta*
    "seed": 0,
}
Z95 = 1.96


def tune(rule: str, c: dict, key) -> tuple:
  """Adam on beta in [0.05, 0.95], its rate decaying geometrically: (iterates,
  simulated steps)."""
  opt = optax.adam(optax.exponential_decay(c["learning_rate"], 1, c["decay"]))
  beta = np.float32(0.5)
  state = opt.init(beta)
  path, steps = [], 0
  for i in range(c["steps"]):
    fd = jbai.finite_difference(jax.random.fold_in(key, i), c["family"], np.asarray(c["means"]),
                                jbai.rules.get(rule, beta=0.5), c["delta"], c["trials"],
                                wrt="beta", h=c["h"], params={"beta": beta})
    steps += int(fd.simulated_steps)
    updates, state = opt.update(np.float32(fd.mean_tau), state, beta)
    beta = np.float32(np.clip(optax.apply_updates(beta, updates), 0.05, 0.95))
    path.append(float(beta))
  return path, steps


def slope(rule: str, beta: float, c: dict, key) -> tuple:
  fd = jbai.finite_difference(key, c["family"], np.asarray(c["means"]),
                              jbai.rules.get(rule, beta=0.5), c["delta"], c["check_trials"],
                              wrt="beta", h=c["h"], params={"beta": beta})
  return float(fd.mean_tau), float(fd.mean_tau_se)


def grid(rule: str, c: dict, key) -> list:
  out = []
  for b in c["grid"]:
    res = jbai.rollout(key, c["family"], np.asarray(c["means"]), jbai.rules.get(rule, beta=b),
                       c["delta"], c["grid_trials"])
    tau = np.asarray(res.tau, np.float64)
    out.append((b, tau.mean(), tau.std(ddof=1) / np.sqrt(tau.size)))
  return out


def main(c: dict) -> None:
  w = jbai.oracle.optimal_allocation(c["family"], np.asarray(c["means"]))[0]
  beta_star = float(np.asarray(w)[int(np.argmax(c["means"]))])
  key = jax.random.key(c["seed"])
  print(f"{c['family']} {c['means']}, delta = {c['delta']:g}; beta* = w*_top = {beta_star:.4f}")
  print(f"| rule | tuned beta (mean of the last half of {c['steps']} Adam steps) | "
        "dE/dbeta at tuned | "
        "dE/dbeta at beta* | grid argmin (E[tau] +- 1.96 se) | steps | s |")
  print("|---|---|---|---|---|---|---|")
  for r, rule in enumerate(c["rules"]):
    t0 = time.time()
    k = jax.random.fold_in(key, r)
    path, steps = tune(rule, c, jax.random.fold_in(k, 0))
    tuned = float(np.mean(path[len(path) // 2:]))
    g_t, se_t = slope(rule, tuned, c, jax.random.fold_in(k, 1))
    g_s, se_s = slope(rule, beta_star, c, jax.random.fold_in(k, 1))
    pts = grid(rule, c, jax.random.fold_in(k, 2))
    b, m, se = min(pts, key=lambda p: p[1])
    print(f"| {rule} | {tuned:.3f} (path {', '.join(f'{p:.2f}' for p in path)}) | "
          f"{g_t:.0f} +- {Z95 * se_t:.0f} | {g_s:.0f} +- {Z95 * se_s:.0f} | {b:g} "
          f"({'; '.join(f'{x:g}: {y:.0f} +- {Z95 * z:.0f}' for x, y, z in pts)}) | "
          f"{steps:.3g} | {time.time() - t0:.0f} |")


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="a few trials, to check it runs")
  args = parser.parse_args()
  config = dict(CONFIG)
  if args.quick:
    config.update(trials=20, steps=2, grid=[0.3, 0.5], grid_trials=20, check_trials=20)
  main(config)
