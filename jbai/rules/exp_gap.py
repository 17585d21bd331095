"""Exponential-gap elimination (Karnin, Koren & Somekh 2013, Algorithm 2).

Rounds r = 1, 2, ... with eps_r = 2^-r / 4 and delta_r = delta / (50 r^3):
  1. pull every active arm t_r = ceil((2 / eps_r^2) log(2 / delta_r)) times and
     let p_r be the means of these fresh rewards;
  2. i_r = MedianElimination(S_r, eps_r / 2, delta_r) (Even-Dar, Mannor &
     Mansour 2006, Algorithm 2): from eps_1 = eps / 4, delta_1 = delta / 2, pull
     every arm of the set ceil((4 / eps_l^2) log(3 / delta_l)) times, keep the
     arms whose fresh mean is at least the median, eps_{l+1} = 3 eps_l / 4,
     delta_{l+1} = delta_l / 2, until one arm is left;
  3. S_{r+1} = {i in S_r : p_r(i) >= p_r(i_r) - eps_r}.
The trial stops when one arm is active (`jbai.stops.elimination`, own stop).
The sample sizes are for rewards in [0, 1]; other sub-Gaussian families scale
them by 4 s^2 (s^2 the variance proxy, `jbai.stops.bounds.subgaussian_variance`).

Where the sources differ: Karnin et al. and Even-Dar et al. use fresh rewards in
every phase (as here: the state keeps each phase's starting counts and sums);
best-arm uses the means of all the rewards so far. The median of an even number
of means is the average of the two middle ones (numpy's, as best-arm). Within a
phase the arms are pulled in index order, the least-pulled first. A phase's
pulls of one arm form a block (`Rule.pulls`): with Bernoulli or Gaussian rewards
the engine draws their sum in one step (a binomial or a normal), so a trial of
10^7 pulls takes a few hundred steps; with scores, pull by pull.

Sources checked: every constant above (eps_r, delta_r, t_r, the median
elimination's eps_1, delta_1, sample size and updates, the elimination of step
3) agrees with best-arm (algorithms/exp_gap_elim.py), which pulls each arm its
whole sample size in turn. Algorithm 2 of Karnin et al., the median elimination
algorithm of Even-Dar et al. and the use of fresh rewards in each phase were
not checked against the papers' text (no stored copy of either paper's body was
found here).
"""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.rules.base import Rule, hyper
from jbai.state import count_dtype
from jbai.stops import bounds as bounds_lib
from jbai.stops.elimination import elimination

TARGET_MAX = 2.0**30  # pulls per arm per phase with int32 counts (2^53 with int64)
# The default cap on a trial's pulls (`Rule.max_steps`): the most that int32
# counts hold. Its sample complexity, O(sum_i Delta_i^-2 log(log(1/Delta_i) / delta))
# with large constants, is far above the engine's default of 10^6 (Bernoulli
# [0.66, 0.58, 0.5, 0.41, 0.3] at delta = 0.1: a mean of 4e6 pulls), while a
# phase's pulls of an arm cost one step: a trial of 2^31 pulls takes about a
# hundred steps.
DEFAULT_CAP = 2**31 - 2


class GapState(NamedTuple):
  log_inv_delta: jax.Array  # [] float, log(1/delta) of the run's level
  active: jax.Array         # [K] bool, S_r
  median_set: jax.Array     # [K] bool, S_l of median elimination
  r: jax.Array              # [] int32, round, from 1
  l: jax.Array              # [] int32, median-elimination step (0: step 1 of round r)
  base_counts: jax.Array    # [K] count_dtype(), counts when the phase began
  base_sums: jax.Array      # [K] float, reward sums when the phase began
  round_means: jax.Array    # [K] float, p_r: fresh means of step 1 of round r


def target(state: GapState, scale) -> jax.Array:
  """[] count_dtype(), the pulls per arm of the current phase (at most TARGET_MAX
  with int32 counts, 2^53 with int64 ones)."""
  r = state.r.astype(state.base_sums.dtype)
  eps_r = 2.0 ** -r / 4.0
  log_2_delta_r = math.log(100.0) + 3.0 * jnp.log(r) + state.log_inv_delta  # log(2/delta_r)
  round_pulls = 2.0 / eps_r**2 * log_2_delta_r
  lf = jnp.maximum(state.l, 1).astype(r.dtype)
  eps_l = eps_r / 8.0 * 0.75 ** (lf - 1.0)
  log_3_delta_l = math.log(1.5) + lf * math.log(2.0) + log_2_delta_r  # log(3/delta_l)
  median_pulls = 4.0 / eps_l**2 * log_3_delta_l
  pulls = jnp.where(state.l == 0, round_pulls, median_pulls) * scale
  dtype = state.base_counts.dtype
  most = TARGET_MAX if jnp.dtype(dtype).itemsize <= 4 else 2.0**53
  return jnp.ceil(jnp.minimum(pulls, most)).astype(dtype)


