"""The elimination stop: stop when one arm remains active.

Racing rules (Kaufmann & Kalyanakrishnan 2013, KL-Racing; Garivier & Kaufmann
2016, Chernoff-Racing) and exponential-gap elimination (Karnin et al. 2013,
Algorithm 2) keep a set of active arms in their state and return the last arm
standing. The stop is built by the rule from its `survivors(family, arm_stats,
rule_state) -> [K] bool`: the active set *after* the elimination that the
current statistics trigger, so that the trial stops at the step where the last
elimination happens, as in the papers (no extra pull). The answer is the
surviving arm. The rule's sampling carries its single delta in its state
(`jbai.stops.base`), so the statistic is the same for every level.
"""

import jax.numpy as jnp

from jbai.builders import cached
from jbai.stops.base import Stop
from jbai.thresholds.base import log_inv_delta


def _init(delta, num_arms):
  del num_arms
  return log_inv_delta(delta)


@cached
def _test_fn(survivors):
  def test(*args):
    params, family, arm_stats, rule_state = args[-4:]
    active = survivors(*args[:-4], family, arm_stats, rule_state)  # the key where keyed
    top = jnp.argmax(active).astype(jnp.int32)
    one = (jnp.sum(active) == 1).astype(arm_stats.mean.dtype)
    stat = jnp.broadcast_to(one, jnp.shape(params)).astype(arm_stats.mean.dtype)
    return top, top, stat, jnp.full_like(stat, 0.5)
  return test


def elimination(survivors, rule_name: str, keyed: bool = False) -> Stop:
  """The stop of an eliminating rule: one arm left in `survivors`.

  Args:
    survivors: survivors(family, arm_stats, rule_state) -> [K] bool, or, `keyed`,
      survivors(key, family, arm_stats, rule_state) with the key of step t (ties
      broken at random: `jbai.stops.base.Stop.keyed`).
    rule_name: the rule it serves (the only one).
    keyed: whether survivors takes the key.

  Returns:
    The stop.
  """
  return Stop("elimination", _init, _test_fn(survivors), (), rules=(rule_name,),
              keyed=keyed)
