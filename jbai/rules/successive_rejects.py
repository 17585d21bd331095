"""Successive Rejects (Audibert, Bubeck & Munos 2010): a fixed-budget rule.

"Best Arm Identification in Multi-Armed Bandits" (COLT 2010). With a budget of n
rewards and K arms, let log-bar(K) = 1/2 + sum_{i=2}^K 1/i and, for k = 1, ...,
K - 1,

  n_k = ceil((n - K) / (log-bar(K) (K + 1 - k))),   n_0 = 0.

The rule runs K - 1 phases. In phase k each arm still active is pulled until it
has n_k rewards (n_k - n_{k-1} more), then the active arm of lowest sample mean
is rejected. The arm left after phase K - 1 is the answer. The phases take
n_1 + ... + n_{K-1} + n_{K-1} <= n rewards; what the budget leaves after them
goes to the last arm, which changes nothing. At any time the rule recommends the
best of its active arms (sample means, lowest index among ties).

Within a phase the arm pulled is the active arm with the fewest rewards, lowest
index first; where the family draws a block of rewards in one go (Bernoulli,
Gaussian: `jbai.families.Family.sample_block`) that arm takes its whole share of
the phase as one block (`pulls`), whose rewards are the same wherever the run's
checkpoints cut it (`jbai.core.lane`): the paper's phase, arm after arm, at the
cost of one step per block. Elsewhere the rewards come one at a time, the arms in turn. Ties for the rejection (equal
sample means, which the paper leaves to chance) go to the highest index, so that
the answer is the lowest-index arm of a tie, as the recommendation is. The budget
n is a runtime value of the state (`jbai.stops.budget`): every budget shares one
compiled program. A phase whose n_k equals n_{k-1} (a small budget) ends at
once, with the rejection it owes.

Sources: the definitions of log-bar(K), n_k and the phases as the paper states
them, checked against the implementation in xuedong/BestArm.jl
(src/fixed_budget/succ_rej.jl, `compute_nk` and `compute_log_bar` in
src/utils.jl), which has the same n_k; that code pulls each arm's share of a
phase in a row and rejects by `findmin` (the lowest index among ties). The
paper's text itself was not available here (its abstract only).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jbai import ties
from jbai.builders import cached
from jbai.rules.base import Rule
from jbai.state import count_dtype


class SuccessiveRejectsState(NamedTuple):
  budget: jax.Array  # [] count_dtype(), the budget n (a runtime value)
  active: jax.Array  # [K] bool, the arms not yet rejected
  phase: jax.Array   # [] int32, the current phase k (K when every rejection is made)


def min_budget(num_arms: int) -> int:
  """The smallest budget: K + 1, so that phase 1 pulls every arm at least once."""
  return num_arms + 1


def log_bar(num_arms: int) -> float:
  """log-bar(K) = 1/2 + sum_{i=2}^K 1/i."""
  return 0.5 + float(np.sum(1.0 / np.arange(2, num_arms + 1)))


def phase_length(budget: jax.Array, phase: jax.Array, num_arms: int) -> jax.Array:
  """n_k, the rewards each active arm has by the end of phase k (0 for k = 0)."""
  dtype = jnp.result_type(float)
  n = (budget - num_arms).astype(dtype) / (log_bar(num_arms) * (num_arms + 1 - phase))
  return jnp.where(phase > 0, jnp.ceil(n), 0).astype(budget.dtype)


def best_active(mean: jax.Array, active: jax.Array) -> jax.Array:
  """[] int32, the active arm of highest sample mean, lowest index among ties."""
  return ties.argmax(jnp.where(active, mean, -jnp.inf))


def worst_active(mean: jax.Array, active: jax.Array) -> jax.Array:
  """[] int32, the active arm of lowest sample mean, highest index among ties."""
  num_arms = mean.shape[-1]
  return num_arms - 1 - ties.argmin(jnp.where(active, mean, jnp.inf)[::-1])


def _advance(arm_stats, state: SuccessiveRejectsState) -> SuccessiveRejectsState:
  """The state after every phase that the counts have completed: each rejects
  its worst active arm (a loop of as many passes as phases end now, mostly none)."""
  num_arms = arm_stats.counts.shape[-1]

  def done(s):
    target = phase_length(s.budget, s.phase, num_arms)
    return (s.phase < num_arms) & jnp.all(~s.active | (arm_stats.counts >= target))

  def reject(s):
    worst = worst_active(arm_stats.mean, s.active)
    return s._replace(active=s.active & (jnp.arange(num_arms) != worst), phase=s.phase + 1)

  return jax.lax.while_loop(done, reject, state)


@cached
def successive_rejects() -> Rule:
  """Successive Rejects (Audibert, Bubeck & Munos 2010): K - 1 phases, the worst active arm rejected after each; fixed budget.

  Returns:
    The rule (a fixed-budget rule: `jbai.budget` sets its budget).

  Example:
    >>> import jax, jbai
    >>> res = jbai.budget(jax.random.key(0), "bernoulli", [0.5, 0.45, 0.3], "successive-rejects",
    ...                   budget=500, n_trials=64)
  """

  def init(num_arms):
    return SuccessiveRejectsState(budget=jnp.asarray(num_arms + 1, count_dtype()),
                                  active=jnp.ones(num_arms, bool),
                                  phase=jnp.asarray(1, jnp.int32))

  def select(key, family, arm_stats, state):
    del key, family
    state = _advance(arm_stats, state)
    num_arms = arm_stats.counts.shape[-1]
    target = phase_length(state.budget, state.phase, num_arms)
    needs = state.active & (arm_stats.counts < target)
    big = jnp.iinfo(arm_stats.counts.dtype).max
    fewest = ties.argmin(jnp.where(needs, arm_stats.counts, big))
    last = best_active(arm_stats.mean, state.active)  # after the last phase: the answer
    return jnp.where(jnp.any(needs), fewest, last).astype(jnp.int32), state

  def recommend(family, arm_stats, state):
    del family
    return best_active(arm_stats.mean, _advance(arm_stats, state).active)

  def pulls(family, arm_stats, state, arm):  # the arm's share of the phase; the last: all
    del family
    target = phase_length(state.budget, state.phase, arm_stats.counts.shape[-1])
    share = target - jnp.sum(jnp.where(jnp.arange(arm_stats.counts.shape[-1]) == arm,
                                       arm_stats.counts, 0))
    return jnp.where(state.phase < arm_stats.counts.shape[-1], share,
                     state.budget).astype(jnp.int32)

  return Rule("successive-rejects", init, select, recommend=recommend, budget=min_budget,
              pulls=pulls)
