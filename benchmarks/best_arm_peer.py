"""jbai's LUCB1, lil'UCB and exponential-gap elimination against the peer package best-arm.

Runs best-arm's `LUCB1` (with its `LUCBStoppingCondition(epsilon=0)`: stop when
U(l_t) < L(h_t)), `LilUCB` (mode "theory": eps = 0.01, beta = 1, its lil stop with
lambda = 9) and `ExpGapElimination` (no extra stop: it ends with one arm) in a
subprocess of an interpreter that has best-arm (not a dependency of jbai), and
jbai's lucb1, lil-ucb and exp-gap with their own stops, on the same Bernoulli
instance and delta. Prints mean tau with a normal 95% CI, the error rate and the
seconds of each.

Known differences (read from best-arm's algorithms/lucb1.py, lil_ucb.py,
exp_gap_elim.py and stopping_conditions.py): best-arm checks LUCB1's stop once
per round of two pulls, jbai after every pull (tau differs by at most one pull);
best-arm's exponential-gap elimination computes its means (in median elimination
and in the round's elimination) from all the rewards so far, jbai from each
phase's fresh rewards as Karnin et al. and Even-Dar et al. do (the schedule of
pulls, hence tau, is the same unless an arm is eliminated in another round);
ties go to the lowest index in best-arm, at random for LUCB1's leader in jbai.

Usage: python benchmarks/best_arm_peer.py [--means 0.7,0.5,0.3] [--delta 0.1]
                                          [--trials 500] [--peer-trials 100]
                                          [--exp-gap-trials 10]
                                          [--best-arm-python /work/venv-bestarm/bin/python]
"""

import argparse
import json
import subprocess
import time

import jax
import numpy as np

import jbai

PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
from best_arm.environment import BaseEnvironment, BernoulliEnvironment
from best_arm.algorithms.lucb1 import LUCB1
from best_arm.algorithms.lil_ucb import LilUCB
from best_arm.algorithms.exp_gap_elim import ExpGapElimination
from best_arm.stopping_conditions import LUCBStoppingCondition

means, delta = json.loads(sys.argv[1]), float(sys.argv[2])
trials, gap_trials = int(sys.argv[3]), int(sys.argv[4])
np.random.seed(0)
env = BernoulliEnvironment.__new__(BernoulliEnvironment)  # its __init__ draws random means
BaseEnvironment.__init__(env, len(means))
env.probs = list(means)
makers = (("best-arm LUCB1", trials, lambda: LUCB1(env, delta, LUCBStoppingCondition(0.0))),
          ("best-arm LilUCB", trials, lambda: LilUCB(env, delta)),
          ("best-arm ExpGapElimination", gap_trials, lambda: ExpGapElimination(env, delta)))
out = {}
for name, n, make in makers:
  taus, correct, start = [], [], time.time()
  for _ in range(n):
    best, counts, _, _ = make().run()
    taus.append(int(np.sum(counts)))
    correct.append(int(best == int(np.argmax(means))))
  out[name] = {"tau": taus, "correct": correct, "seconds": time.time() - start}
print(json.dumps(out))
"""


def summary(name, tau, correct, seconds):
  tau = np.asarray(tau, float)
  half = 1.96 * tau.std(ddof=1) / np.sqrt(tau.size) if tau.size > 1 else float("nan")
  err = 1.0 - float(np.mean(correct))
  print(f"{name:28s} {tau.mean():10.1f} ({tau.mean() - half:10.1f} .. {tau.mean() + half:10.1f})"
        f"  error {err:.3f}  n {tau.size:5d}  {seconds:6.1f} s", flush=True)


def run_peer(python, script, means, *args):
  """Runs `script` (which prints one JSON object last) with best-arm's Python, the
  means as JSON and `args` as text: its parsed output."""
  out = subprocess.run([python, "-c", script, json.dumps(means)] + [str(a) for a in args],
                       capture_output=True, text=True, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--means", default="0.7,0.5,0.3")
  parser.add_argument("--delta", type=float, default=0.1)
  parser.add_argument("--trials", type=int, default=500)
  parser.add_argument("--peer-trials", type=int, default=100)
  parser.add_argument("--exp-gap-trials", type=int, default=10,
                      help="trials of exponential-gap elimination in each package (about "
                      "a million pulls each)")
  parser.add_argument("--best-arm-python", default="/work/venv-bestarm/bin/python")
  args = parser.parse_args()
  means = [float(m) for m in args.means.split(",")]
  print(f"bernoulli {means}, delta {args.delta}, each rule with its own stop; "
        "mean tau (95% CI)")
  for name, n in (("lucb1", args.trials), ("lil-ucb", args.trials),
                  ("exp-gap", args.exp_gap_trials)):
    start = time.time()
    res = jbai.simulate(jax.random.key(0), "bernoulli", means, name, args.delta, n,
                        max_steps=2**30)
    summary(f"jbai {name}", res.tau, res.correct, time.time() - start)
  for name, rec in run_peer(args.best_arm_python, PEER_SCRIPT, means, args.delta,
                            args.peer_trials, args.exp_gap_trials).items():
    summary(name, rec["tau"], rec["correct"], rec["seconds"])


if __name__ == "__main__":
  main()