def _median(values, mask):
  """The median of values[mask] (average of the two middle ones for an even count)."""
  n = jnp.sum(mask)
  ordered = jnp.sort(jnp.where(mask, values, jnp.inf))
  return 0.5 * (ordered[(n - 1) // 2] + ordered[n // 2])


def _scale(family) -> float:
  """The sample sizes' factor 4 s^2 (1 for rewards in [0, 1]: the module docstring)."""
  return 4.0 * bounds_lib.checked_variance(family, "exp-gap")


def advance(family, arm_stats, state: GapState) -> GapState:
  """The state after the phase change that the current statistics trigger."""
  scale = _scale(family)
  members = jnp.where(state.l == 0, state.active, state.median_set)
  n_phase = arm_stats.counts - state.base_counts
  done = jnp.all(jnp.where(members, n_phase >= target(state, scale), True))
  sums = arm_stats.stats[:, 0]
  fresh = (sums - state.base_sums) / jnp.maximum(n_phase, 1).astype(sums.dtype)
  # End of step 1 of round r: median elimination starts on S_r.
  start = state._replace(median_set=state.active, l=jnp.ones_like(state.l),
                         round_means=fresh)
  # End of a median-elimination step: keep the arms at or above the median.
  kept = state.median_set & (fresh >= _median(fresh, state.median_set))
  ref = jnp.argmax(kept)
  eps_r = 2.0 ** -state.r.astype(sums.dtype) / 4.0
  pruned = state.active & (state.round_means >= state.round_means[ref] - eps_r)
  next_round = state._replace(active=pruned, median_set=pruned, r=state.r + 1,
                              l=jnp.zeros_like(state.l))
  next_step = state._replace(median_set=kept, l=state.l + 1)
  after_median = jax.tree.map(lambda a, b: jnp.where(jnp.sum(kept) == 1, a, b),
                              next_round, next_step)
  new = jax.tree.map(lambda a, b: jnp.where(state.l == 0, a, b), start, after_median)
  new = new._replace(base_counts=arm_stats.counts, base_sums=sums)
  return jax.tree.map(lambda a, b: jnp.where(done, a, b), new, state)


def survivors(family, arm_stats, state: GapState) -> jax.Array:
  return advance(family, arm_stats, state).active


def _select(key, family, arm_stats, state):
  del key
  state = advance(family, arm_stats, state)
  members = jnp.where(state.l == 0, state.active, state.median_set)
  n_phase = arm_stats.counts - state.base_counts
  big = jnp.iinfo(n_phase.dtype).max
  return ties.argmin(jnp.where(members, n_phase, big)), state


def _pulls(family, arm_stats, state, arm):
  """The pulls of `arm` left in the phase: a phase's pulls of an arm are one block."""
  return target(state, _scale(family)) - (arm_stats.counts[arm] - state.base_counts[arm])


def exp_gap() -> Rule:
  """Exponential-gap elimination (Karnin et al. 2013): rounds of median elimination; stop: elimination.

  Returns:
    The rule; its sampling depends on delta (one level per run). Families:
    those with a sub-Gaussian variance proxy (Bernoulli, Gaussian). Its default
    cap on a trial is DEFAULT_CAP pulls (2^31 - 2) where its phases run in blocks.
  """

  def init(num_arms):
    dtype = jnp.result_type(float)
    return GapState(hyper(jnp.nan), jnp.ones(num_arms, bool), jnp.ones(num_arms, bool),
                    jnp.asarray(1, jnp.int32), jnp.asarray(0, jnp.int32),
                    jnp.zeros(num_arms, count_dtype()), jnp.zeros(num_arms, dtype),
                    jnp.zeros(num_arms, dtype))

  return Rule("exp-gap", init, _select, (), stop=elimination(survivors, "exp-gap"),
              pulls=_pulls, max_steps=DEFAULT_CAP)
