"""The cost of `checks=True` (`jbai.checks`): `jbai.rollout` under the
caller's jit with checks off and on, in the same process.

Three rules on the Gaussian instance [1.2, 1, 1, 1, 1] at delta = 1e-8 (gk16),
float32, --trials trials (default 1,000) on the default pool, each compiled once
before it is timed (--repeats runs, best wall time kept):

  * tcb, jbai's own rule: checks=True checks the traced means and delta once
    (its arms are in range by construction, so no step is checked);
  * "user tcb": the same select wrapped in a function of this script, so that
    jbai treats it as a user's rule and checks its arm on every step;
  * with checks off, the same programs as the plain `rollout`.

Prints steps per second off and on and their ratio (1.00: no cost). Checked runs
go through `checkify.checkify`, as a caller's checked code would.

Usage: python benchmarks/checks.py [--trials 1000] [--repeats 3]
"""

import argparse
import time

import jax
import jax.numpy as jnp
from jax.experimental import checkify

import jbai

MEANS = [1.2, 1.0, 1.0, 1.0, 1.0]
DELTA = 1e-8


class UserTcb:
  """TCB's select in a rule object of the user's: checked on every step."""

  name = "user-tcb"

  def __init__(self):
    self._rule = jbai.rules.tcb()

  def init(self, num_arms):
    return self._rule.init(num_arms)

  def select(self, key, family, arm_stats, state):
    return self._rule.select(key, family, arm_stats, state)


def timed(fn, repeats: int) -> tuple:
  """(best seconds, steps) of fn() after one compiling call."""
  jax.block_until_ready(fn())
  best, steps = float("inf"), 0
  for _ in range(repeats):
    start = time.perf_counter()
    steps = int(jax.block_until_ready(fn()))
    best = min(best, time.perf_counter() - start)
  return best, steps


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--trials", type=int, default=1000)
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  means = jnp.asarray(MEANS)
  key = jax.random.key(0)
  print(f"rollout, gaussian {MEANS}, delta {DELTA}, {args.trials} trials, "
        f"{jax.devices()[0].platform}, best of {args.repeats}")
  print(f"{'rule':<10} {'steps/s off':>12} {'steps/s on':>12} {'on/off':>7}")
  for label, rule in (("tcb", "tcb"), ("user tcb", UserTcb())):
    def run(checks, rule=rule):
      return jax.jit(lambda m: jnp.sum(jbai.rollout(
          key, "gaussian", m, rule, DELTA, args.trials, scores=False,
          checks=checks).tau))
    plain = run(False)
    checked = checkify.checkify(run(True))

    def checked_steps():
      error, steps = checked(means)
      error.throw()
      return steps

    off, steps_off = timed(lambda: plain(means), args.repeats)
    on, steps_on = timed(checked_steps, args.repeats)
    assert steps_off == steps_on, (steps_off, steps_on)  # the same trials
    print(f"{label:<10} {steps_off / off:>12.3g} {steps_on / on:>12.3g} {off / on:>7.2f}")


if __name__ == "__main__":
  main()
