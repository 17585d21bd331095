"""jbai on its defaults against a compiled per-trial loop (numba), in one process.

For TCB and ITCB on Gaussian (sigma = 1) and Bernoulli instances with K = 5 and
K = 20 arms (delta = 1e-8), and on Gaussian instances with K = 100 and K = 1,000
arms (delta = 0.01, fewer trials), gk16, float32 for jbai, prints:
  - the mean stopping time with its 95% confidence interval, for jbai and for the
    loop of `benchmarks/loop_kernels.py` (written independently of jbai's code), and
    whether they agree (a correctness check: |difference| <= 1.96 standard errors of
    the difference);
  - useful trial-steps per second of jbai on its defaults (`jbai.use_cpu_cores()`,
    one device per usable core, as the `jbai` command has it; `jbai.simulate` with
    its default pool, programs compiled before timing), of the loop on one thread
    (@njit) and on every core (numba.prange), the ratios jbai / loop, and jbai per
    core against the loop on one thread.
Then the budget rows (`jbai.budget`, issue "anytime and fixed-budget identification"):
uniform sampling and Successive Rejects to a fixed budget (K = 5: 2,000 rewards,
K = 20: 10,000) on the same instances, against the loops of
`benchmarks/budget_kernels.py`: the error rates (they agree within 1.96 standard
errors of their difference, or the row says NO) and the trial-steps per second.
Every trial of a budget run takes the whole budget: no heavy tail. Its rate is
rewards per second (jbai's Successive Rejects draws a phase's rewards of an arm
as one binomial or normal block, and uniform sampling each arm's share of the
budget; the loop draws them one by one).
With --json PATH it also writes the rows; --devices N gives jbai N devices.

Needs numba (`pip install jbai[bench]`).

Usage: python benchmarks/compiled_loop.py [--trials 2000] [--trials-20 400]
         [--trials-100 100] [--trials-1000 12] [--cases tcb:gaussian-5,...]
         [--budget-cases uniform:bernoulli-5,...] [--json out.json]
"""

import argparse
import json
import math
import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import budget_kernels as bk  # noqa: E402
import loop_kernels as lk  # noqa: E402

import jbai  # noqa: E402

DELTA = 1e-8
INSTANCES = {
    "gaussian-5": ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0]),
    "bernoulli-5": ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06]),
    # K = 20: the K = 5 instances' hard pairs, then arms spread below them.
    "gaussian-20": ("gaussian", [1.2, 1.0, 1.0, 1.0] +
                    [round(float(x), 4) for x in np.linspace(0.9, 0.2, 16)]),
    "bernoulli-20": ("bernoulli", [0.8, 0.6, 0.55] +
                     [round(float(x), 4) for x in np.linspace(0.5, 0.05, 17)]),
    # Many arms: one best arm 0.5 above the others.
    "gaussian-100": ("gaussian", [1.5] + [1.0] * 99),
    "gaussian-1000": ("gaussian", [1.5] + [1.0] * 999),
}
DELTAS = {"gaussian-100": 0.01, "gaussian-1000": 0.01}  # the others: DELTA
FAMILY = {"gaussian": lk.GAUSSIAN, "bernoulli": lk.BERNOULLI}
RULE = {"tcb": lk.TCB, "itcb": lk.ITCB}
CASES = [f"{r}:{i}" for i in INSTANCES for r in ("tcb", "itcb")]
BUDGETS = {"5": 2000, "20": 10000}  # the budget rows' budgets, by K
BUDGET_INSTANCES = {  # hard enough that the error at the budget is a few percent
    "gaussian-5": ("gaussian", [0.5, 0.4, 0.35, 0.3, 0.2]),
    "bernoulli-5": ("bernoulli", [0.5, 0.45, 0.43, 0.4, 0.3]),
    "gaussian-20": ("gaussian", [0.6] + [0.4] * 19),
    "bernoulli-20": ("bernoulli", [0.5] + [0.42] * 5 + [0.38] * 14),
}
BUDGET_RULES = {"uniform": bk.UNIFORM, "successive-rejects": bk.SUCCESSIVE_REJECTS}
BUDGET_CASES = [f"{r}:{f}-{k}" for k in BUDGETS for f in ("gaussian", "bernoulli")
                for r in BUDGET_RULES]


def mean_ci(tau):
  """(mean, half-width of the 95% normal confidence interval)."""
  tau = np.asarray(tau, float)
  return tau.mean(), 1.96 * tau.std(ddof=1) / math.sqrt(len(tau))


