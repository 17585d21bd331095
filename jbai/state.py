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
  # One-hot updates rather than scatters: they vectorise under vmap.
  one_hot = jnp.arange(arm_stats_.counts.shape[-1]) == arm
  counts = arm_stats_.counts + jnp.where(one_hot, n, 0).astype(arm_stats_.counts.dtype)
  stats = arm_stats_.stats + jnp.where(one_hot[:, None], stat.astype(arm_stats_.stats.dtype), 0)
  return arm_stats(family, counts, stats, arm_stats_.t + n.astype(arm_stats_.t.dtype))
