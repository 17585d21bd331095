"""Per-trial bandit state shared by the engine, the sampling rules and the thresholds.

Counts and times are integers of `count_dtype()`: int64 when JAX's x64 mode is
on, so that a trial may take more than 2^31 rewards (an elimination rule's
blocks at a small delta), and int32 otherwise, the widest integer JAX has then
(`jbai.core.inputs.check_max_steps` keeps a run's cap within it).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.families.base import Family


class ArmStats(NamedTuple):
  """What a trial knows after t rewards: the input of rules and thresholds."""

  counts: jax.Array  # [K] count_dtype(), T_t(i)
  stats: jax.Array   # [K, S] float, summed sufficient statistics (stats[:, 0] = sum x)
  t: jax.Array       # [] count_dtype(), number of rewards so far
  mean: jax.Array    # [K] float, sample means projected on Theta (used by rules)
  mle: jax.Array     # [K] float, MLEs projected on Theta (used by stopping)


def count_dtype() -> jnp.dtype:
  """The integer dtype of counts, times and caps: int64 with JAX's x64 mode on,
  else int32 (read when a program is traced)."""
  return jax.dtypes.canonicalize_dtype(jnp.int64)


def arm_stats(family: Family, counts: jax.Array, stats: jax.Array,
              t: jax.Array) -> ArmStats:
  """Builds ArmStats, computing the projected sample means and MLEs."""
  return ArmStats(counts=counts, stats=stats, t=t,
                  mean=family.mean(counts, stats), mle=family.mle(counts, stats))


def empty_stats(family: Family, num_arms: int, dtype=None) -> ArmStats:
  """ArmStats of a trial that has seen nothing."""
  dtype = dtype or jnp.zeros(()).dtype
  return arm_stats(family, jnp.zeros(num_arms, count_dtype()),
                   jnp.zeros((num_arms, family.stat_dim), dtype),
                   jnp.zeros((), count_dtype()))


def observe(family: Family, arm_stats_: ArmStats, arm: jax.Array,
            reward: jax.Array) -> ArmStats:
  """Adds one reward of `arm`."""
  return observe_block(family, arm_stats_, arm, jnp.ones((), arm_stats_.t.dtype),
                       family.stat(reward))


def observe_block(family: Family, arm_stats_: ArmStats, arm: jax.Array, n: jax.Array,
                  stat: jax.Array) -> ArmStats:
  """Adds n rewards of `arm` whose sufficient statistics sum to `stat` ([S])."""
  counts = add_to_arm(arm_stats_.counts, arm, n)
  stats = add_to_arm(arm_stats_.stats, arm, stat)
  return arm_stats(family, counts, stats, arm_stats_.t + n.astype(arm_stats_.t.dtype))


def observe_piece(family: Family, arm_stats_: ArmStats, arm: jax.Array, n: jax.Array,
                  row: jax.Array) -> ArmStats:
  """Adds n rewards of `arm` after which its summed sufficient statistics are
  `row` ([S]): a piece of a block of pulls (`jbai.core.lane`), whose statistics
  are set (the block's first statistics plus its piece's), not added, so that a
  block's end has the same bits however it was cut."""
  counts = add_to_arm(arm_stats_.counts, arm, n)
  stats = set_arm(arm_stats_.stats, arm, row)
  return arm_stats(family, counts, stats, arm_stats_.t + n.astype(arm_stats_.t.dtype))


def set_arm(x: jax.Array, arm: jax.Array, v: jax.Array) -> jax.Array:
  """x [K, ...] with row `arm` replaced by v [...] (a scatter on a CPU, a
  one-hot select elsewhere, as `add_to_arm`; an arm outside [0, K) changes nothing)."""
  v = jnp.asarray(v).astype(x.dtype)
  if jax.default_backend() == "cpu":
    return x.at[jnp.where(arm < 0, x.shape[0], arm)].set(v, mode="drop")
  one_hot = (jnp.arange(x.shape[0]) == arm).reshape((-1,) + (1,) * (x.ndim - 1))
  return jnp.where(one_hot, v, x)


def add_to_arm(x: jax.Array, arm: jax.Array, v: jax.Array) -> jax.Array:
  """x [K, ...] with v [...] added to row `arm`, the same values on any platform.

  On a CPU a scatter: XLA:CPU fuses the producer of v (a reward's hash and
  sampler) into every kernel that reads it, so a one-hot update, whose kernels
  run over all K arms, recomputes the reward once per arm and per kernel; the
  scatter reads it once (a TCB step on Gaussian arms, K = 5, costs about a fifth
  less: docs/performance.md). Elsewhere a one-hot update, which vectorises under
  vmap on accelerators. An arm outside [0, K) (a user's rule gone wrong) changes
  nothing on either path: the scatter would wrap a negative index, so it is sent
  out of range and dropped."""
  v = jnp.asarray(v).astype(x.dtype)
  if jax.default_backend() == "cpu":
    return x.at[jnp.where(arm < 0, x.shape[0], arm)].add(v, mode="drop")
  one_hot = (jnp.arange(x.shape[0]) == arm).reshape((-1,) + (1,) * (x.ndim - 1))
  return x + jnp.where(one_hot, v, 0)