def loop_rate(run, family, rule, means, delta, trials, max_steps, seed=0):
  """The loop `run` (run_serial or run_parallel) on `trials` trials, compiled
  before timing: (useful steps per second, tau)."""
  args = (FAMILY[family], RULE[rule], np.asarray(means, float), math.log(1 / delta), 1.0,
          max_steps)
  run(*args, 1)  # compiles
  lk.seed(seed)
  t0 = time.perf_counter()
  tau, _ = run(*args, trials)
  return tau.sum() / (time.perf_counter() - t0), tau


def jbai_rate(family, means, rule, delta, trials, max_steps, lanes=None, seed=0, **kwargs):
  """jbai.simulate once its programs are compiled (a one-step run compiles the first
  pool; a tail pool's first chunk is left out of the timing): (useful steps per
  second, tau, utilisation)."""
  jbai.simulate(jax.random.key(seed), family, means, rule, delta, trials, max_steps=1,
                lanes=lanes, **kwargs)
  res = jbai.simulate(jax.random.key(seed), family, means, rule, delta, trials,
                      max_steps=max_steps, lanes=lanes, **kwargs)
  st = res.stats
  return st["timed_useful_steps"] / st["wall_seconds"], np.asarray(res.tau), st["utilisation"]


def compare(case, trials, max_steps=10**7, lanes=None):
  """One row: jbai, the one-thread loop and the all-core loop on `case`."""
  rule, name = case.split(":")
  family, means = INSTANCES[name]
  delta = DELTAS.get(name, DELTA)
  jb, tau_j, util = jbai_rate(family, means, rule, delta, trials, max_steps, lanes)
  one, tau_1 = loop_rate(lk.run_serial, family, rule, means, delta, trials, max_steps, seed=1)
  every, tau_p = loop_rate(lk.run_parallel, family, rule, means, delta, trials, max_steps,
                           seed=2)
  cores = jax.local_device_count()
  (mj, hj), (ml, hl) = mean_ci(tau_j), mean_ci(np.concatenate([tau_1, tau_p]))
  agree = abs(mj - ml) <= math.hypot(hj, hl)
  return {"rule": rule, "instance": name, "delta": delta, "trials": trials, "jbai_tau": mj,
          "jbai_ci": hj, "loop_tau": ml, "loop_ci": hl, "agree": bool(agree), "jbai": jb,
          "utilisation": util, "devices": cores, "loop_1": one, "loop_all": every,
          "x_loop_1": jb / one, "x_loop_all": jb / every, "x_loop_1_per_core": jb / cores / one}


def budget_rate(run, rule, family, means, budget, trials, seed=0):
  """A budget loop on `trials` trials, compiled before timing: (steps/s, answers)."""
  run(BUDGET_RULES[rule], FAMILY[family], means, budget, 1)  # compiles
  bk.seed(seed)
  t0 = time.perf_counter()
  answers = run(BUDGET_RULES[rule], FAMILY[family], means, budget, trials)
  return trials * budget / (time.perf_counter() - t0), answers


def compare_budget(case, trials):
  """One budget row: jbai.budget, the one-thread loop and the all-core loop."""
  rule, name = case.split(":")
  family, means = BUDGET_INSTANCES[name]
  budget = BUDGETS[name.rsplit("-", 1)[1]]
  # The program first (a budget is a runtime value: the smallest compiles the same one).
  jbai.budget(jax.random.key(1), family, means, rule, len(means) + 1, trials,
              checkpoints=[len(means) + 1])
  res = jbai.budget(jax.random.key(0), family, means, rule, budget, trials, checkpoints=[budget])
  # Rewards per second: a block of rewards of one arm (Successive Rejects' phases) is
  # one step of the pool and many rewards (the program ran before: no compile here).
  jb = trials * budget / (res.stats["wall_seconds"] + res.stats["compile_seconds"])
  one, ans_1 = budget_rate(bk.run_serial, rule, family, means, budget, trials, seed=1)
  every, ans_p = budget_rate(bk.run_parallel, rule, family, means, budget, trials, seed=2)
  best = int(np.argmax(means))
  p_j, p_l = float(res.error[-1]), float(np.mean(np.concatenate([ans_1, ans_p]) != best))
  se = math.sqrt(p_j * (1 - p_j) / trials + p_l * (1 - p_l) / (2 * trials))
  cores = jax.local_device_count()
  return {"rule": rule, "instance": name, "budget": budget, "trials": trials,
          "jbai_error": p_j, "loop_error": p_l, "agree": bool(abs(p_j - p_l) <= 1.96 * se),
          "jbai": jb, "devices": cores, "loop_1": one, "loop_all": every,
          "x_loop_1": jb / one, "x_loop_all": jb / every, "x_loop_1_per_core": jb / cores / one}


