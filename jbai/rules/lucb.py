"""The LUCB sampling step shared by LUCB1 and KL-LUCB.

Kalyanakrishnan et al. 2012 (LUCB1, Algorithm 1 with m = 1) and Kaufmann &
Kalyanakrishnan 2013 (KL-LUCB, Algorithm 1): after one pull of every arm, each
round pulls two arms, the empirical best h_t and the strongest contender

  l_t = argmax_{j != h_t} U_j(t, delta),

with U the upper confidence bound of the rule's index and exploration rate
(`jbai.stops.bounds`). The engine pulls one arm per step, so a round is two
steps: the first pulls h_t and keeps l_t in the state (`pending`), the second
pulls it. The stop (`jbai.stops.confidence`, the rule's own) is checked after
every reward rather than after every round (best-arm checks every round): the
rate beta(t, delta) is a union bound over all t, so the guarantee holds for the
finer check, and tau differs by at most one pull. Ties for h_t are broken
uniformly at random with the step's key; ties for l_t go to the lowest index.

The sampling depends on delta: log(1/delta) is a runtime value in the state
(`log_inv_delta`, set by the engine from the run's level; see jbai.stops.base).

Sources checked: the algorithm numbers above were not checked against the
papers' text (the stored copies here give only their first page). The round was
checked against the codes: `KLLUCB` in the authors' Julia code
(jsfunc/best-arm-identification BAIalgos.jl, Garivier & Kaufmann 2016) and
best-arm's LUCB1 (algorithms/lucb1.py) both pull h_t and l_t each round, with
the exploration rate at t = the number of rewards so far. Where they differ
from jbai: the Julia code breaks ties for l_t at random, and best-arm breaks
ties for h_t and l_t at the lowest index; the Julia code computes the bounds
before the round's two pulls and stops after them on those bounds (its tau
counts the two pulls of the round in which the bounds separated), and best-arm
checks its stop before each round.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.builders import cached
from jbai.rules.base import Rule, hyper, leader, least_sampled
from jbai.stops import bounds as bounds_lib
from jbai.stops.confidence import confidence


class LucbState(NamedTuple):
  log_inv_delta: jax.Array  # [] float, log(1/delta) of the run's level
  pending: jax.Array        # [] int32, l_t still to pull this round (-1: none)


def lucb_init(num_arms) -> LucbState:
  """No round under way; log(1/delta) set by the engine (`jbai.stops.with_delta`)."""
  del num_arms
  return LucbState(hyper(jnp.nan), jnp.asarray(-1, jnp.int32))


@cached
def lucb_select(index: str, rate: str):
  """The select of an LUCB rule with this index and exploration rate."""

  def select(key, family, arm_stats, state):
    counts = arm_stats.counts
    _, up = bounds_lib.rule_bounds(family, index, rate, arm_stats, state.log_inv_delta,
                                   ("upper",))
    top = leader(key, arm_stats)
    contender = ties.argmax(jnp.where(jnp.arange(counts.shape[-1]) == top, -jnp.inf, up))
    return lucb_round(counts, state, top, contender)

  return select


def lucb_round(counts, state: LucbState, first_arm, second_arm):
  """(arm, state): one pull of every arm first, then rounds of two steps, the
  first pulling `first_arm` and keeping `second_arm` in `pending`, the second
  pulling it."""
  first = jnp.min(counts) == 0
  second = state.pending >= 0
  arm = jnp.where(first, least_sampled(counts),
                  jnp.where(second, state.pending, first_arm)).astype(jnp.int32)
  pending = jnp.where(first | second, -1, second_arm).astype(jnp.int32)
  return arm, state._replace(pending=pending)


def lucb_rule(name: str, index: str, rate: str, eps_good: float = 0.0) -> Rule:
  """An LUCB rule, with the confidence stop of the same index and rate as its own
  (with eps_good > 0: LUCB1's eps version of that stop, `jbai.stops.confidence`)."""
  index, rate = bounds_lib.check_index(index), bounds_lib.check_rate(rate)
  stop = confidence(index, rate, eps_good)

  params = (("eps_good", float(eps_good)),) if eps_good else ()
  return Rule(name, lucb_init, lucb_select(index, rate),
              params + (("index", index), ("rate", rate)), stop=stop)
