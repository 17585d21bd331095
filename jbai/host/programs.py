"""The chunk program placed on devices: one pool per device, sharded with shard_map.

`chunk_program` jit-compiles `jbai.core.pool.build_chunk` over a mesh of the
given devices: each device runs its own pool on every n_devices-th trial, so
results do not depend on the number of devices. Across hosts (after
`jax.distributed.initialize()`), every process runs the same program over all
the devices and gathers the whole pool's output (`to_host`).
"""

import functools
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from jbai.core import pool as pool_lib
from jbai.core.pool import Pool

AXIS = "lanes"
_RAN = weakref.WeakSet()  # the programs that have run (are compiled)


@functools.lru_cache(maxsize=64)
def chunk_program(family, rule, threshold, num_arms, n_deltas, n_lanes, chunk, devices,
                  scores=False, unroll=None):
  """(the jitted chunk shard_mapped over `devices`, a pool of n_lanes lanes on
  each; the pool's sharding). `rule` is `Rule.program()`, the rule without its
  runtime parameters, so that a sweep over them reuses the program. `unroll`:
  steps per iteration of the chunk's loop (default `pool.default_unroll` for the
  devices' platform); results do not depend on it."""
  if unroll is None:
    unroll = pool_lib.default_unroll(devices[0].platform)
  local = pool_lib.build_chunk(family, rule, threshold, num_arms, n_deltas, n_lanes, chunk,
                               scores, unroll)
  mesh = jax.sharding.Mesh(np.array(devices), (AXIS,))

  def per_device(pool, config, total):
    pool = jax.tree.map(lambda x: x[0], pool)
    pool = local(pool, config, total, jax.lax.axis_index(AXIS), len(devices))
    return jax.tree.map(lambda x: x[None], pool)

  spec = jax.sharding.PartitionSpec(AXIS)
  mapped = jax.shard_map(per_device, mesh=mesh, in_specs=(spec, None, None),
                         out_specs=spec, check_vma=False)
  sharding = jax.sharding.NamedSharding(mesh, spec)
  return jax.jit(mapped, out_shardings=sharding), sharding


def has_run(program) -> bool:
  """Whether `program` has run in this process (its next call does not compile)."""
  return program in _RAN


def mark_run(program) -> None:
  _RAN.add(program)


def idle_pool(family, rule, config, num_arms, n_deltas, n_lanes, scores,
              n_devices: int, threshold=None) -> Pool:
  """An idle pool per device (leaves [n_devices, ...]), built on the host (numpy):
  `pool_lib.initial_pool`'s, no program compiled or run."""
  pool = pool_lib.initial_pool(family, rule, config, num_arms, n_deltas, n_lanes, scores,
                               threshold, xp=np)
  stack = lambda x: (np if isinstance(x, np.ndarray) else jnp).stack([x] * n_devices)
  return jax.tree.map(stack, pool)


def to_host(tree):
  """Fetches per-device arrays; across hosts (jax.distributed), every process
  gathers the whole pool's output."""
  if all(x.is_fully_addressable for x in jax.tree.leaves(tree)):
    return jax.device_get(tree)
  from jax.experimental import multihost_utils
  return multihost_utils.process_allgather(tree, tiled=True)