def print_budget_row(r):
  print(f"{r['rule']:<18} {r['instance']:<13} {r['budget']:>6} {r['trials']:>6} "
        f"{r['jbai_error']:>8.4f} {r['loop_error']:>8.4f} {'yes' if r['agree'] else 'NO':>5} "
        f"{r['jbai']:>9.3g} {r['loop_1']:>9.3g} {r['loop_all']:>9.3g} {r['x_loop_1']:>7.2f} "
        f"{r['x_loop_all']:>7.2f} {r['x_loop_1_per_core']:>7.2f}", flush=True)


def print_row(r):
  print(f"{r['rule']:<5} {r['instance']:<13} {r['trials']:>6} "
        f"{r['jbai_tau']:>9.0f} ±{r['jbai_ci']:<6.0f} {r['loop_tau']:>9.0f} ±{r['loop_ci']:<6.0f} "
        f"{'yes' if r['agree'] else 'NO':>5} {r['jbai']:>9.3g} {r['loop_1']:>9.3g} "
        f"{r['loop_all']:>9.3g} {r['x_loop_1']:>7.2f} {r['x_loop_all']:>7.2f} "
        f"{r['x_loop_1_per_core']:>7.2f}", flush=True)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=2000, help="trials, K = 5")
  parser.add_argument("--trials-20", type=int, default=400, help="trials, K = 20")
  parser.add_argument("--trials-100", type=int, default=100, help="trials, K = 100")
  parser.add_argument("--trials-1000", type=int, default=12, help="trials, K = 1000")
  parser.add_argument("--cases", default=",".join(CASES), help="the rows (empty: none)")
  parser.add_argument("--budget-cases", default=",".join(BUDGET_CASES),
                      help="the budget rows (empty: none)")
  parser.add_argument("--lanes", type=int, default=None)
  parser.add_argument("--devices", type=int, default=None,
                      help="jbai's CPU devices (default: one per usable core)")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  jbai.use_cpu_cores(args.devices)  # jbai on its defaults, as the jbai command runs
  import numba
  print(f"jbai on {jax.local_device_count()} x {jax.devices()[0].device_kind} "
        f"(jax {jax.__version__}); numba {numba.__version__} on "
        f"{numba.get_num_threads()} threads ({os.cpu_count()} CPUs); delta = {DELTA:g} "
        f"(K = 100 and 1000: {DELTAS['gaussian-100']:g}), gk16")
  print(f"{'rule':<5} {'instance':<13} {'trials':>6} {'jbai tau':>16} {'loop tau':>16} "
        f"{'agree':>5} {'jbai/s':>9} {'loop 1/s':>9} {'loop N/s':>9} {'x 1':>7} {'x N':>7} "
        f"{'x 1/core':>7}")
  trials = {"20": args.trials_20, "100": args.trials_100, "1000": args.trials_1000}
  rows = []
  for case in filter(None, args.cases.split(",")):
    rows.append(compare(case, trials.get(case.rsplit("-", 1)[1], args.trials),
                        lanes=args.lanes))
    print_row(rows[-1])
  print("(steps/s: useful trial-steps per second; x 1, x N: jbai / the loop on one "
        "thread, on every core; x 1/core: jbai per device / the loop on one thread; "
        "tau ± the 95% CI half-width; the loop's tau pools its two runs)")
  if args.budget_cases:
    print(f"\n{'budget rule':<18} {'instance':<13} {'budget':>6} {'trials':>6} "
          f"{'jbai err':>8} {'loop err':>8} {'agree':>5} {'jbai/s':>9} {'loop 1/s':>9} "
          f"{'loop N/s':>9} {'x 1':>7} {'x N':>7} {'x 1/core':>7}")
    for case in args.budget_cases.split(","):
      rows.append(compare_budget(case, trials.get(case.rsplit("-", 1)[1], args.trials)))
      print_budget_row(rows[-1])
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)


if __name__ == "__main__":
  main()
