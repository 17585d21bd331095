"""The lane pool: many trials stepped together by one `lax.while_loop`.

A fixed pool of lanes runs the trials, vmapped (`jbai.core.lane.step`). A lane
whose trial ends writes its result to an output slot and starts the next pending
trial at once (lane recycling), so that heavy-tailed stopping times do not leave
most lanes idle; once every trial has started, the last running lanes can move
to a smaller pool (`compact`, `pool_sizes`). A trial's result depends on its
number alone, so results are identical for any pool size and chunk size.

`build_chunk` is the one program that both drivers run: `jbai.rollout` inside
one compiled loop, `jbai.simulate` from the host between chunks. Each iteration
of its loop may run several steps (`unroll`, `default_unroll`), which pays an
accelerator's per-iteration launch and synchronisation once per `unroll` steps;
the refills fall after the same steps whatever `unroll` is, so results do not
depend on it either.
"""

import functools
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jbai.core import lane as lane_lib
from jbai.core.lane import Config, Lane
from jbai.families.base import Family
from jbai.rules.base import Rule
from jbai.ties import running_count

REFILL_EVERY = 8  # steps between writing results and refilling finished lanes
SHRINK = 8        # the tail's pool has 1/SHRINK of the lanes ...
MIN_LANES = 4     # ... and at least MIN_LANES (`smaller_pool`)
MIN_WIDTH = 2     # a pool has at least this many lanes (`width`)
SHRINK_AFTER_CPU = 2**22          # lane-steps per unit of simulate's `shrink` before the
SHRINK_AFTER_ACCELERATOR = 2**32  # tail moves (`shrink_after`): a few seconds of steps
UNROLL_CPU = 1          # steps per iteration of the chunk's loop on a CPU ...
UNROLL_ACCELERATOR = 8  # ... and on an accelerator (`default_unroll`)


class Slots(NamedTuple):
  """Results written by the lanes during one chunk."""

  index: jax.Array    # [M] int32, trial number (-1: unused slot)
  tau: jax.Array      # [M, D] count_dtype() (jbai.state: int64 with x64, else int32)
  answer: jax.Array   # [M, D] int32 ([M, D, K] bool: a set of arms)
  counts: jax.Array   # [M, K] count_dtype(), final counts
  steps: jax.Array    # [M] count_dtype(), length of the trial (rewards)
  extra: dict         # with scores: final_stats [M, K, S], reward_score [M, D, K],
                      # "policy_score.<name>" [M, D], causal_score [M, D, K], score_cv
                      # [M, D, F, K], "causal_policy_score.<name>" [M, D] and
                      # "policy_score_cv.<name>" [M, D, F]; else empty


class Pool(NamedTuple):
  """The carry of the chunked loop."""

  lanes: Lane             # [L] lanes
  slots: Slots            # [M] output slots
  written: jax.Array      # [] int32, slots used in this chunk
  next_trial: jax.Array   # [] int32, next trial (position in the list of trials) to start
  useful: jax.Array       # [] int32, lane-steps that advanced a trial, this chunk
  steps: jax.Array        # [] int32, loop iterations, this chunk


def n_slots(n_lanes: int) -> int:
  """Output slots of a pool of n_lanes lanes."""
  return 2 * n_lanes + REFILL_EVERY


def _lane_extra(lanes: Lane) -> dict:
  """What a finished lane writes besides tau, answer, counts and steps."""
  if not lanes.scores:
    return {}
  extra = {"final_stats": lanes.stats.stats, "reward_score": lanes.scores.reward}
  extra.update({f"policy_score.{k}": v for k, v in lanes.scores.policy.items()})
  # The causal estimator's records (jbai.core.lane.Scores).
  extra.update({"causal_score": lanes.scores.causal_reward,
                "score_cv": lanes.scores.cv_reward})
  extra.update({f"causal_policy_score.{k}": v for k, v in lanes.scores.causal_policy.items()})
  extra.update({f"policy_score_cv.{k}": v for k, v in lanes.scores.cv_policy.items()})
  return extra


def _lane_slots(lanes: Lane) -> Slots:
  """The lanes' results, shaped as slots ([L, ...])."""
  return Slots(index=lanes.index, tau=lanes.tau, answer=lanes.answer,
               counts=lanes.stats.counts, steps=lanes.stats.t, extra=_lane_extra(lanes))


