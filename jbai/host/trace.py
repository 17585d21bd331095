"""`trace`: trajectories without stopping, recorded at log-spaced times.

At each recording time t it records the allocation T_t/t, the empirical
transport cost Gamma_t(T_t/t) at the projected sample means (what the rules
see) and the true best arm's share: the quantities of the paper's convergence
results (Gamma_t -> Gamma(nu), T_t/t -> w(nu)).
"""

import functools
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import stops
from jbai.core import inputs
from jbai.core import lane as lane_lib
from jbai.core import pool as pool_lib
from jbai.core.lane import Config, Lane
from jbai.host import memory_maps
from jbai.families.base import draw
from jbai.state import observe
from jbai.transport import gamma


class Trace(NamedTuple):
  """Trajectories recorded by `trace` at log-spaced times."""

  times: np.ndarray        # [P] int, the recording times
  proportions: np.ndarray  # [..., n_trials, P, K] float, T_t / t
  gamma_t: np.ndarray      # [..., n_trials, P] float, Gamma_t(T_t / t) at the sample means
  top_share: np.ndarray    # [..., n_trials, P] float, T_t(a*) / t for the true best arm


def log_times(horizon: int, n_points: int, start: int = 10) -> np.ndarray:
  """About n_points distinct integer times, log-spaced in [start, horizon]."""
  times = np.unique(np.geomspace(start, horizon, n_points).astype(np.int64))
  return times[times >= 1]


@functools.lru_cache(maxsize=32)
def _advance_program(family, rule, num_arms):
  """The jitted, vmapped advance of lanes to a time `until`, and what is recorded."""

  def advance(lane: Lane, until):
    def cond(lane):
      return lane.stats.t < until

    def body(lane):
      stats = lane.stats
      arm, rule_state = rule.select(lane_lib.rule_key(lane.key, stats.t), family, stats,
                                    lane.rule_state)
      k_reward = lane_lib.reward_key(lane.key, arm, lane_lib.pulls_of(stats, arm))
      reward = draw(family, k_reward, lane.means, arm)
      return lane._replace(stats=observe(family, stats, arm, reward),
                           rule_state=rule_state)

    lane = jax.lax.while_loop(cond, body, lane)
    stats = lane.stats
    t = jnp.maximum(stats.t, 1).astype(stats.mean.dtype)
    w = stats.counts / t
    best = jnp.argmax(lane.means)
    return lane, (w, gamma(family, stats.mean, w), w[best])

  return jax.jit(jax.vmap(advance, in_axes=(0, None)))


def trace(key: jax.Array, family, means, rule, horizon: int, n_trials: int,
          n_points: int = 40, progress: Optional[Callable] = None) -> Trace:
  """Runs trials without stopping up to `horizon`, recording at log-spaced times
  the allocation T_t/t, the empirical transport cost Gamma_t(T_t/t) (computed at
  the projected sample means, as the rules see it) and the best arm's share.

  Trial n uses the same key as trial n of `simulate` with the same key, so a
  trace shows the trajectories that `simulate` stops.

  Args:
    key: PRNG key.
    family: a `Family` or a built-in name.
    means: [K] or [I, K] arm means.
    rule: a `Rule` or a registered name.
    horizon: last time recorded, a whole number >= 1.
    n_trials: trials per instance, a whole number >= 1.
    n_points: number of log-spaced recording times, a whole number >= 1.
    progress: optional callback(t, horizon) after each recording time.

  Returns:
    A `Trace` of numpy arrays.
  """
  inputs.refuse_traced("jbai.trace", "jbai.rollout", means=means, key=key)
  inputs.check_key(key)
  family, rule, _ = inputs.resolve(family, rule, None)  # no stop: any rule's own passes
  if stops.takes_delta(rule.init(2)):
    raise ValueError(f"jbai.trace runs without a delta, and rule {rule.name!r} samples "
                     "with confidence bounds that depend on delta; trace a GLLR rule "
                     "(tcb, itcb, ...) or run jbai.simulate")
  means_np = inputs.check_table(family, means)
  horizon = inputs.check_count("horizon", horizon, 1, inputs.INT32_MAX - 1)
  n_trials = inputs.check_trials(n_trials)
  n_points = inputs.check_count("n_points", n_points, 1, 100_000)
  table = means_np.reshape(-1, means_np.shape[-1])
  n_inst, num_arms = table.shape
  # Per trial: P recording times of K proportions and two scalars (float32), in
  # the lanes and in the stacked copies.
  total = inputs.check_total("jbai.trace", n_inst * n_trials,
                             4 * (num_arms + 2) * (min(n_points, horizon) + 1) + 64 * num_arms)
  dtype = jnp.zeros(()).dtype
  config = Config(key=inputs.raw_key(key), means=jnp.asarray(table, dtype),
                  n_trials=jnp.asarray(n_trials, jnp.int32),
                  max_steps=jnp.asarray(horizon, jnp.int32), thr_params=None,
                  rule_state=rule.init(num_arms))
  memory_maps.relieve()  # before this trace's programs
  # At least two lanes, the first `total` kept (`jbai.core.pool.width`).
  lanes = jax.vmap(lambda i: lane_lib.start(family, rule, config, i, num_arms, 1, False))(
      jnp.arange(pool_lib.width(total), dtype=jnp.int32))
  advance = _advance_program(family, rule.program(), num_arms)
  times = log_times(horizon, n_points)
  props, gammas, shares = [], [], []
  for t in times:
    lanes, (w, g, share) = advance(lanes, jnp.asarray(t, jnp.int32))
    props.append(np.asarray(w)[:total])
    gammas.append(np.asarray(g)[:total])
    shares.append(np.asarray(share)[:total])
    if progress is not None:
      progress(int(t), horizon)
  lead = (n_inst, int(n_trials)) if means_np.ndim == 2 else (int(n_trials),)
  return Trace(times=times,
               proportions=np.stack(props, 1).reshape(lead + (len(times), num_arms)),
               gamma_t=np.stack(gammas, 1).reshape(lead + (len(times),)),
               top_share=np.stack(shares, 1).reshape(lead + (len(times),)))
