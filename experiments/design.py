"""Beyond the paper: learn a static design through the simulator, against w*(nu).

A static randomized design (`jbai.rules.static`) pulls arm i with probability
w_i = softmax(theta)_i at every step, whatever the rewards, and stops with the
GLLR. Its E[tau] / log(1/delta) tends to 1 / Gamma(nu, w) as delta -> 0, so the
best design is the oracle's w*(nu): a question with a known answer, in K - 1 = 19
free dimensions, where one direction matters (raise every arm that the stop
waits for) and a random design almost never has it.

Three optimisers of E[tau] over theta in R^K, from the uniform design, with at
most the same simulated steps:
  adam     Adam on `jax.grad` of `jbai.estimate(...).mean_tau` in theta: the
           causal likelihood-ratio gradient of the K logits, from one run;
  spsa     the same Adam on the simultaneous-perturbation estimate
           (E(theta + c D) - E(theta - c D)) / 2c * D, D uniform on {-1, 1}^K,
           both points with the same key (common random numbers), half the
           trials each;
  random   random search: theta uniform in [-box, box]^K (a box that holds
           log w*), each sample with the same trials as an Adam step, until it
           has used as many steps as the longest of the other runs; the best by
           its own estimate.
Adam and SPSA run at each learning rate of a grid (the same grid, so the same
tuning effort). Each design (Adam's and SPSA's mean of their last `average`
iterates, random search's best sample) is then evaluated again with fresh trials,
next to the uniform design and w*(nu) itself: E[tau] +- 1.96 se, and the design's
efficiency Gamma(nu, w) / Gamma(nu) (`jbai.oracle.gamma_bounds`, exact; 1 at
w*). The whole comparison runs `repeats` times with independent keys, and each
method's mean over them comes with a Student-t 95% interval (it holds the
optimiser's own noise, which one evaluation's interval does not).

  python experiments/design.py [--quick] [--repeats R] [--first-repeat F]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.stats

import jbai

CONFIG = {
    "family": "gaussian",
    "means": [1.0] + [float(x) for x in np.linspace(0.5, 0.0, 19)],  # K = 20
    "delta": 1e-3,
    "trials": 200,          # per Adam step, SPSA step (both points) and random sample
    "steps": 30,            # Adam and SPSA iterations
    "learning_rates": [0.05, 0.1],  # Adam's, for both gradient estimates (the best of
                                    # 0.025, 0.05, 0.1, 0.2 for each, docs/reproduction.md)
    "spsa_c": 0.1,
    "box": 1.5,             # random search's box for theta
    "average": 10,          # the design of Adam and SPSA: mean of their last iterates
    "check_trials": 2000,   # the final evaluation of each design
    "repeats": 4,
    "seed": 0,
}
Z95 = 1.96


def _run(c, key, theta, n):
  """One run of n trials of the design softmax(theta): (tau [n], simulated steps)."""
  r = jbai.rollout(key, c["family"], np.asarray(c["means"]), jbai.rules.static(), c["delta"],
                   n, params={"logits": jnp.asarray(theta, jnp.float32)}, scores=False)
  return np.asarray(r.tau, np.float64), int(np.sum(np.asarray(r.steps)))


def descend(c: dict, key, learning_rate: float, gradient) -> tuple:
  """Adam from the uniform design on gradient(theta, key_i) -> (g, simulated steps):
  (iterates, simulated steps)."""
  opt = optax.adam(learning_rate)
  theta = jnp.zeros(len(c["means"]), jnp.float32)
  state, path, steps = opt.init(theta), [], 0
  for i in range(c["steps"]):
    g, n = gradient(theta, jax.random.fold_in(key, i))
    steps += int(n)
    updates, state = opt.update(jnp.asarray(g, jnp.float32), state)
    theta = theta + updates
    path.append(np.asarray(theta))
  return path, steps


def adam(c: dict, key, learning_rate: float) -> tuple:
  """Adam on the likelihood-ratio gradient: (iterates, simulated steps)."""
  means = jnp.asarray(c["means"], jnp.float32)

  def value(theta, key):
    e = jbai.estimate(key, c["family"], means, jbai.rules.static(), c["delta"], c["trials"],
                      params={"logits": theta})
    return e.mean_tau, jnp.sum(e.trials.steps)

  return descend(c, key, learning_rate, jax.jit(jax.grad(value, has_aux=True)))


def spsa(c: dict, key, learning_rate: float) -> tuple:
  """Adam on simultaneous-perturbation gradients with common random numbers."""
  k = len(c["means"])

  def gradient(theta, key_i):
    d = np.where(np.asarray(jax.random.bernoulli(jax.random.fold_in(key_i, 1), 0.5, (k,))),
                 1.0, -1.0)
    run_key = jax.random.fold_in(key_i, 2)  # the same at both points
    (up, s_up), (down, s_down) = (_run(c, run_key, theta + s * c["spsa_c"] * d,
                                       c["trials"] // 2) for s in (1, -1))
    return (up.mean() - down.mean()) / (2 * c["spsa_c"]) * d, s_up + s_down

  return descend(c, key, learning_rate, gradient)


def random_search(c: dict, key, budget: int) -> tuple:
  """Random samples of theta in the box until `budget` steps: (best theta, steps,
  samples)."""
  k = len(c["means"])
  best, best_tau, steps, i = None, np.inf, 0, 0
  while steps < budget:
    key_i = jax.random.fold_in(key, i)
    theta = np.asarray(jax.random.uniform(jax.random.fold_in(key_i, 1), (k,),
                                          minval=-c["box"], maxval=c["box"]))
    tau, s = _run(c, jax.random.fold_in(key_i, 2), theta, c["trials"])
    steps, i = steps + s, i + 1
    if tau.mean() < best_tau:
      best, best_tau = theta, tau.mean()
  return best, steps, i


def evaluate(c: dict, key, theta, gamma_star: float) -> dict:
  """A design's E[tau] on fresh trials and its efficiency Gamma(nu, w) / Gamma(nu)."""
  w = np.asarray(jax.nn.softmax(jnp.asarray(theta, jnp.float32)), np.float64)
  tau, _ = _run(c, key, theta, c["check_trials"])
  lower, _ = jbai.oracle.gamma_bounds(jbai.families.get(c["family"]),
                                      np.asarray(c["means"], np.float64), w)
  return {"tau": tau.mean(), "tau_ci": Z95 * tau.std(ddof=1) / np.sqrt(len(tau)),
          "efficiency": float(lower) / gamma_star, "w": w}