def _empty_slots(lanes: Lane, size: int, xp=jnp) -> Slots:
  """Unused output slots shaped after the lanes (leaves [L, ...] -> [size, ...])."""
  slots = jax.tree.map(lambda x: xp.zeros((size,) + x.shape[1:], x.dtype),
                       _lane_slots(lanes))
  return slots._replace(index=xp.full((size,), -1, xp.int32))


def records(slots: Slots) -> dict:
  """The per-trial outputs of written slots, by name (every field but the index)."""
  out = {k: getattr(slots, k) for k in ("tau", "answer", "counts", "steps")}
  out.update(slots.extra)
  return out


def check_unroll(unroll) -> int:
  """Steps between possible refills within an unrolled iteration: `unroll` itself
  when it divides REFILL_EVERY, else REFILL_EVERY (which must divide it)."""
  if (not isinstance(unroll, int) or isinstance(unroll, bool) or unroll < 1 or
      (REFILL_EVERY % unroll and unroll % REFILL_EVERY)):
    raise ValueError(f"unroll must be a positive divisor or multiple of {REFILL_EVERY}, "
                     f"got {unroll!r}")
  return min(unroll, REFILL_EVERY)


def build_chunk(family: Family, rule: Rule, threshold, num_arms: int,
                n_deltas: int, n_lanes: int, chunk: int, scores: bool = False,
                unroll: int = 1) -> Callable:
  """The pure function that runs up to `chunk` steps of the pool (rounded up to a
  multiple of `unroll`).

  Each iteration of its `lax.while_loop` runs `unroll` steps (a divisor or a
  multiple of REFILL_EVERY), so that the loop's per-iteration cost (the
  predicate, and on an accelerator a launch and a synchronisation) is paid once
  per `unroll` steps. Steps of a lane that has ended are no-ops, and the refills
  fall after the same steps whatever `unroll` is, so results do not depend on it.

  With several devices each runs its own pool of `n_lanes` lanes on the trials
  n = todo[device + n_devices * j], j = 0, 1, ... (or first + step * (device +
  n_devices * j) with the config's stride; the trial's result depends on n alone,
  so the split does not change any result).

  Returns:
    chunk_fn(pool, config, total, device, n_devices) -> pool, where total is the
    number of trials to run (instances * n_trials, or len(config.todo)).
  """
  every = check_unroll(unroll)
  size = n_slots(n_lanes)
  answer = lane_lib.answer_prototype(threshold, num_arms)
  start = functools.partial(lane_lib.start, family, rule, answer=answer)
  step = functools.partial(lane_lib.step, family, rule, threshold)

  def write_and_refill(pool: Pool, config: Config, total, device, n_devices) -> Pool:
    lanes = pool.lanes
    finished, idle = lanes.done & (lanes.index >= 0), lanes.index < 0
    ranks = running_count(jnp.stack([finished, idle]))  # one scan for both
    room = size - pool.written  # the first `room` finished lanes are written
    written = finished & (ranks[0] <= room)
    target = jnp.where(written, pool.written + ranks[0] - 1, size)  # out of range: dropped
    slots = jax.tree.map(lambda s, v: s.at[target].set(v, mode="drop"),
                         pool.slots, _lane_slots(lanes))
    # Written and idle lanes take the next pending trials, in lane order.
    free = written | idle
    rank = jnp.minimum(ranks[0], room) + ranks[1]  # among the free lanes
    position = device + n_devices * (pool.next_trial + rank - 1)
    if config.todo is not None:
      trial = config.todo[jnp.clip(position, 0, config.todo.shape[0] - 1)]
    elif config.stride is not None:
      trial = config.stride[0] + config.stride[1] * position
    else:
      trial = position
    new_index = jnp.where(position < total, trial, -1).astype(jnp.int32)
    fresh = jax.vmap(lambda i: start(config, i, num_arms, n_deltas, scores))(new_index)
    lanes = jax.tree.map(
        lambda f, old: jnp.where(free.reshape((-1,) + (1,) * (f.ndim - 1)), f, old),
        fresh, lanes)
    started = jnp.sum(free & (new_index >= 0)).astype(jnp.int32)
    return pool._replace(lanes=lanes, slots=slots,
                         written=pool.written + jnp.sum(written).astype(jnp.int32),
                         next_trial=pool.next_trial + started)

  def chunk_fn(pool: Pool, config: Config, total, device=0, n_devices=1) -> Pool:
    pool = pool._replace(
        slots=pool.slots._replace(index=jnp.full((size,), -1, jnp.int32)),
        written=jnp.zeros((), jnp.int32), useful=jnp.zeros((), jnp.int32),
        steps=jnp.zeros((), jnp.int32))

    def waiting(pool):  # an idle lane, and a trial left to start
      return jnp.any(pool.lanes.index < 0) & (device + n_devices * pool.next_trial < total)

    def cond(pool):  # ends early when every trial is done or the slots may fill up
      return ((pool.steps < chunk) & (jnp.any(pool.lanes.index >= 0) | waiting(pool)) &
              (pool.written + n_lanes <= size))

    def one_step(pool):
      lanes, advanced = jax.vmap(lambda l: step(config, l))(pool.lanes)
      return pool._replace(lanes=lanes, steps=pool.steps + 1,
                           useful=pool.useful + jnp.sum(advanced, dtype=jnp.int32))

    def refill(pool, due):  # refilling touches every lane: only when it changes one
      due = due & (jnp.any(pool.lanes.done) | waiting(pool))
      return jax.lax.cond(due, lambda p: write_and_refill(p, config, total, device, n_devices),
                          lambda p: p, pool)

    def body(pool):
      # A refill due before every REFILL_EVERY-th step of the chunk, the first
      # included, then `unroll` steps. An iteration starts at a multiple of
      # `every`, so the refills fall where they fall with one step per iteration;
      # within, their places are static when `every` is REFILL_EVERY. The loop
      # holds the chunk's one copy of the refill (a lane's start, the slots'
      # writes): the lanes that end in its last steps are written by the next
      # chunk's first refill.
      for _ in range(unroll // every):
        pool = refill(pool, True if every == REFILL_EVERY else
                      pool.steps % REFILL_EVERY == 0)
        for _ in range(every):
          pool = one_step(pool)
      return pool

    return jax.lax.while_loop(cond, body, pool)

  return chunk_fn


def initial_pool(family, rule, config, num_arms, n_deltas, n_lanes, scores=False,
                 threshold=None, xp=jnp) -> Pool:
  """A pool of n_lanes idle lanes and empty slots (`threshold`: the stop, whose
  answer may be a set of arms, `jbai.core.lane.answer_prototype`).

  It has the shapes of started lanes (`jax.eval_shape`: a trace, no op run),
  index -1 in every lane and slot and zeros elsewhere: a chunk's first refill
  starts a trial (or an idle lane) on every idle lane before any step reads one
  (`build_chunk`), so the pool adds no copy of a lane's start to a program. With
  xp=numpy it is built on the host (`jbai.host.programs.idle_pool`).
  """
  answer = lane_lib.answer_prototype(threshold, num_arms)
  shapes = jax.eval_shape(
      lambda c, idle: jax.vmap(lambda i: lane_lib.start(family, rule, c, i, num_arms, n_deltas,
                                                        scores, answer))(idle),
      config, jax.ShapeDtypeStruct((n_lanes,), jnp.int32))

  def zeros(s):  # numpy, or jax for extended dtypes (PRNG keys)
    make = jnp.zeros if jnp.issubdtype(s.dtype, jax.dtypes.extended) else xp.zeros
    return make(s.shape, s.dtype)

  lanes = jax.tree.map(zeros, shapes)._replace(index=xp.full((n_lanes,), -1, xp.int32))
  zero = xp.zeros((), xp.int32)
  return Pool(lanes, _empty_slots(lanes, n_slots(n_lanes), xp), zero, zero, zero, zero)


def compact(pool: Pool, n_lanes: int, xp=jnp) -> Pool:
  """`pool` cut to n_lanes lanes: its lanes with index >= 0 (running, or ended and
  not yet written), in order, then idle lanes; the output slots start empty.

  With xp=numpy it runs on the host, on a pool fetched from the devices (no
  program to compile or load: `jbai.host.driver`).
  """
  index = pool.lanes.index
  order = xp.argsort(xp.where(index < 0, index.shape[0], 0) + xp.arange(index.shape[0]))
  lanes = jax.tree.map(lambda x: x[order[:n_lanes]], pool.lanes)
  zero = xp.zeros_like(pool.written)
  return Pool(lanes, _empty_slots(lanes, n_slots(n_lanes), xp), zero, pool.next_trial, zero,
              zero)


def width(n_lanes: int) -> int:
  """The lanes of a pool asked to have n_lanes: at least MIN_WIDTH. XLA compiles a
  program over one lane without the lane axis, and rounds float32 otherwise than
  over several (docs/design/ties.md): a one-lane pool runs as two, one idle, so
  that a trial is the same on any pool."""
  return max(int(n_lanes), MIN_WIDTH)


def shrink_after(platform: Optional[str] = None) -> int:
  """The lane-steps, per unit of `jbai.simulate`'s `shrink`, that a run takes on
  devices of `platform` (default: JAX's default backend) before its tail may move
  to a smaller pool, one more compiled program: a few seconds of steps, about a
  compilation's worth. Counted in steps, not seconds, so that where the tail
  moves is the same in every run of the same arguments (a trial of a rule whose
  float32 rounding depends on its pool, docs/design/float32.md, then too)."""
  if (platform or jax.default_backend()) == "cpu":
    return SHRINK_AFTER_CPU
  return SHRINK_AFTER_ACCELERATOR


def smaller_pool(n_lanes: int) -> int:
  """The tail's next pool size after n_lanes: SHRINK times fewer lanes, at least
  MIN_LANES. A pool of at most SHRINK lanes stays as it is: a step of its few
  lanes costs about what a step of MIN_LANES does, and each pool is one more
  compiled loop (in `jbai.rollout`, one more copy of the step in its program)."""
  return n_lanes if n_lanes <= SHRINK else max(n_lanes // SHRINK, MIN_LANES)


def pool_sizes(n_lanes: int) -> list:
  """The pool sizes a run moves through: n_lanes, then SHRINK times fewer each
  time, down to SHRINK lanes or fewer (a step of a few lanes costs about as long
  as one of a single lane: the last, longest trials end on 4 to 8 lanes)."""
  sizes = [n_lanes]
  while smaller_pool(sizes[-1]) < sizes[-1]:
    sizes.append(smaller_pool(sizes[-1]))
  return sizes


def default_unroll(platform: Optional[str] = None) -> int:
  """Steps per iteration of the chunk's loop on devices of `platform` (default:
  JAX's default backend). On a CPU one (benchmarks/step_profile.py: an unrolled
  body ran slower per step, docs/performance.md); on an accelerator, where each
  iteration costs a launch of the body and a synchronisation on the predicate,
  UNROLL_ACCELERATOR (on an H100, 8 steps gave 1.5 to 1.8 times the steps per second
  of one: benchmarks/gpu.py, docs/performance.md)."""
  if (platform or jax.default_backend()) == "cpu":
    return UNROLL_CPU
  return UNROLL_ACCELERATOR


def default_lanes(total: int, n_devices: int = 1, platform: Optional[str] = None) -> int:
  """Lanes per device for `total` trials on devices of `platform` (default:
  JAX's default backend), by measurement (benchmarks/lanes.py, docs/performance.md).

  On a CPU: about 4 trials per lane, at most 256. A step's kernels cost a fixed
  time each besides their per-lane arithmetic, so wide pools pay: TCB's whole
  runs of 1,000 and 2,000 trials on two devices ran 1.5 to 1.6 times as fast on
  125 to 256 lanes per device as on 32 to 62, and wider ones gain nothing at
  8,000 trials; the tail moves down to `MIN_LANES` lanes, so a wide pool costs
  little at the end. On an accelerator a step costs about the same for a few
  lanes as for thousands, so the pool is large (2 trials per lane, at most 16384).

  Rounded up to a power of two: runs of nearby sizes share one compiled program
  (a study's cells, `jbai run` with 1,000 or 2,000 trials), and the tail's pools,
  SHRINK times smaller, are those of smaller runs. A trial does not depend on the
  pool it runs on.
  """
  per_device = -(-total // n_devices)
  cpu = (platform or jax.default_backend()) == "cpu"
  most, per_lane = (256, 4) if cpu else (16384, 2)
  return int(min(most, 1 << (max(8, per_device // per_lane) - 1).bit_length()))
