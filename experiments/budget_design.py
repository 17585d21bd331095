"""The best static allocation for a finite budget, by gradient descent on P(error at T).

Which static allocation w minimises the probability that the empirical best arm
after T rewards is wrong is not known in closed form. The asymptotic answers are
Glynn & Juneja's w_FB(nu), the maximiser of the error's large-deviation rate
(`jbai.oracle.budget_allocation`), and, for comparison, the fixed-confidence
w*(nu); the adaptive answers are Successive Rejects and Sequential Halving.
Here the simulator answers it: Adam descends the likelihood-ratio gradient of
P(error at T) in the logits theta of a static randomized design (`jbai.rules.static`:
each reward drawn from arm i with probability softmax(theta)_i), `jax.grad` of
`jbai.estimate(..., budget=T).error_rate`, from the uniform design.

Every allocation is then evaluated on fresh trials (a key the optimiser never
saw), the same number for each (equal simulation budgets): P(error at T) with its
Wilson 95% interval, and the rate Gamma_FB(w) of each static design. Next to the
static designs: round robin (`uniform`), Successive Rejects and Sequential
Halving, which run to the same T.

  python experiments/budget_design.py [--quick] [--seed S]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import jbai

CONFIG = {
    "family": "bernoulli",
    "means": [0.9, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1],  # K = 10
    "budget": 600,          # T: P(error) between 1% and 13% for every allocation below
    "trials": 4000,         # per Adam step
    "steps": 150,           # Adam iterations
    "learning_rate": 0.1,
    "average": 50,          # the design found: mean of the last iterates' logits
    "check_trials": 100_000,  # the evaluation of each allocation, on fresh trials
    "seed": 0,
}


def descend(c: dict, key) -> tuple:
  """Adam on the likelihood-ratio gradient of P(error at T) in the logits, from the
  uniform design: (the mean of the last `average` iterates, the path of P(error)
  estimates, simulated steps)."""
  means = jnp.asarray(c["means"])

  def error(theta, key):
    e = jbai.estimate(key, c["family"], means, jbai.rules.static(), None, c["trials"],
                      params={"logits": theta}, budget=c["budget"])
    return e.error_rate, e.error_rate

  gradient = jax.jit(jax.grad(error, has_aux=True))
  opt = optax.adam(c["learning_rate"])
  theta = jnp.zeros(len(c["means"]))
  state, path, errors = opt.init(theta), [], []
  for i in range(c["steps"]):
    g, err = gradient(theta, jax.random.fold_in(key, i))
    updates, state = opt.update(g, state)
    theta = theta + updates
    path.append(np.asarray(theta))
    errors.append(float(err))
  return np.mean(path[-c["average"]:], axis=0), errors, c["steps"] * c["trials"] * c["budget"]


def evaluate(c: dict, key, rule) -> dict:
  """P(error at T) of `rule` on `check_trials` fresh trials, with its Wilson 95% interval."""
  res = jbai.budget(key, c["family"], c["means"], rule, c["budget"], c["check_trials"],
                    checkpoints=[c["budget"]])
  return {"error": float(res.error[-1]), "ci": [float(x) for x in res.error_ci[-1]]}


def main(c: dict) -> list:
  """Descends, evaluates every allocation and rule, prints the table; returns its rows."""
  family = jbai.families.get(c["family"])
  means = np.asarray(c["means"], np.float64)
  key_descent, key_check = jax.random.split(jax.random.key(c["seed"]))
  t0 = time.perf_counter()
  theta, errors, steps = descend(c, key_descent)
  seconds = time.perf_counter() - t0
  w_star, _, _ = jbai.oracle.optimal_allocation(family, means, method="exact")
  w_fb, gamma_fb = jbai.oracle.budget_allocation(family, means)
  designs = {"uniform (static)": np.full(len(means), 1 / len(means)),
             "w* (fixed confidence)": np.asarray(w_star),
             "w_FB (Glynn & Juneja)": np.asarray(w_fb),
             "descent on P(error at T)": np.asarray(jax.nn.softmax(jnp.asarray(theta)))}
  rows = []
  for name, w in designs.items():
    rule = jbai.rules.static(tuple(np.log(np.maximum(w, 1e-300))))
    rate = float(jbai.oracle.budget_rate(family, jnp.asarray(means), jnp.asarray(w)))
    rows.append({"method": name, "w": w, "rate": rate, **evaluate(c, key_check, rule)})
  for name in ("uniform", "successive-rejects", "sequential-halving"):
    label = "round robin" if name == "uniform" else name
    rows.append({"method": label, "w": None, "rate": None,
                 **evaluate(c, key_check, jbai.rules.get(name))})
  print(f"{c['family']} means {c['means']}, T = {c['budget']}; descent: {c['steps']} Adam "
        f"steps of {c['trials']} trials ({steps:.3g} simulated steps, {seconds:.0f} s), "
        f"P(error) estimates {np.mean(errors[:10]):.4f} (first 10 steps) -> "
        f"{np.mean(errors[-10:]):.4f} (last 10); Gamma_FB(nu) = {float(gamma_fb):.5f}; "
        f"each row {c['check_trials']} fresh trials")
  print("| allocation | P(error at T) (Wilson 95%) | Gamma_FB(w) | w |")
  print("|---|---|---|---|")
  for r in rows:
    w = "" if r["w"] is None else " ".join(f"{x:.3f}" for x in r["w"])
    rate = "" if r["rate"] is None else f"{r['rate']:.5f}"
    print(f"| {r['method']} | {r['error']:.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] | {rate} "
          f"| {w} |")
  return rows


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="a few trials, to check it runs")
  parser.add_argument("--seed", type=int, default=CONFIG["seed"],
                      help="the key of the descent and of the evaluation")
  args = parser.parse_args()
  config = dict(CONFIG, seed=args.seed)
  if args.quick:
    config.update(trials=64, steps=3, average=2, check_trials=256, budget=200)
  jbai.enable_compilation_cache()
  with jax.enable_x64(True):
    main(config)
