"""Same trials before and after a change: every rule's trials saved, then compared bit for bit.

A change that is meant to leave every trial as it is (a faster step, a refactoring)
runs this at the commit before and at the commit after, and compares:

  PYTHONPATH=/path/to/worktree-before python experiments/same_trials.py save before.npz
  python experiments/same_trials.py save after.npz
  python experiments/same_trials.py compare before.npz after.npz

`save` runs `jbai.simulate` for every stopping rule (40 trials, delta = 0.01, a cap of
20,000 steps) and `jbai.budget` for the fixed-budget rules and a few others (60 trials
to T = 400), on a Gaussian, a Bernoulli and a Poisson instance with a tied pair (with
--arms K > 5, the stopping runs' instances have K - 5 more arms spread below those
five; --families adds weibull, whose MLE of the mean is not the sample mean), in
float32 and float64, and writes tau, the answers and the counts (the
recommendations and counts of budget runs) to one npz file; a rule that refuses a
family or a mode is skipped with its reason. `compare` prints the arrays that differ
(exit 1 if any) or how many are equal. --rules restricts `save` to some rules;
--top M, --above LEVEL and --eps-good EPS ask the stopping runs that question
(`jbai.simulate`'s problem and eps_good; with --top or --above, the rules of
`jbai.rules.OTHER_QUESTIONS` built for its m or level too; the rules that refuse
it are skipped).
"""

import argparse
import sys

import jax
import numpy as np

import jbai

INSTANCES = {"gaussian": [1.2, 1.0, 1.0, 0.9, 0.5], "bernoulli": [0.8, 0.6, 0.6, 0.3, 0.1],
             "poisson": [3.0, 2.0, 2.0, 1.0, 0.5], "weibull": [3.0, 2.0, 2.0, 1.0, 0.5]}
FLOORS = {"gaussian": 0.0, "bernoulli": 0.02, "poisson": 0.1, "weibull": 0.1}  # the lowest
FAMILIES = "gaussian,bernoulli,poisson"  # save's default
BUDGET_INSTANCES = {"gaussian": [0.5, 0.4, 0.4, 0.3, 0.2],
                    "bernoulli": [0.5, 0.45, 0.45, 0.4, 0.3]}
BUDGET_RULES = ["successive-rejects", "sequential-halving", "ucb-e", "ugape-b",
                "anytime-halving", "tcb", "ttts", "ebtc", "tas-d"]


def instances(arms: int, families) -> dict:
  """INSTANCES of `families` with `arms` arms: theirs, then arms - 5 spread below
  their lowest."""
  return {family: INSTANCES[family] + [
      round(float(x), 4) for x in np.linspace(min(INSTANCES[family]), FLOORS[family],
                                              arms - 4)[1:]] for family in families}


def save(path, rules, arms=5, families=FAMILIES.split(","), problem=None, eps_good=None):
  arrays = {}
  asked = {} if problem is None else {"problem": problem}
  asked.update({} if eps_good is None else {"eps_good": eps_good})
  built = dict(problem.params) if problem is not None else {}  # m or level of a question's rules
  names = rules or list(jbai.rules.ALL if problem is not None else jbai.rules.RULES)
  for x64 in (False, True):
    with jax.enable_x64(x64):
      for family, means in instances(arms, families).items():
        for rule in names:
          try:
            run = (jbai.rules.get(rule, **built) if rule in jbai.rules.OTHER_QUESTIONS else
                   rule)
            res = jbai.simulate(jax.random.key(3), family, [means], run, delta=[0.01],
                                n_trials=40, max_steps=20000, **asked)
          except ValueError as e:
            print(f"skip simulate {rule} {family}: {str(e)[:70]}")
            continue
          name = f"simulate-{rule}-{family}-x64={x64}"
          arrays.update({f"{name}-tau": res.tau, f"{name}-answer": res.answer,
                         f"{name}-counts": res.counts})
      for family, means in BUDGET_INSTANCES.items() if not asked else ():
        for rule in [r for r in BUDGET_RULES if not rules or r in rules]:
          res = jbai.budget(jax.random.key(5), family, [means], rule, budget=400, n_trials=60)
          name = f"budget-{rule}-{family}-x64={x64}"
          arrays.update({f"{name}-recommendation": res.recommendation,
                         f"{name}-counts": res.counts})
  np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})
  print(f"{len(arrays)} arrays in {path}")


def compare(before, after) -> int:
  a, b = np.load(before), np.load(after)
  missing = sorted(set(a.files) ^ set(b.files))
  differ = [k for k in sorted(set(a.files) & set(b.files)) if not np.array_equal(a[k], b[k])]
  for k in missing:
    print(f"only in one file: {k}")
  for k in differ:
    print(f"differs: {k}")
  if not differ:
    print(f"{len(set(a.files) & set(b.files))} arrays equal bit for bit")
  return 1 if differ else 0


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  sub = parser.add_subparsers(dest="command", required=True)
  p_save = sub.add_parser("save", help="run every rule and write its trials")
  p_save.add_argument("path")
  p_save.add_argument("--rules", default="", help="comma-separated rule names (all)")
  p_save.add_argument("--arms", type=int, default=5, help="arms of the stopping runs' instances")
  p_save.add_argument("--families", default=FAMILIES, help="comma-separated, of " +
                      ",".join(INSTANCES))
  p_save.add_argument("--top", type=int, help="ask for the top M arms")
  p_save.add_argument("--above", type=float, help="ask for the arms above LEVEL")
  p_save.add_argument("--eps-good", type=float, help="ask for an eps-good arm")
  p_compare = sub.add_parser("compare", help="compare two saved files")
  p_compare.add_argument("before")
  p_compare.add_argument("after")
  args = parser.parse_args()
  if args.command == "save":
    save(args.path, [r for r in args.rules.split(",") if r], args.arms,
         args.families.split(","), jbai.problems.asked(args.top, args.above), args.eps_good)
    return 0
  return compare(args.before, args.after)


if __name__ == "__main__":
  sys.exit(main())