def compare(c: dict, key) -> list:
  """One comparison: rows (method, learning rate, evaluation, simulated steps)."""
  k_adam, k_spsa, k_random, k_check = (jax.random.fold_in(key, i) for i in range(4))
  w_star, gamma_star, _ = jbai.oracle.optimal_allocation(
      c["family"], np.asarray(c["means"], np.float64), method="exact")
  check = lambda theta: evaluate(c, k_check, theta, float(gamma_star))
  rows = []
  for method, optimise, k in (("adam", adam, k_adam), ("spsa", spsa, k_spsa)):
    for rate in c["learning_rates"]:
      t0 = time.perf_counter()
      path, steps = optimise(c, k, rate)
      rows.append({"method": method, "learning_rate": rate, "steps": steps,
                   **check(np.mean(path[-c["average"]:], axis=0)),
                   "seconds": time.perf_counter() - t0})
  t0 = time.perf_counter()
  best, steps, samples = random_search(c, k_random, max(r["steps"] for r in rows))
  rows.append({"method": f"random ({samples} samples)", "learning_rate": None,
               "steps": steps, **check(best), "seconds": time.perf_counter() - t0})
  for name, theta in (("uniform", np.zeros(len(c["means"]))),
                      ("w*", np.log(np.asarray(w_star)))):
    rows.append({"method": name, "learning_rate": None, "steps": 0, **check(theta),
                 "seconds": 0.0})
  return rows


def main(c: dict) -> list:
  """Runs `repeats` comparisons; prints a table of them, then each method's mean
  over the repeats with its Student-t 95% interval, and returns the rows."""
  print("| repeat | method | learning rate | E[tau] (+- 1.96 se) | efficiency "
        "Gamma(nu, w) / Gamma(nu) | simulated steps | seconds |")
  print("|---|---|---|---|---|---|---|")
  rows = []
  for r in range(c.get("first_repeat", 0), c.get("first_repeat", 0) + c["repeats"]):
    for row in compare(c, jax.random.fold_in(jax.random.key(c["seed"]), r)):
      rows.append(dict(row, repeat=r, label=row["method"].split(" (")[0] + (
          "" if row["learning_rate"] is None else f" {row['learning_rate']:g}")))
      rate = "" if row["learning_rate"] is None else f"{row['learning_rate']:g}"
      print(f"| {r} | {row['method']} | {rate} | {row['tau']:.0f} +- {row['tau_ci']:.0f} | "
            f"{row['efficiency']:.3f} | {row['steps']:.3g} | {row['seconds']:.0f} |",
            flush=True)
  if c["repeats"] > 1:
    print("\n| method | E[tau], mean over repeats (+- t 95%) | efficiency | simulated steps |")
    print("|---|---|---|---|")
    t = scipy.stats.t.ppf(0.975, c["repeats"] - 1)
    for label in dict.fromkeys(r["label"] for r in rows):
      taus = np.array([r["tau"] for r in rows if r["label"] == label])
      eff = np.mean([r["efficiency"] for r in rows if r["label"] == label])
      steps = np.mean([r["steps"] for r in rows if r["label"] == label])
      print(f"| {label} | {taus.mean():.0f} +- {t * taus.std(ddof=1) / np.sqrt(len(taus)):.0f} "
            f"| {eff:.3f} | {steps:.3g} |")
  return rows


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="a few trials, to check it runs")
  parser.add_argument("--repeats", type=int, default=CONFIG["repeats"])
  parser.add_argument("--first-repeat", type=int, default=0,
                      help="index of the first repeat (repeat r runs from key fold_in(seed, r))")
  args = parser.parse_args()
  config = dict(CONFIG, repeats=args.repeats, first_repeat=args.first_repeat)
  if args.quick:
    config.update(means=config["means"][:4], trials=16, steps=3, average=2, check_trials=32,
                  delta=0.1, learning_rates=[0.1])
  main(config)
