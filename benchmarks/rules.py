"""Step cost of every sampling rule, against TCB in the same process.

For each instance (Gaussian and Bernoulli, K = 5 and K = 20, and the K = 4
instances of Garivier & Kaufmann 2016) and each registered rule, runs
`jbai.simulate` (float32, default device) at delta = 1e-8 (--delta) with the gk16
threshold (a rule with its own stop, `jbai.stops`, with that stop), after a
one-step run that compiles the program, once per trial count in --trials (by
default 256 and 4,096, each on its default pool of lanes,
`jbai.core.pool.default_lanes`, unless --lanes fixes it), and prints, per trial
count:

  * useful trial-steps per second (steps that advanced a trial, over the wall time
    of the chunks after the first one of each program);
  * the ratio of TCB's steps per second to the rule's (how many TCB steps one step
    of the rule costs);
  * the seconds of the compiling run;
  * the trials finished and the trials at the cap;

and, with several trial counts, the steps per second at the largest count over
those at the smallest (1: a step costs the same at any pool width).

With --eps-good EPS every rule runs for eps-good answers: a GLLR rule (TCB among
them) stops with the eps-GLLR, a rule built for eps-good answers (ebtc-eps,
ebtc-eps-ids, lucb1-eps) is built with this eps and stops with its own eps stop,
and a rule with another stop of its own runs as without the option. Without it,
the rules for eps-good answers run with their default eps (0.1) and their own
stop, and TCB with the exact GLLR.

With --top M or --above LEVEL every rule but TCB runs for that question
(`jbai.problems`: its GLLR stop, answer sets; the rules of `jbai.rules.OTHER_QUESTIONS`
built for its m or level), and TCB, the baseline, for the best arm on the same
instance: "x TCB cost" is then a step of the rule for the question against a step
of TCB for the best arm.

A rule whose run outlasts --budget seconds is stopped there (between chunks) and
its figure comes from the chunks run so far, marked "partial".

With --best-arm-python PYTHON (an interpreter with the PyPI package `best-arm`,
kept out of jbai's environment: it pins scipy < 1.13), the script also times that
package's Track-and-Stop (D-tracking, its "practice" stopping rule, which is
gk16) on the Bernoulli K = 5 instance in a subprocess, and prints its steps per
second and jbai's TaS-D ratio to it.

Usage: python benchmarks/rules.py [--trials 256,4096] [--lanes 32] [--budget 60]
                                  [--delta 1e-8] [--eps-good 0.1]
                                  [--rules tcb,ttts] [--instances bernoulli-5]
                                  [--top M | --above LEVEL]
                                  [--best-arm-python /path/to/python]
"""

import argparse
import json
import subprocess
import time

import jax
import numpy as np

import jbai

DELTA = 1e-8
INSTANCES = {
    "gaussian-5": ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0]),
    "bernoulli-5": ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06]),
    "gaussian-20": ("gaussian", [1.2] + np.round(np.linspace(1.0, 0.0, 19), 4).tolist()),
    "bernoulli-20": ("bernoulli", [0.8] + np.round(np.linspace(0.6, 0.05, 19), 4).tolist()),
    "bernoulli-gk": ("bernoulli", [0.5, 0.45, 0.43, 0.4]),
    "gaussian-gk": ("gaussian", [1.0, 0.85, 0.8, 0.7]),
}


# Runs under the best-arm interpreter: trials of its Track-and-Stop until the
# budget is spent; prints the pulls per second of its whole loop as JSON.
BEST_ARM_SCRIPT = """
import json, sys, time
import numpy as np
from best_arm import BaseEnvironment, BernoulliEnvironment
from best_arm.algorithms.track_and_stop import DTracking, TrackAndStop
from best_arm.stopping_conditions import ChernoffStoppingCondition
means, delta, budget = json.loads(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
np.random.seed(0)
env = BernoulliEnvironment.__new__(BernoulliEnvironment)  # its __init__ draws random means
BaseEnvironment.__init__(env, len(means))
env.probs = list(means)
steps = trials = 0
start = time.perf_counter()
while trials == 0 or time.perf_counter() - start < budget:
  algo = TrackAndStop(env, delta, DTracking(len(means)), ChernoffStoppingCondition("practice"))
  steps += int(algo.run()[1].sum())
  trials += 1
seconds = time.perf_counter() - start
print(json.dumps({"steps_per_second": steps / seconds, "trials": trials, "steps": steps}))
"""


