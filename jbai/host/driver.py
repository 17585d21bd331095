"""The pool driver: runs every trial of a checked run on the chunk program.

`run_pool` runs compiled chunks of `jbai.core.pool.build_chunk` (through
`jbai.host.programs`) until every trial is written: it resumes from saved
trials, shards the lanes over devices and hosts, hands each chunk's finished
trials to a callback, and moves the last, longest trials to a smaller pool
(docs/design/float32.md). `jbai.simulate` (`jbai.host.simulate`) and
`jbai.host.budget` check their inputs and build on it.
"""

import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import stops
from jbai.core import inputs, pool as pool_lib
from jbai.core.lane import Config
from jbai.host import memory_maps, programs
from jbai.state import count_dtype


class _Timing:
  """Useful steps, lane-steps and time of a run; a program's first chunk counts
  as compilation."""

  def __init__(self):
    self.useful = self.lane_steps = self.timed_useful = 0
    self.compile_s = self.wall = 0.0

  def add(self, seconds: float, first: bool, n_useful: int, lane_steps: int):
    if first:
      self.compile_s += seconds
    else:
      self.wall += seconds
      self.timed_useful += n_useful
    self.useful += n_useful
    self.lane_steps += lane_steps


def _resume(done: Optional[dict], out: dict, n_all: int, scores: bool) -> np.ndarray:
  """[n_all] bool, the trials of `done` (copied into `out`)."""
  seen = np.zeros(n_all, bool)
  if done is None or not len(done["index"]):
    return seen
  missing = sorted(set(out) - set(done))
  if missing:
    raise ValueError(f"done lacks the records {missing} of this run (scores={scores})")
  index = np.asarray(done["index"])
  seen[index] = True
  for k in out:
    out[k][index] = done[k]
  return seen


def _chunk_records(pool) -> tuple:
  """(records of the trials written in this chunk, loop steps, useful lane-steps,
  lane indices, next trial per device), on the host."""
  slots, steps, useful, index, next_trial = programs.to_host(
      (pool.slots, pool.steps, pool.useful, pool.lanes.index, pool.next_trial))
  slots = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), slots)
  got = slots.index >= 0
  written = {"index": slots.index[got]}
  written.update({k: v[got] for k, v in pool_lib.records(slots).items()})
  return written, int(steps.sum()), int(useful.sum()), index, next_trial


def _compact(pool, n_lanes: int):
  """`pool_lib.compact` of each device's pool (leaves [devices, ...]), in numpy on
  the host: eager JAX ops here would each compile in every new process."""
  per_device = [pool_lib.compact(jax.tree.map(lambda x: x[d], pool), n_lanes, np)
                for d in range(pool.next_trial.shape[0])]
  return jax.tree.map(lambda *xs: np.stack(xs), *per_device)


def _run(program, compiled, pool, config, total, out, seen, n_lanes, per_device, after,
         progress, on_chunk) -> tuple:
  """Runs chunks until every trial is written; returns (timing, pool sizes used).

  `compiled` is program(n_lanes), the first pool's (program, sharding).

  The tail: once every trial has started and at most `smaller_pool(n_lanes)`
  lanes still run (n_lanes / SHRINK, at least MIN_LANES), they move to a pool of
  that size (one more compiled program, so only once the run has taken `after`
  lane-steps; None: never).
  """
  fn, sharding = compiled
  timing, sizes = _Timing(), [n_lanes]
  total_j = jax.device_put(np.asarray(total, np.int32))
  first = not programs.has_run(fn)
  while not seen.all():
    t_chunk = time.perf_counter()
    pool = fn(pool, config, total_j)
    written, n_steps, n_useful, index, next_trial = _chunk_records(pool)
    timing.add(time.perf_counter() - t_chunk, first, n_useful, n_steps * n_lanes)
    if first:
      programs.mark_run(fn)
      first = False
    for k, v in written.items():
      if k != "index":
        out[k][written["index"]] = v
    seen[written["index"]] = True
    if progress is not None:
      progress(int(seen.sum()), len(seen), timing.useful)
    if on_chunk is not None:
      on_chunk(written)
    if seen.all():
      break
    if n_steps == 0:
      raise RuntimeError("simulation made no progress")  # defensive: a bug
    small = pool_lib.smaller_pool(n_lanes)
    if (after is not None and small < n_lanes and timing.lane_steps >= after and
        np.all(next_trial >= per_device) and np.max(np.sum(index >= 0, axis=1)) <= small and
        all(x.is_fully_addressable for x in jax.tree.leaves(pool))):
      n_lanes = small
      sizes.append(n_lanes)
      fn, sharding = program(n_lanes)
      pool = jax.device_put(_compact(jax.device_get(pool), small), sharding)
      first = not programs.has_run(fn)
  return timing, sizes


