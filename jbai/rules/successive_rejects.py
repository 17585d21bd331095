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
best of its active arms (sample means, ties at random).

Within a phase the arm pulled is an active arm with the fewest rewards, ties at
random (`jbai.ties.tie_key(key, PULL)`: the arms' order within a phase, so that
the answers between phase ends do not depend on the order of the arms); where the family draws a block of rewards in one go (Bernoulli,
Gaussian: `jbai.families.Family.sample_block`) that arm takes its whole share of
the phase as one block (`pulls`), whose rewards are the same wherever the run's
checkpoints cut it (`jbai.core.lane`): the paper's phase, arm after arm, at the
cost of one step per block. Elsewhere the rewards come one at a time, the arms in
turn.

Ties for the rejection (equal sample means, up to rounding: `jbai.ties.maxima`)
are broken uniformly at random, as the paper's "ties broken arbitrarily" reads
when the arms' order must not matter, with the key of the step at which the phase
ends (`jbai.ties.tie_key(key, ELIMINATE, k)`): `select` and `recommend` at that
step replay the same rejection. The recommendation breaks its ties at random too
(RECOMMEND). The n_k are computed on the host in float64 when the run sets the
budget (`phase_lengths`), so that a float32 run has the same phases. The budget
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
from jbai.ties import first_index


class SuccessiveRejectsState(NamedTuple):
  budget: jax.Array   # [] count_dtype(), the budget n (a runtime value)
  active: jax.Array   # [K] bool, the arms not yet rejected
  phase: jax.Array    # [] int32, the current phase k (K when every rejection is made)
  lengths: jax.Array  # [K] count_dtype(), n_k for k < K (`phase_lengths`, runtime values)

  def with_budget(self, budget) -> "SuccessiveRejectsState":
    """The state for a run to budget n (`jbai.stops.budget.with_budget`): n and
    the phase lengths it gives."""
    num_arms = self.active.shape[-1]
    return self._replace(budget=jnp.asarray(budget, self.budget.dtype),
                         lengths=jnp.asarray(phase_lengths(budget, num_arms),
                                             self.lengths.dtype))


def min_budget(num_arms: int) -> int:
  """The smallest budget: K + 1, so that phase 1 pulls every arm at least once."""
  return num_arms + 1


def log_bar(num_arms: int) -> float:
  """log-bar(K) = 1/2 + sum_{i=2}^K 1/i."""
  return 0.5 + float(np.sum(1.0 / np.arange(2, num_arms + 1)))


def phase_lengths(budget: int, num_arms: int) -> np.ndarray:
  """[K] int64 n_k for k = 0, ..., K - 1 (n_0 = 0), in float64 on the host: exact
  at any budget a count holds, where the float32 of a run without x64 could round
  the quotient across an integer and put n_k one off."""
  k = np.arange(1, num_arms)
  n = np.ceil((int(budget) - num_arms) / (log_bar(num_arms) * (num_arms + 1 - k)))
  return np.concatenate([[0], n]).astype(np.int64)


def phase_length(state: "SuccessiveRejectsState", phase: jax.Array) -> jax.Array:
  """n_k, the rewards each active arm has by the end of phase k (0 for k = 0 and
  k = K), read from the state's table."""
  lengths = state.lengths
  return jnp.sum(jnp.where(jnp.arange(lengths.shape[-1]) == phase, lengths, 0))


def best_active(key: jax.Array, mean: jax.Array, active: jax.Array) -> jax.Array:
  """[] int32, the active arm of highest sample mean, ties broken at random by
  `key` (a `jbai.ties.tie_key`)."""
  return ties.argmax_random_ties(key, jnp.where(active, mean, -jnp.inf))


def worst_active(key: jax.Array, mean: jax.Array, active: jax.Array) -> jax.Array:
  """[] int32, the active arm of lowest sample mean, ties broken at random by `key`."""
  return ties.argmin_random_ties(key, jnp.where(active, mean, jnp.inf))


def _advance(key, arm_stats, state: SuccessiveRejectsState) -> SuccessiveRejectsState:
  """The state after every phase that the counts have completed: each rejects
  its worst active arm, ties at random by tie_key(key, ELIMINATE, k) for phase k
  (a loop of as many passes as phases end now, mostly none)."""
  num_arms = arm_stats.counts.shape[-1]

  def done(s):
    target = phase_length(s, s.phase)
    return (s.phase < num_arms) & jnp.all(~s.active | (arm_stats.counts >= target))

  def reject(s):
    worst = worst_active(ties.tie_key(key, ties.ELIMINATE, s.phase), arm_stats.mean, s.active)
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
    return SuccessiveRejectsState(
        budget=jnp.asarray(num_arms + 1, count_dtype()), active=jnp.ones(num_arms, bool),
        phase=jnp.asarray(1, jnp.int32),
        lengths=jnp.asarray(phase_lengths(num_arms + 1, num_arms), count_dtype()))

  def select(key, family, arm_stats, state):
    del family
    state = _advance(key, arm_stats, state)
    num_arms = arm_stats.counts.shape[-1]
    target = phase_length(state, state.phase)
    needs = state.active & (arm_stats.counts < target)
    big = jnp.iinfo(arm_stats.counts.dtype).max
    fewest = ties.argmin_random_ties(ties.tie_key(key, ties.PULL),
                                     jnp.where(needs, arm_stats.counts, big))
    last = first_index(state.active)  # after the last phase: the one arm left
    return jnp.where(jnp.any(needs), fewest, last).astype(jnp.int32), state

  def recommend(key, family, arm_stats, state):
    del family
    active = _advance(key, arm_stats, state).active
    return best_active(ties.tie_key(key, ties.RECOMMEND), arm_stats.mean, active)

  def pulls(family, arm_stats, state, arm):  # the arm's share of the phase; the last: all
    del family
    target = phase_length(state, state.phase)
    share = target - jnp.sum(jnp.where(jnp.arange(arm_stats.counts.shape[-1]) == arm,
                                       arm_stats.counts, 0))
    return jnp.where(state.phase < arm_stats.counts.shape[-1], share,
                     state.budget).astype(jnp.int32)

  return Rule("successive-rejects", init, select, recommend=recommend, budget=min_budget,
              pulls=pulls)