def best_arm_rate(python, budget_s):
  """Steps per second of the best-arm package's Track-and-Stop on bernoulli-5."""
  _, means = INSTANCES["bernoulli-5"]
  out = subprocess.run([python, "-c", BEST_ARM_SCRIPT, json.dumps(means), str(DELTA),
                        str(budget_s)], capture_output=True, text=True, check=True,
                       timeout=budget_s + 600)
  return json.loads(out.stdout.strip().splitlines()[-1])


class Budget(Exception):
  """Raised by the progress callback once a run has used its time budget."""


class Meter:
  """Progress callback: useful steps and time at the end of each chunk."""

  def __init__(self, budget_s):
    self.budget_s, self.marks = budget_s, []

  def __call__(self, done, total, useful):
    self.marks.append((time.perf_counter(), useful, done))
    if self.marks[-1][0] - self.marks[0][0] > self.budget_s:
      raise Budget


def for_eps_good(name, eps_good, problem=None):
  """(rule, eps_good of its runs): the rule by name, built with eps_good where it
  takes one (and with the problem's m or level); eps_good where the rule stops
  with the GLLR or with an eps stop of its own, else None (its own stop, exact)."""
  rule = jbai.rules.get(name, eps_good=eps_good, **dict(problem.params if problem else ()))
  own = jbai.stops.own_stop(rule)
  if eps_good is None or (own is not None and jbai.stops.eps_of(own) == 0):
    return rule, None
  return rule, eps_good


