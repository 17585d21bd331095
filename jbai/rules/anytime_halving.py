"""Anytime Sequential Halving: Sequential Halving with the doubling trick.

Sequential Halving (`jbai.rules.sequential_halving`) needs its budget in advance.
The doubling trick, the field's standard way to make a fixed-budget rule anytime,
runs it in phases j = 0, 1, 2, ... on budgets B_j = B_0 2^j (B_0 = K ceil(log2 K),
the smallest budget of Sequential Halving), each phase from scratch: every arm
active again, and each round's averages over that round's rewards. A phase that
has halved down to one arm pulls that arm for the rest of its budget. The rule
recommends the arm that the latest finished halving left (the current phase's
once it is down to one arm, else the previous phase's), and the empirical best
arm until a first phase is done. It needs no budget: a run to any budget (or a
stopped run) can use it.

Sources: the doubling trick as the literature on anytime pure exploration uses
it (restart with twice the budget, answer with the last completed run); Zhao,
Stephens, Szepesvari & Jun (2023, "Revisiting Simple Regret: Fast Rates for
Returning a Good Arm") analyse the Sequential Halving that each phase runs. No
reference code of this exact form was found here; its choices (phases from
scratch, the recommendation above) are jbai's.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.rules.base import Rule, empirical_best
from jbai.rules.sequential_halving import (HalvingState, halving_pull, halving_round,
                                           initial_state, min_budget)
from jbai.rules.successive_rejects import best_active
from jbai.state import count_dtype


class AnytimeHalvingState(NamedTuple):
  halving: HalvingState     # the current phase's Sequential Halving (budget: B_j)
  phase_start: jax.Array    # [] count_dtype(), the time t at which phase j began
  answer: jax.Array         # [] int32, the arm the last finished phase left (-1: none)


def _phase(arm_stats, state: AnytimeHalvingState) -> AnytimeHalvingState:
  """The state at time t: a new phase, twice the budget, once the current one's
  budget is spent (its survivor the answer), and the rounds the counts complete."""
  halving = state.halving
  spent = arm_stats.t - state.phase_start >= halving.budget
  num_arms = arm_stats.counts.shape[-1]
  survivor = best_active(arm_stats.mean, halving.active)
  fresh = halving._replace(budget=2 * halving.budget, active=jnp.ones(num_arms, bool),
                           round=jnp.zeros_like(halving.round), start_counts=arm_stats.counts,
                           start_sums=arm_stats.stats[..., 0])
  halving = jax.tree.map(lambda new, old: jnp.where(spent, new, old), fresh, halving)
  state = AnytimeHalvingState(halving=halving_round(arm_stats, halving, halving.budget),
                              phase_start=jnp.where(spent, arm_stats.t, state.phase_start),
                              answer=jnp.where(spent, survivor, state.answer))
  return state


@cached
def anytime_halving() -> Rule:
  """Anytime Sequential Halving: Sequential Halving on budgets doubling from K ceil(log2 K), each phase from scratch.

  Returns:
    The rule (an anytime rule: no budget).
  """

  def init(num_arms):
    return AnytimeHalvingState(halving=initial_state(num_arms, min_budget(num_arms)),
                               phase_start=jnp.zeros((), count_dtype()),
                               answer=jnp.asarray(-1, jnp.int32))

  def select(key, family, arm_stats, state):
    del key, family
    state = _phase(arm_stats, state)
    return halving_pull(arm_stats, state.halving, state.halving.budget), state

  def recommend(family, arm_stats, state):
    state = _phase(arm_stats, state)
    halving = state.halving
    done = jnp.sum(halving.active) == 1
    latest = jnp.where(done, best_active(arm_stats.mean, halving.active), state.answer)
    return jnp.where(latest >= 0, latest,
                     empirical_best(family, arm_stats, state)).astype(jnp.int32)

  return Rule("anytime-halving", init, select, recommend=recommend)