def run_pool(key, family, rule, threshold, table, n_trials: int, max_steps: int, thr_params,
             rule_state, n_levels: int, lanes, chunk: int, devices, shrink, done, scores,
             progress, on_chunk, share=None) -> tuple:
  """Runs every trial of a checked run on the chunk program: (the per-trial raw
  records {name: [I * n_trials, ...]}, the run's stats). `thr_params` and
  `rule_state` are the run's (`Config`), `n_levels` the stop's levels (the deltas,
  or a budget run's checkpoints); `share` (r, n) runs only the trials whose index
  is r modulo n (`simulate_share`); the other arguments are `simulate`'s. A run
  with nothing left to run compiles nothing."""
  n_inst, num_arms = table.shape
  n_all = n_inst * n_trials
  devices = tuple(devices or jax.local_devices())
  # The pool of the whole run, resumed or not: a resumed run has the width its
  # first part had (docs/design/float32.md).
  n_lanes = pool_lib.width(lanes or pool_lib.default_lanes(n_all, len(devices),
                                                            devices[0].platform))
  memory_maps.relieve()  # before this run's programs: see there

  def program(n_lanes):
    return programs.chunk_program(family, rule.program(), stops.program_of(threshold),
                                  num_arms, n_levels, n_lanes, int(chunk), devices, bool(scores))

  config = Config(key=inputs.raw_key(key), means=np.asarray(table, jnp.result_type(float)),
                  n_trials=np.asarray(n_trials, np.int32),
                  max_steps=np.asarray(max_steps, count_dtype()), thr_params=thr_params,
                  rule_state=rule_state)
  pool = programs.idle_pool(family, rule, config, num_arms, n_levels, n_lanes, scores,
                            len(devices), threshold)
  out = {k: np.zeros((n_all,) + v.shape[2:], v.dtype)
         for k, v in pool_lib.records(pool.slots).items()}
  seen = _resume(done, out, n_all, scores)
  first, step = (0, 1) if share is None else share
  mine = np.arange(n_all) % step == first
  whole = not seen[mine].any()  # the trials first + step * j: no list of them (one program)
  seen |= ~mine  # another share's trials: not this run's
  todo = np.flatnonzero(~seen).astype(np.int32)
  total = len(todo)
  timing, sizes = _Timing(), [n_lanes]
  if total:
    # Numpy where it can be, sent in one transfer: each op run on the host is a
    # dispatch, and in a new process a compilation (or a load from the cache).
    config = jax.device_put(config._replace(todo=None if whole else todo,
                                            stride=np.asarray([first, step], np.int32)))
    compiled = program(n_lanes)
    pool = jax.device_put(pool, compiled[1])
    per_device = np.array([len(range(d, total, len(devices))) for d in range(len(devices))])
    after = None if shrink is None else shrink * pool_lib.shrink_after(devices[0].platform)
    timing, sizes = _run(program, compiled, pool, config, total, out, seen, n_lanes, per_device,
                         after, progress, on_chunk)
  stats = {"wall_seconds": timing.wall, "compile_seconds": timing.compile_s,
           "useful_steps": timing.useful, "timed_useful_steps": timing.timed_useful,
           "lane_steps": timing.lane_steps,
           "utilisation": timing.useful / timing.lane_steps if timing.lane_steps else 0.0,
           "lanes": sizes[0], "pool_sizes": sizes, "devices": len(devices),
           "resumed_trials": n_all - total, "max_steps": int(max_steps),
           "rule": repr(rule), "family": repr(family), "threshold": repr(threshold)}
  return out, stats