def measure(family, means, rule, delta, trials, lanes, max_steps, chunk, budget_s,
            eps_good=None, problem=None):
  """(steps per second, compile seconds, finished trials, trials at the cap, partial,
  lanes) of `trials` trials on a pool of `lanes` lanes (None: the default pool)."""
  lanes = lanes or jbai.core.pool.default_lanes(trials)
  rule, eps_good = for_eps_good(rule, eps_good, problem)
  t0 = time.perf_counter()
  jbai.simulate(jax.random.key(0), family, means, rule, delta, lanes, max_steps=1,
                lanes=lanes, chunk=chunk, shrink=None, eps_good=eps_good, problem=problem)
  compile_s = time.perf_counter() - t0
  meter = Meter(budget_s)
  try:
    res = jbai.simulate(jax.random.key(0), family, means, rule, delta, trials,
                        max_steps=max_steps, lanes=lanes, chunk=chunk, shrink=None,
                        progress=meter, eps_good=eps_good, problem=problem)
  except Budget:
    (t_a, u_a, _), (t_b, u_b, done) = meter.marks[0], meter.marks[-1]
    return (u_b - u_a) / (t_b - t_a), compile_s, done, None, True, lanes
  st = res.stats
  return (st["timed_useful_steps"] / st["wall_seconds"], compile_s, trials,
          int(res.hit_cap.sum()), False, lanes)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", default="256,4096",
                      help="trial counts, comma-separated: one run of each")
  parser.add_argument("--lanes", type=int, default=None,
                      help="lanes of every run (default: the default pool of its trial count)")
  parser.add_argument("--delta", type=float, default=DELTA)
  parser.add_argument("--max-steps", type=int, default=200_000)
  parser.add_argument("--chunk", type=int, default=256)
  parser.add_argument("--budget", type=float, default=60.0, help="seconds per run")
  parser.add_argument("--eps-good", type=float, default=None,
                      help="run every rule for eps-good answers with this eps (see above)")
  parser.add_argument("--top", type=int, default=None, help="every rule but TCB for top-M")
  parser.add_argument("--above", type=float, default=None,
                      help="every rule but TCB for the arms above LEVEL")
  parser.add_argument("--rules", default=",".join(jbai.rules.RULES))
  parser.add_argument("--instances", default=",".join(INSTANCES))
  parser.add_argument("--best-arm-python", default=None,
                      help="a Python with the best-arm package: compare its Track-and-Stop")
  args = parser.parse_args()
  problem = (jbai.problems.top_m(args.top) if args.top is not None else
             jbai.problems.above(args.above) if args.above is not None else None)
  rules = [r for r in args.rules.split(",") if r]
  if "tcb" not in rules:
    rules.insert(0, "tcb")
  counts = [int(n) for n in args.trials.split(",") if n]
  rates = {}
  pools = ", ".join(f"{n} trials on {args.lanes or jbai.core.pool.default_lanes(n)} lanes"
                    for n in counts)
  eps = "" if args.eps_good is None else f"eps-good answers, eps = {args.eps_good:g}, "
  eps += "" if problem is None else f"{problem!r} (TCB: the best arm), "
  print(f"device {jax.devices()[0].platform}, float32, delta = {args.delta:g}, gk16, {eps}"
        f"{pools}, cap {args.max_steps} steps, chunk {args.chunk}, "
        f"budget {args.budget:g} s per run")
  for name in args.instances.split(","):
    family, means = INSTANCES[name]
    print(f"\n{name}: {family} {means}")
    print(f"{'rule':<12} {'trials':>6} {'lanes':>5} {'steps/s':>10} {'x TCB cost':>10} "
          f"{'compile s':>10} {'done':>6} {'at cap':>6}")
    for rule in rules:
      for n in counts:
        rate, compile_s, done, capped, partial, lanes = measure(
            family, means, rule, args.delta, n, args.lanes, args.max_steps, args.chunk,
            args.budget, args.eps_good, None if rule == "tcb" else problem)
        rates[name, rule, n] = rate
        note = "  partial: budget hit" if partial else ""
        print(f"{rule:<12} {n:>6} {lanes:>5} {rate:>10.3g} "
              f"{rates[name, 'tcb', n] / rate:>10.2f} {compile_s:>10.2f} "
              f"{done:>6} {'-' if capped is None else capped:>6}{note}", flush=True)
      if len(counts) > 1:
        print(f"{rule:<12} steps/s at {counts[-1]} over {counts[0]} trials: "
              f"{rates[name, rule, counts[-1]] / rates[name, rule, counts[0]]:.2f}",
              flush=True)
  compare_best_arm(args, rates, counts[0])


def compare_best_arm(args, rates, n):
  """The best-arm package's Track-and-Stop against jbai's TaS-D on bernoulli-5."""
  print(f"\nbest-arm (PyPI) Track-and-Stop, D-tracking, bernoulli-5, gk16 (its 'practice'), "
        f"jbai at {n} trials, delta = {DELTA:g}:")
  if not args.best_arm_python:
    print("  not run; to run it: python3 -m venv /work/venv-bestarm && "
          "/work/venv-bestarm/bin/pip install best-arm, then\n"
          "  python benchmarks/rules.py --rules tcb,tas-d --instances bernoulli-5 "
          "--best-arm-python /work/venv-bestarm/bin/python")
    return
  if ("bernoulli-5", "tas-d", n) not in rates:
    family, means = INSTANCES["bernoulli-5"]
    rates["bernoulli-5", "tas-d", n] = measure(family, means, "tas-d", DELTA, n, args.lanes,
                                               args.max_steps, args.chunk, args.budget)[0]
  theirs = best_arm_rate(args.best_arm_python, min(args.budget, 30.0))
  ours = rates["bernoulli-5", "tas-d", n]
  print(f"  best-arm {theirs['steps_per_second']:.3g} steps/s ({theirs['trials']} trials); "
        f"jbai tas-d {ours:.3g} steps/s: {ours / theirs['steps_per_second']:.0f}x")


if __name__ == "__main__":
  main()
