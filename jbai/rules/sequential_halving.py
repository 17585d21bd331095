"""Sequential Halving (Karnin, Koren & Somekh 2013): a fixed-budget rule.

"Almost Optimal Exploration in Multi-Armed Bandits" (ICML 2013), Algorithm 1.
With a budget of T rewards and K arms, the rule runs R = ceil(log2 K) rounds,
from S_0, every arm. In round r each arm of S_r is pulled

  t_r = floor(T / (|S_r| R))

times, and the ceil(|S_r| / 2) arms of highest average reward over round r's
pulls stay (S_{r+1}). The arm left after the last round is the answer; the rounds
take at most T rewards, and what the budget leaves after them goes to that arm.
At any time the rule recommends the best of its active arms by their sample means
over all their rewards (ties at random).

Within a round the arm pulled is an arm of S_r with the fewest of the round's
rewards, ties at random (`jbai.ties.tie_key(key, PULL)`: the arms' order within a
round); where the family draws a block of rewards in one go
(Bernoulli, Gaussian) it takes its whole share of the round as one block
(`pulls`), whose rewards are the same wherever the run's checkpoints cut it
(`jbai.core.lane`): the paper's round, arm after arm. Elsewhere the rewards come
one at a time, the arms in turn. The averages of a round use its rewards alone
(the paper's, what xuedong/BestArm.jl calls "with refresh"). Ties for the arms
that stay (equal averages, exactly: `jbai.ties.order_random_ties`) are broken
uniformly at random with the key of the step at which the round ends
(`jbai.ties.tie_key(key, ELIMINATE, r)`), which `select` and `recommend` share;
the recommendation breaks its ties at random too (RECOMMEND). The budget is a
runtime value of the state (`jbai.stops.budget`), at least K ceil(log2 K), so
that every round pulls each of its arms at least once.

`halving_round` (the end of a round) and `halving_pull` (a pull within it) serve
the anytime version too (`jbai.rules.anytime_halving`).

Sources: t_r and the rounds as Algorithm 1 states them, checked against the
implementation in xuedong/BestArm.jl (src/fixed_budget/seq_halv.jl,
`seq_halving_ref`, and `tr` in src/utils.jl, which rounds T / (|S_r| R) to the
nearest integer where the paper takes its floor). The paper's text itself was not
available here (its abstract only).
"""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.builders import cached
from jbai.rules.base import Rule
from jbai.rules.successive_rejects import best_active
from jbai.state import count_dtype
from jbai.ties import first_index


class HalvingState(NamedTuple):
  budget: jax.Array        # [] count_dtype(), the budget T (a runtime value)
  active: jax.Array        # [K] bool, the arms still in (S_r)
  round: jax.Array         # [] int32, the current round r (R once one arm is left)
  start_counts: jax.Array  # [K] count_dtype(), the counts when round r began
  start_sums: jax.Array    # [K] float, the sums of the rewards then


def rounds(num_arms: int) -> int:
  """R = ceil(log2 K)."""
  return max(1, math.ceil(math.log2(num_arms)))


def min_budget(num_arms: int) -> int:
  """The smallest budget whose every round pulls each of its arms: K R."""
  return num_arms * rounds(num_arms)


def round_length(budget: jax.Array, active: jax.Array) -> jax.Array:
  """t_r = floor(T / (|S_r| R)), the pulls of each arm of S_r in round r."""
  return budget // (jnp.sum(active).astype(budget.dtype) * rounds(active.shape[-1]))


def halving_round(key, arm_stats, state: HalvingState, budget: jax.Array) -> HalvingState:
  """The state after every round that the counts have completed (a loop of as
  many passes as rounds end now, mostly none): each keeps the ceil(|S_r|/2) arms
  of highest average over the round's rewards, ties at random by
  tie_key(key, ELIMINATE, r), then starts the next round."""
  num_arms = arm_stats.counts.shape[-1]
  sums = arm_stats.stats[..., 0]

  def done(s):
    pulled = arm_stats.counts - s.start_counts
    return ((s.round < rounds(num_arms)) & (jnp.sum(s.active) > 1) &
            jnp.all(~s.active | (pulled >= round_length(budget, s.active))))

  def halve(s):
    pulled = jnp.maximum(arm_stats.counts - s.start_counts, 1).astype(sums.dtype)
    average = jnp.where(s.active, (sums - s.start_sums) / pulled, -jnp.inf)
    order = ties.order_random_ties(ties.tie_key(key, ties.ELIMINATE, s.round), average)
    keep = (jnp.sum(s.active) + 1) // 2
    stays = jnp.zeros(num_arms, bool).at[order].set(jnp.arange(num_arms) < keep)
    return s._replace(active=s.active & stays, round=s.round + 1,
                      start_counts=arm_stats.counts, start_sums=sums)

  return jax.lax.while_loop(done, halve, state)


def halving_pull(arm_stats, state: HalvingState, budget: jax.Array, key=None) -> jax.Array:
  """[] int32, the next pull of the round: an arm of S_r with the fewest of the
  round's rewards below t_r (ties at random by `key`, a `jbai.ties.tie_key`; None:
  the lowest index), else (one arm left) that arm."""
  pulled = arm_stats.counts - state.start_counts
  needs = state.active & (pulled < round_length(budget, state.active))
  big = jnp.iinfo(pulled.dtype).max
  waiting = jnp.where(needs, pulled, big)
  fewest = ties.argmin(waiting) if key is None else ties.argmin_random_ties(key, waiting)
  last = first_index(state.active)
  return jnp.where(jnp.any(needs), fewest, last).astype(jnp.int32)


def halving_share(arm_stats, state: HalvingState, budget: jax.Array, arm) -> jax.Array:
  """[] int32, the rewards `arm` still takes in round r (t_r less the round's so
  far), or the whole budget once one arm is left (the engine cuts a block at the
  run's end)."""
  one = jnp.arange(arm_stats.counts.shape[-1]) == arm
  pulled = jnp.sum(jnp.where(one, arm_stats.counts - state.start_counts, 0))
  share = round_length(budget, state.active) - pulled
  return jnp.where(jnp.sum(state.active) > 1, share, budget).astype(jnp.int32)


def initial_state(num_arms: int, budget: int) -> HalvingState:
  dtype = count_dtype()
  return HalvingState(budget=jnp.asarray(budget, dtype), active=jnp.ones(num_arms, bool),
                      round=jnp.asarray(0, jnp.int32),
                      start_counts=jnp.zeros(num_arms, dtype),
                      start_sums=jnp.zeros(num_arms, jnp.result_type(float)))


@cached
def sequential_halving() -> Rule:
  """Sequential Halving (Karnin, Koren & Somekh 2013): ceil(log2 K) rounds, the better half kept after each; fixed budget.

  Returns:
    The rule (a fixed-budget rule: `jbai.budget` sets its budget, at least
    K ceil(log2 K)).
  """

  def init(num_arms):
    return initial_state(num_arms, min_budget(num_arms))

  def select(key, family, arm_stats, state):
    del family
    state = halving_round(key, arm_stats, state, state.budget)
    return halving_pull(arm_stats, state, state.budget, ties.tie_key(key, ties.PULL)), state

  def recommend(key, family, arm_stats, state):
    del family
    active = halving_round(key, arm_stats, state, state.budget).active
    return best_active(ties.tie_key(key, ties.RECOMMEND), arm_stats.mean, active)

  def pulls(family, arm_stats, state, arm):
    del family
    return halving_share(arm_stats, state, state.budget, arm)

  return Rule("sequential-halving", init, select, recommend=recommend, budget=min_budget,
              pulls=pulls)
