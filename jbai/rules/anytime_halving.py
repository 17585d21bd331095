"""Anytime Sequential Halving: Sequential Halving with the doubling trick.

Sequential Halving (`jbai.rules.sequential_halving`) needs its budget in advance.
The doubling trick, the field's standard way to make a fixed-budget rule anytime,
runs it in phases j = 0, 1, 2, ... on budgets B_j = B_0 2^j (B_0 = K ceil(log2 K),
the smallest budget of Sequential Halving), each phase from scratch: every arm
active again, and each round's averages over that round's rewards alone (no
reward of an earlier phase or round enters). A phase's answer is the arm its
last round leaves; once it is down to that arm it pulls it for the rest of B_j.
The rule recommends the answer of the latest phase whose halving is done (the
current phase's once its last round has closed, else the previous phase's), and,
until a first phase is done, the empirical best arm (ties at random). It needs no
budget: a run to any budget (or a stopped run) can use it.

A round closes at the step at which its last pull is counted, before the phase's
end is tested (`_phase`), so a phase whose rounds use its budget exactly (K a
power of 2, or K = 3 from the second phase on) answers with its last round's
winner, never with a sample mean over older rewards. Ties for the arms that stay
are broken at random as in Sequential Halving, with the key of the step at which
the round closes.

Sources: the doubling trick as the literature on anytime pure exploration uses
it (restart with twice the budget, answer with the last completed run); Zhao,
Stephens, Szepesvari & Jun (2023, "Revisiting Simple Regret: Fast Rates for
Returning a Good Arm") analyse the Sequential Halving that each phase runs. No
reference code of this exact form was found here; its choices (phases from
scratch, the recommendation above) are jbai's. tests/test_anytime_halving.py
checks it trial for trial against an independent numpy implementation.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.rules.base import Rule, empirical_best
from jbai.rules.sequential_halving import (HalvingState, halving_pull, halving_round,
                                           initial_state, min_budget)
from jbai.state import count_dtype
from jbai.ties import first_index


class AnytimeHalvingState(NamedTuple):
  halving: HalvingState     # the current phase's Sequential Halving (budget: B_j)
  phase_start: jax.Array    # [] count_dtype(), the time t at which phase j began
  answer: jax.Array         # [] int32, the arm the last finished phase left (-1: none)


def _phase(key, arm_stats, state: AnytimeHalvingState) -> AnytimeHalvingState:
  """The state at time t: the rounds the counts complete closed, then, once the
  current phase's budget is spent, its answer (the one arm its rounds left) kept
  and a new phase begun, twice the budget, every arm active again."""
  num_arms = arm_stats.counts.shape[-1]
  halving = halving_round(key, arm_stats, state.halving, state.halving.budget)
  spent = arm_stats.t - state.phase_start >= halving.budget
  survivor = first_index(halving.active)  # one arm: the rounds take at most B_j
  fresh = halving._replace(budget=2 * halving.budget, active=jnp.ones(num_arms, bool),
                           round=jnp.zeros_like(halving.round), start_counts=arm_stats.counts,
                           start_sums=arm_stats.stats[..., 0])
  halving = jax.tree.map(lambda new, old: jnp.where(spent, new, old), fresh, halving)
  return AnytimeHalvingState(halving=halving,
                             phase_start=jnp.where(spent, arm_stats.t, state.phase_start),
                             answer=jnp.where(spent, survivor, state.answer))


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
    del family
    state = _phase(key, arm_stats, state)
    return halving_pull(arm_stats, state.halving, state.halving.budget), state

  def recommend(key, family, arm_stats, state):
    state = _phase(key, arm_stats, state)
    halving = state.halving
    done = jnp.sum(halving.active) == 1
    latest = jnp.where(done, first_index(halving.active), state.answer)
    return jnp.where(latest >= 0, latest,
                     empirical_best(key, family, arm_stats, state)).astype(jnp.int32)

  return Rule("anytime-halving", init, select, recommend=recommend)
