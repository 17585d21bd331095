"""jbai's game rules against the peer package best-arm on one instance: mean tau with CIs.

Runs best-arm's AdaHedge game (`AdaHedgeBestResponse`) and gradient ascent
(`GradientAscent`), both with its Chernoff stop in "practice" mode (threshold
log((log t + 1) / delta), jbai's gk16), in a subprocess of an interpreter that has
best-arm (it is not a dependency of jbai), and jbai's dkm (one learner per answer,
the paper; and shared=True, one learner as best-arm has), gradient-ascent and
tas-d with the gk16 threshold, on the same Bernoulli instance and delta. Prints
mean tau with a normal 95% CI, the error rate and the seconds of each.

Known differences (read from best-arm's algorithms/adahedge.py and
gradient_ascent.py): best-arm's game uses f(t) = log(t + 1), jbai's dkm log t
(Koolen's code); best-arm keeps one AdaHedge learner for every answer (jbai's
shared=True), the paper one per answer; ties (argmax / argmin) go to the lowest
index there and are broken at random in jbai.

Usage: python benchmarks/best_arm_games.py [--means 0.5,0.4,0.3,0.2] [--delta 0.1]
                                           [--trials 200] [--peer-trials 200]
                                           [--best-arm-python /work/venv-bestarm/bin/python]
                                           [--peer-seed 0] [--peer-only]
"""

import argparse
import json
import time

import jax
import numpy as np

import jbai
from best_arm_peer import run_peer, summary

PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
from best_arm.environment import BernoulliEnvironment
from best_arm.algorithms.adahedge import AdaHedgeBestResponse
from best_arm.algorithms.gradient_ascent import GradientAscent
from best_arm.stopping_conditions import ChernoffStoppingCondition

means, delta, trials = json.loads(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
np.random.seed(int(sys.argv[4]))
out = {}
for name, algo in (("best-arm AdaHedge", AdaHedgeBestResponse),
                   ("best-arm GradientAscent", GradientAscent)):
  taus, correct, start = [], [], time.time()
  for _ in range(trials):
    env = BernoulliEnvironment.from_dict({"env_name": "bernoulli",
                                          "state": {"probs": means}})
    best, counts, _, _ = algo(env, delta, ChernoffStoppingCondition("practice")).run()
    taus.append(int(np.sum(counts)))
    correct.append(int(best == int(np.argmax(means))))
  out[name] = {"tau": taus, "correct": correct, "seconds": time.time() - start}
print(json.dumps(out))
"""


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--means", default="0.5,0.4,0.3,0.2")
  parser.add_argument("--delta", type=float, default=0.1)
  parser.add_argument("--trials", type=int, default=1000)
  parser.add_argument("--peer-trials", type=int, default=200)
  parser.add_argument("--best-arm-python", default="/work/venv-bestarm/bin/python")
  parser.add_argument("--peer-seed", type=int, default=0, help="numpy seed of best-arm's runs")
  parser.add_argument("--peer-only", action="store_true", help="run best-arm only")
  args = parser.parse_args()
  means = [float(m) for m in args.means.split(",")]
  print(f"bernoulli {means}, delta {args.delta}, threshold gk16; mean tau (95% CI)")
  rules = [("jbai dkm", jbai.rules.dkm()), ("jbai dkm shared=True", jbai.rules.dkm(shared=True)),
           ("jbai gradient-ascent", jbai.rules.gradient_ascent()),
           ("jbai tas-d", jbai.rules.tas_d())]
  for name, rule in ([] if args.peer_only else rules):
    start = time.time()
    res = jbai.simulate(jax.random.key(0), "bernoulli", means, rule, args.delta,
                        args.trials, threshold="gk16")
    summary(name, res.tau, res.correct, time.time() - start)
  for name, rec in run_peer(args.best_arm_python, PEER_SCRIPT, means, args.delta,
                            args.peer_trials, args.peer_seed).items():
    summary(name, rec["tau"], rec["correct"], rec["seconds"])


if __name__ == "__main__":
  main()
