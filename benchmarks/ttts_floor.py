"""The cost floor of an exact TTTS step, against TCB, T3C and TTTS in the same process.

TTTS draws the posterior for its leader and at least once more for its
challenger. The floor rule here does exactly that much and nothing else: its
challenger is the argmax of a second, unconditioned posterior draw (which may be
the leader: it is not TTTS, only what any exact TTTS step must pay before it
conditions on argmax != L). The gap between TTTS and the floor is the cost of
the conditioning (jbai.rules.ttts: the envelopes, the union proposal and the
rejection rounds).

With --parts, two more rules time TTTS with parts of its conditioning taken
out (timing only: they do not draw TTTS's law), so that floor, bare, first and
ttts each add one part to the one before: "bare" adds one union proposal made
with the floor's second draw as the other arms, with a cheap stand-in for the
envelope masses (minus the squared distance of the posterior centres); "first"
puts the envelope masses in place of the stand-in; TTTS itself adds the
rejection loop (a rejected proposal of bare and first takes the arm of largest
mass).

A part rule's choices differ from TTTS's where its first round is rejected; its
figure is a cost only while its trials run as TTTS's do. Two columns show where
they do not: "trials", the fewest trials that one run finished within its
budget (TTTS finishes them all), and "at cap", the most trials that one
finished run stopped at the step cap (such a trial keeps its lane running alone
in the run's tail, which lowers the steps per second of the whole run). The
floor's trials run longer than TTTS's (its challenger is often the leader), so
its runs stop at the budget with every lane busy: if anything that makes its
figure cheaper, and it stays a floor.

Rules run in turn, --repeats times (interleaved, to spread the machine's drift
over all of them); the printed figure is the median of the useful steps per
second, with its ratio to TCB's median (how many TCB steps one step costs).
Same measurement as benchmarks/rules.py (float32, delta = 1e-8, gk16).

Usage: python benchmarks/ttts_floor.py [--instances bernoulli-5,gaussian-5]
                                       [--repeats 3] [--budget 6] [--parts]
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from jbai.rules.top_two import top_two_rule
from jbai.rules.ttts import Envelopes, envelopes, pick, propose
from jbai.ties import first_max

from rules import INSTANCES, measure


def floor_pair(k_lead, k_chal, family, arm_stats, active):
  """The leader and the argmax of a second, independent posterior draw."""
  del active
  law = family.posterior_sample.law(arm_stats.counts, arm_stats.stats)
  return first_max(law.sample(k_lead)), first_max(law.sample(k_chal))


def first_round_pair(masses: bool):
  """TTTS's leader and the first round of its challenger (no rejection loop; a
  rejected round takes the arm of largest mass), with the envelope masses or
  their stand-in (jbai.rules.ttts.exact_challenger, parts taken out)."""

  def pair(k_lead, k_chal, family, arm_stats, active):
    del active
    law = family.posterior_sample.law(arm_stats.counts, arm_stats.stats)
    lead = first_max(law.sample(k_lead))
    if masses:
      env = envelopes(law, lead)
    else:
      centre = law.centre()
      is_lead = jnp.arange(centre.shape[-1]) == lead
      stand_in = -(centre - pick(is_lead, centre)) ** 2
      env = Envelopes(jax.tree.map(lambda x: pick(is_lead, x), law),
                      jnp.where(is_lead, -jnp.inf, stand_in))
    arm = propose(k_chal, law, lead, env)
    return lead, jnp.where(arm < 0, first_max(env.log_mass), arm).astype(jnp.int32)

  return pair


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--instances", default="bernoulli-5,gaussian-5")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--budget", type=float, default=6.0, help="seconds per run")
  parser.add_argument("--trials", type=int, default=256)
  parser.add_argument("--lanes", type=int, default=32)
  parser.add_argument("--parts", action="store_true",
                      help="also time TTTS with parts of its conditioning taken out")
  args = parser.parse_args()
  rules = {"tcb": "tcb", "t3c": "t3c",
           "floor": top_two_rule("ttts-floor", (), beta=0.5, pair_fn=floor_pair)}
  if args.parts:
    for label, masses in (("bare", False), ("first", True)):
      rules[label] = top_two_rule(f"ttts-{label}", (), beta=0.5,
                                  pair_fn=first_round_pair(masses))
  rules["ttts"] = "ttts"
  print(f"float32, delta = 1e-08, gk16, {args.trials} trials, {args.lanes} lanes, "
        f"median of {args.repeats} runs of at most {args.budget:g} s")
  for name in args.instances.split(","):
    family, means = INSTANCES[name]
    rates = {rule: [] for rule in rules}
    capped = {rule: 0 for rule in rules}
    finished = {rule: args.trials for rule in rules}
    for _ in range(args.repeats):
      for label, rule in rules.items():
        rate, _, done, at_cap, _ = measure(family, means, rule, args.trials, args.lanes,
                                           200_000, 256, args.budget)
        rates[label].append(rate)
        capped[label] = max(capped[label], at_cap or 0)
        finished[label] = min(finished[label], done)
    tcb = np.median(rates["tcb"])
    print(f"\n{name}: {family} {means}")
    print(f"{'rule':<8} {'steps/s':>10} {'x TCB cost':>10} {'trials':>7} {'at cap':>7}")
    for label, values in rates.items():
      print(f"{label:<8} {np.median(values):>10.3g} {tcb / np.median(values):>10.2f} "
            f"{finished[label]:>7} {capped[label]:>7}")
    print(f"TTTS's conditioning: {tcb / np.median(rates['ttts']) - tcb / np.median(rates['floor']):.2f}"
          " TCB steps per step (TTTS minus the floor)")


if __name__ == "__main__":
  main()
