"""The racing step shared by KL-Racing and Chernoff-Racing.

Kaufmann & Kalyanakrishnan 2013 (KL-Racing, Section 3 with m = 1) and Garivier &
Kaufmann 2016 (Chernoff-Racing, Section 5): arms are sampled in rounds, one pull
of every active arm per round; when a round ends (every active arm has r
rewards), the empirical best b and the empirical worst w of the active arms are
compared and w is eliminated when the rule's test `eliminate(family, arm_stats,
b, w, r, log_inv_delta)` says so (one elimination per round).
The trial stops when one arm remains (`jbai.stops.elimination`, the rule's own
stop), the answer that arm. Within a round the arms are pulled in index order.
Ties for b and w are broken uniformly at random (as EmilieKaufmann/BAI_epsBAI_code
does), each with its own key from the key of the step at which the round ends
(`jbai.ties.tie_key(key, ELIMINATE, 0 or 1)`). The arms tied for w at the end of a
round have equal counts r, so which one goes out no longer depends on their order.

`survivors` is the active set after the elimination that the current statistics
trigger; the stop and `select` both call it, with the same key of step t, so the
trial stops in the step of the last elimination and both reach the same one.

Sources checked: the papers' section numbers were not checked against their
text (the stored copies here give only the first page of each). The round
structure was checked against the authors' Julia code, `KLRacing` and
`ChernoffRacing` in jsfunc/best-arm-identification BAIalgos.jl (Garivier &
Kaufmann, 2016): every active arm is pulled once per round in index order, the
best and the worst active arms are compared once the round is complete, at most
one arm is eliminated per round, and ties for b and w go to the lowest index
there (its random pick among ties draws from a one-element set). Where they
differ: that code pulls every arm once and then runs a second round before its
first test (its first test has r = 2), while jbai tests from the end of the
first round (r = 1); and the later EmilieKaufmann/BAI_epsBAI_code (2020) breaks
ties for b and w at random.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.builders import cached
from jbai.rules.base import Rule, hyper
from jbai.stops.elimination import elimination


class RacingState(NamedTuple):
  log_inv_delta: jax.Array  # [] float, log(1/delta) of the run's level
  active: jax.Array         # [K] bool, the arms still in the race


@cached
def survivors_fn(eliminate):
  """survivors(key, family, arm_stats, state) -> [K] bool for the elimination test."""

  def survivors(key, family, arm_stats, state):
    active = state.active
    big = jnp.iinfo(arm_stats.counts.dtype).max
    r = jnp.min(jnp.where(active, arm_stats.counts, big))
    round_done = (r >= 1) & (jnp.max(jnp.where(active, arm_stats.counts, -1)) == r)
    mean = arm_stats.mean
    b = ties.argmax_random_ties(ties.tie_key(key, ties.ELIMINATE, 0),
                                jnp.where(active, mean, -jnp.inf))
    w = ties.argmin_random_ties(ties.tie_key(key, ties.ELIMINATE, 1),
                                jnp.where(active, mean, jnp.inf))
    drop = round_done & (jnp.sum(active) > 1) & eliminate(
        family, arm_stats, b, w, r, state.log_inv_delta)
    return active & ~(drop & (jnp.arange(active.shape[-1]) == w))

  return survivors


@cached
def _select_fn(eliminate):
  survivors = survivors_fn(eliminate)

  def select(key, family, arm_stats, state):
    active = survivors(key, family, arm_stats, state)
    big = jnp.iinfo(arm_stats.counts.dtype).max
    arm = ties.argmin(jnp.where(active, arm_stats.counts, big))
    return arm, state._replace(active=active)

  return select


def racing_rule(name: str, eliminate, params: tuple) -> Rule:
  """A racing rule with this elimination test, its own stop `elimination`."""

  def init(num_arms):
    return RacingState(hyper(jnp.nan), jnp.ones(num_arms, bool))

  return Rule(name, init, _select_fn(eliminate), params,
              stop=elimination(survivors_fn(eliminate), name, keyed=True))
