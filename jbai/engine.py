"""The simulation engine: trials stepped by lax.while_loop over a pool of lanes.

A trial is a pure function of its PRNG key: trial number n (counting instances
first: n = instance * n_trials + j) uses key fold_in(key, n), and its step t uses
fold_in(trial_key, 2t) for the rule and fold_in(trial_key, 2t + 1) for the reward
(keys are wrapped with `jbai.prng.THREEFRY`, bit-identical to jax.random's
default threefry and faster on CPU). A fixed pool of `lanes` lanes runs the
trials, vmapped: a lane whose trial ends writes its result to an output slot and
starts the next pending trial at once (lane recycling), so that heavy-tailed
stopping times do not leave most lanes idle; once every trial has started, the
last running lanes move to a smaller pool. The results are identical for any
pool size and any chunk size.

Each step of a running lane, with the statistics of the t rewards so far:
  1. stopping (eq. stop): top = argmax of the projected sample means (lowest index
     among ties), Lambda_t(top, i) = transport cost with the counts as weights and
     the MLEs as means (eq. GLLR), ch = argmin_i Lambda_t(top, i), and every delta
     whose threshold Lambda_t(top, ch) crosses for the first time records
     tau = t and answer = top;
  2. the trial ends when every delta has crossed or t reaches max_steps (the cap;
     such a trial is counted in `hit_cap`, never dropped);
  3. otherwise the rule selects an arm, the family samples a reward, and the
     statistics are updated.

The loop runs in chunks of `chunk` steps (one compiled program per rule, family,
threshold, K, number of deltas and pool size), so that the host can report
progress and save results between chunks; n_trials, the means, delta,
max_steps and the rule's runtime hyper-parameters (a top-two rule's beta: the
rule's initial state, built on the host and passed in `Config.rule_state`) are
runtime values and never cause a recompilation. "Rule" here means
`Rule.program()`, the rule without its runtime parameters.
"""

import functools
import math
import time
import weakref
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import prng
from jbai import thresholds as thresholds_lib
from jbai.families.base import Family, check_means
from jbai.rules.base import Rule
from jbai.state import ArmStats, arm_stats, empty_stats, observe
from jbai.transport import gamma, pair_costs


REFILL_EVERY = 8  # steps between writing results and refilling finished lanes
SHRINK = 8        # the tail's pool has 1/SHRINK of the lanes ...
MIN_LANES = 4     # ... and at least MIN_LANES


class Lane(NamedTuple):
  """One lane of the pool, running one trial (or idle)."""

  stats: ArmStats     # statistics of the trial's rewards
  rule_state: Any     # the rule's state
  key: jax.Array      # [2] uint32, the trial's key
  index: jax.Array    # [] int32, trial number, -1 when idle
  means: jax.Array    # [K] float, the trial's instance
  tau: jax.Array      # [D] int32, first crossing time per delta (0: none yet)
  answer: jax.Array   # [D] int32, answer at that crossing
  done: jax.Array     # [] bool, trial ended, result not yet written


class Slots(NamedTuple):
  """Results written by the lanes during one chunk."""

  index: jax.Array    # [M] int32, trial number (-1: unused slot)
  tau: jax.Array      # [M, D] int32
  answer: jax.Array   # [M, D] int32
  counts: jax.Array   # [M, K] int32, final counts
  steps: jax.Array    # [M] int32, length of the trial


class Pool(NamedTuple):
  """The carry of the chunked loop."""

  lanes: Lane             # [L] lanes
  slots: Slots            # [M] output slots
  written: jax.Array      # [] int32, slots used in this chunk
  next_trial: jax.Array   # [] int32, next trial number to start
  useful: jax.Array       # [] int32, lane-steps that advanced a trial, this chunk
  steps: jax.Array        # [] int32, loop iterations, this chunk


class Config(NamedTuple):
  """Runtime values of a simulation (no recompilation when they change)."""

  key: jax.Array          # [2] uint32, base key
  means: jax.Array        # [I, K] float
  n_trials: jax.Array     # [] int32, trials per instance
  max_steps: jax.Array    # [] int32, cap on the steps of a trial
  thr_params: Any         # threshold parameters (from Threshold.init)
  rule_state: Any         # every trial's initial rule state, rule.init(K)


def step_keys(key: jax.Array, t: jax.Array):
  """The keys of the rule and of the reward at step t of a trial (raw key data
  in, typed `jbai.prng.THREEFRY` keys out, bit-identical to jax.random's default).

  Two fold_ins (two threefry blocks) rather than fold_in then split (three).
  """
  key, t = prng.wrap(key), t.astype(jnp.uint32)
  return jax.random.fold_in(key, 2 * t), jax.random.fold_in(key, 2 * t + 1)


def stopping_statistic(family: Family, stats: ArmStats):
  """(top, challenger, Lambda_t(top, challenger)) of the GLLR stopping rule."""
  top = jnp.argmax(stats.mean).astype(jnp.int32)
  glr = pair_costs(family, stats.counts, stats.mle, top)
  ch = jnp.argmin(glr).astype(jnp.int32)
  return top, ch, glr[ch]


def _start(family: Family, rule: Rule, config: Config, index, num_arms: int,
           n_deltas: int) -> Lane:
  """A lane starting trial `index` (idle if index < 0)."""
  instance = jnp.maximum(index, 0) // config.n_trials
  dtype = config.means.dtype
  return Lane(
      stats=empty_stats(family, num_arms, dtype),
      rule_state=config.rule_state,
      key=jax.random.key_data(
          jax.random.fold_in(prng.wrap(config.key), jnp.maximum(index, 0))),
      index=index.astype(jnp.int32),
      means=config.means[instance],
      tau=jnp.zeros(n_deltas, jnp.int32),
      answer=jnp.zeros(n_deltas, jnp.int32),
      done=jnp.asarray(False))


def _step_lane(family: Family, rule: Rule, threshold, config: Config, lane: Lane):
  """Advances one running lane by one step (a no-op for idle or done lanes)."""
  running = (lane.index >= 0) & ~lane.done
  stats = lane.stats
  top, ch, glr = stopping_statistic(family, stats)
  beta = threshold.value(config.thr_params, family, stats, top, ch)
  crossed = (lane.tau == 0) & (glr > beta) & running
  tau = jnp.where(crossed, stats.t, lane.tau)
  answer = jnp.where(crossed, top, lane.answer)
  ends = running & (jnp.all(tau > 0) | (stats.t >= config.max_steps))

  k_rule, k_reward = step_keys(lane.key, stats.t)
  arm, rule_state = rule.select(k_rule, family, stats, lane.rule_state)
  reward = family.sample(k_reward, lane.means[arm])
  advance = running & ~ends
  new_stats = observe(family, stats, arm, reward)
  stats = jax.tree.map(lambda new, old: jnp.where(advance, new, old), new_stats, stats)
  rule_state = jax.tree.map(lambda new, old: jnp.where(advance, new, old),
                            rule_state, lane.rule_state)
  lane = lane._replace(stats=stats, rule_state=rule_state, tau=tau, answer=answer,
                       done=lane.done | ends)
  return lane, advance


def build_chunk(family: Family, rule: Rule, threshold, num_arms: int,
                n_deltas: int, n_lanes: int, chunk: int) -> Callable:
  """The pure function that runs up to `chunk` steps of the pool.

  With several devices each runs its own pool of `n_lanes` lanes on the trials
  n = device + n_devices * j, j = 0, 1, ... (the trial's result depends on n
  alone, so the split does not change any result).

  Returns:
    chunk_fn(pool, config, total, device, n_devices) -> pool, where total is the
    number of trials (instances * n_trials). Exposed so that tests can count
    traces.
  """
  n_slots = 2 * n_lanes + REFILL_EVERY
  start = functools.partial(_start, family, rule)
  step = functools.partial(_step_lane, family, rule, threshold)

  def write_and_refill(pool: Pool, config: Config, total, device, n_devices) -> Pool:
    lanes = pool.lanes
    finished = lanes.done & (lanes.index >= 0)
    slot = pool.written + jnp.cumsum(finished) - 1
    written = finished & (slot < n_slots)
    target = jnp.where(written, slot, n_slots)  # out of range: dropped
    slots = Slots(
        index=pool.slots.index.at[target].set(lanes.index, mode="drop"),
        tau=pool.slots.tau.at[target].set(lanes.tau, mode="drop"),
        answer=pool.slots.answer.at[target].set(lanes.answer, mode="drop"),
        counts=pool.slots.counts.at[target].set(lanes.stats.counts, mode="drop"),
        steps=pool.slots.steps.at[target].set(lanes.stats.t, mode="drop"))
    # Written and idle lanes take the next pending trials, in lane order.
    free = written | (lanes.index < 0)
    local = pool.next_trial + jnp.cumsum(free) - 1
    new_index = device + n_devices * local
    new_index = jnp.where(new_index < total, new_index, -1).astype(jnp.int32)
    fresh = jax.vmap(lambda i: start(config, i, num_arms, n_deltas))(new_index)
    lanes = jax.tree.map(
        lambda f, old: jnp.where(free.reshape((-1,) + (1,) * (f.ndim - 1)), f, old),
        fresh, lanes)
    started = jnp.sum(free & (new_index >= 0)).astype(jnp.int32)
    return pool._replace(lanes=lanes, slots=slots,
                         written=pool.written + jnp.sum(written).astype(jnp.int32),
                         next_trial=pool.next_trial + started)

  def chunk_fn(pool: Pool, config: Config, total, device=0, n_devices=1) -> Pool:
    refill_fn = lambda p: write_and_refill(p, config, total, device, n_devices)
    pool = pool._replace(
        slots=pool.slots._replace(index=jnp.full((n_slots,), -1, jnp.int32)),
        written=jnp.zeros((), jnp.int32), useful=jnp.zeros((), jnp.int32),
        steps=jnp.zeros((), jnp.int32))

    def cond(pool):  # ends early when every trial is done or the slots fill up
      return ((pool.steps < chunk) & jnp.any(pool.lanes.index >= 0) &
              (pool.written + n_lanes <= n_slots))

    def body(pool):
      lanes, advanced = jax.vmap(lambda l: step(config, l))(pool.lanes)
      pool = pool._replace(lanes=lanes, steps=pool.steps + 1,
                           useful=pool.useful + jnp.sum(advanced, dtype=jnp.int32))
      # Refilling touches every lane: do it every REFILL_EVERY steps only.
      refill = (pool.steps % REFILL_EVERY == 0) & jnp.any(pool.lanes.done)
      return jax.lax.cond(refill, refill_fn, lambda p: p, pool)

    return jax.lax.while_loop(cond, body, refill_fn(pool))

  return chunk_fn


AXIS = "lanes"
_RAN = weakref.WeakSet()  # the programs of `_compiled` that have run (are compiled)


@functools.lru_cache(maxsize=64)
def _compiled(family, rule, threshold, num_arms, n_deltas, n_lanes, chunk, devices):
  """The jitted chunk, shard_mapped over `devices` (a pool of n_lanes lanes each)."""
  local = build_chunk(family, rule, threshold, num_arms, n_deltas, n_lanes, chunk)
  mesh = jax.sharding.Mesh(np.array(devices), (AXIS,))

  def per_device(pool, config, total):
    pool = jax.tree.map(lambda x: x[0], pool)
    pool = local(pool, config, total, jax.lax.axis_index(AXIS), len(devices))
    return jax.tree.map(lambda x: x[None], pool)

  spec = jax.sharding.PartitionSpec(AXIS)
  mapped = jax.shard_map(per_device, mesh=mesh, in_specs=(spec, None, None),
                         out_specs=spec, check_vma=False)
  sharding = jax.sharding.NamedSharding(mesh, spec)
  return jax.jit(mapped), sharding


def _shrink(pool: Pool, n_lanes: int) -> Pool:
  """`pool` (leaves [devices, lanes, ...]) cut to n_lanes lanes per device, on the host.

  Every device keeps its lanes with index >= 0 (running, or ended and not yet
  written), in order, then idle lanes; the output slots start empty.
  """
  pool = jax.device_get(pool)
  order = np.argsort(pool.lanes.index < 0, axis=1, kind="stable")[:, :n_lanes]
  rows = np.arange(order.shape[0])[:, None]
  lanes = jax.tree.map(lambda x: x[rows, order], pool.lanes)
  n_slots = 2 * n_lanes + REFILL_EVERY
  slots = jax.tree.map(lambda x: np.zeros(x.shape[:1] + (n_slots,) + x.shape[2:], x.dtype),
                       pool.slots)
  slots = slots._replace(index=np.full_like(slots.index, -1))
  zero = np.zeros_like(pool.written)
  return Pool(lanes, slots, zero, pool.next_trial, zero, zero)


def _initial_pool(family, rule, config, num_arms, n_deltas, n_lanes) -> Pool:
  idle = jnp.full((n_lanes,), -1, jnp.int32)
  lanes = jax.vmap(lambda i: _start(family, rule, config, i, num_arms, n_deltas))(idle)
  n_slots = 2 * n_lanes + REFILL_EVERY
  slots = Slots(index=jnp.full((n_slots,), -1, jnp.int32),
                tau=jnp.zeros((n_slots, n_deltas), jnp.int32),
                answer=jnp.zeros((n_slots, n_deltas), jnp.int32),
                counts=jnp.zeros((n_slots, num_arms), jnp.int32),
                steps=jnp.zeros((n_slots,), jnp.int32))
  zero = jnp.zeros((), jnp.int32)
  return Pool(lanes, slots, zero, zero, zero, zero)


class Result(NamedTuple):
  """Per-trial results of `simulate`, with leading axes [I, n_trials] (I dropped
  for a single instance) and a trailing delta axis [D] (dropped for a scalar delta)."""

  tau: np.ndarray       # int, stopping time (max_steps where the cap was hit)
  answer: np.ndarray    # int, the empirical top arm at stopping (-1 at the cap)
  correct: np.ndarray   # bool, answer is the best arm
  hit_cap: np.ndarray   # bool, the trial reached max_steps before crossing
  counts: np.ndarray    # int [..., K], final counts
  steps: np.ndarray     # int, length of the trial (the largest tau)
  summary: list         # one Summary dict per (instance, delta)
  stats: dict           # run statistics: wall/compile seconds, lane utilisation, ...


def _resolve(family, rule, threshold):
  from jbai import families as families_lib
  from jbai import rules as rules_lib
  if isinstance(family, str):
    family = families_lib.get(family)
  if isinstance(rule, str):
    rule = rules_lib.get(rule)
  if isinstance(threshold, str):
    threshold = thresholds_lib.get(threshold)
  check = getattr(thresholds_lib, "check", None)
  if check is not None:
    check(threshold, family)
  return family, rule, threshold


def check_delta(delta) -> np.ndarray:
  """Validates delta (a scalar or a vector), every entry in (0, 1)."""
  arr = np.atleast_1d(np.asarray(delta, dtype=float))
  if arr.ndim != 1 or arr.size == 0:
    raise ValueError(f"delta must be a number or a 1-d list, got {delta!r}")
  for d in arr:
    if not 0.0 < d < 1.0:
      raise ValueError(f"delta must be in (0, 1), got {float(d)!r}")
  return arr


def simulate(key: jax.Array, family, means, rule, delta, n_trials: int,
             threshold="gk16", max_steps: int = 1_000_000, lanes: Optional[int] = None,
             chunk: int = 2048, progress: Optional[Callable] = None,
             on_chunk: Optional[Callable] = None, devices=None,
             shrink: Optional[float] = 2.0) -> Result:
  """Runs n_trials trials of a BAI algorithm on one instance or a batch of instances.

  Args:
    key: PRNG key; the same key gives identical results.
    family: a `Family` (or a built-in name).
    means: [K] or [I, K] arm means.
    rule: a `Rule` (or a registered name).
    delta: confidence level in (0, 1), or a 1-d list of levels: one trajectory
      then records the first crossing of every level's threshold (the sampling
      rules do not depend on delta) and runs until the smallest level crosses.
    n_trials: trials per instance.
    threshold: a `Threshold` (or "gk16", "kk", "paper").
    max_steps: cap on the length of a trial; trials that reach it are reported
      in `hit_cap` (and counted as errors in the summary's error rate).
    lanes: lanes per device (default: see `default_lanes`).
    chunk: steps per compiled chunk between host callbacks.
    progress: optional callback(done_trials, total_trials, lane_steps).
    on_chunk: optional callback(partial_result_dict) after each chunk.
    devices: devices to shard the lanes over (default: all local devices); each
      runs its own pool on every n_devices-th trial, with identical results.
      After jax.distributed.initialize(), pass jax.devices() to use every host's
      devices: each process runs this same call and receives all the results.
    shrink: once every trial has started and at most lanes / SHRINK lanes still
      run, move them to a pool SHRINK times smaller, so that the last, longest
      trials do not run on a mostly idle pool; on one host, and once the run has
      lasted `shrink` times its compilation time (the smaller pool is one more
      compiled program). None: never. Results do not depend on it.

  Returns:
    A `Result`.

  Example:
    >>> import jax, jbai
    >>> res = jbai.simulate(jax.random.key(0), "gaussian", [1.0, 0.0], "tcb",
    ...                     delta=0.1, n_trials=20)
    >>> res.tau.shape
    (20,)
  """
  family, rule, threshold = _resolve(family, rule, threshold)
  means_np = check_means(family, means)
  deltas = check_delta(delta)
  if int(n_trials) < 1:
    raise ValueError(f"n_trials must be >= 1, got {n_trials!r}")
  if int(max_steps) < 1 or int(max_steps) >= 2**31 - 1:
    raise ValueError(f"max_steps must be in [1, 2^31 - 1), got {max_steps!r}")
  table = means_np.reshape(-1, means_np.shape[-1])
  n_inst, num_arms = table.shape
  total = n_inst * int(n_trials)
  devices = tuple(devices or jax.local_devices())
  n_lanes = int(lanes or default_lanes(total, len(devices)))

  def program(n_lanes):  # the arguments of `_compiled` for a pool of n_lanes lanes
    return (family, rule.program(), threshold, num_arms, len(deltas), n_lanes, int(chunk),
            devices)

  fn, sharding = _compiled(*program(n_lanes))
  dtype = jnp.zeros(()).dtype
  config = Config(key=_raw_key(key), means=jnp.asarray(table, dtype),
                  n_trials=jnp.asarray(n_trials, jnp.int32),
                  max_steps=jnp.asarray(max_steps, jnp.int32),
                  thr_params=threshold.init(jnp.asarray(deltas, dtype), num_arms),
                  rule_state=rule.init(num_arms))
  pool = _initial_pool(family, rule, config, num_arms, len(deltas), n_lanes)
  pool = jax.device_put(
      jax.tree.map(lambda x: jnp.broadcast_to(x, (len(devices),) + x.shape), pool),
      sharding)
  total_j = jnp.asarray(total, jnp.int32)

  out_tau = np.zeros((total, len(deltas)), np.int64)
  out_answer = np.full((total, len(deltas)), -1, np.int64)
  out_counts = np.zeros((total, num_arms), np.int64)
  out_steps = np.zeros(total, np.int64)
  seen = np.zeros(total, bool)
  per_device = np.array([len(range(d, total, len(devices))) for d in range(len(devices))])
  lanes_used = [n_lanes]
  useful = lane_steps = timed_useful = 0
  compile_s = wall = 0.0
  first_chunk = fn not in _RAN  # the first call of a program compiles it
  while True:
    t_chunk = time.perf_counter()
    pool = fn(pool, config, total_j)
    s, steps_, useful_, index, next_trial = _to_host(
        (pool.slots, pool.steps, pool.useful, pool.lanes.index, pool.next_trial))
    s = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), s)
    n_steps, n_useful = int(steps_.sum()), int(useful_.sum())
    if first_chunk:
      compile_s += time.perf_counter() - t_chunk
      first_chunk = False
      _RAN.add(fn)
    else:
      wall += time.perf_counter() - t_chunk
      timed_useful += n_useful
    useful += n_useful
    lane_steps += n_steps * n_lanes
    got = s.index >= 0
    idx = s.index[got]
    out_tau[idx], out_answer[idx] = s.tau[got], s.answer[got]
    out_counts[idx], out_steps[idx] = s.counts[got], s.steps[got]
    seen[idx] = True
    done = int(seen.sum())
    if progress is not None:
      progress(done, total, useful)
    if on_chunk is not None:
      on_chunk({"index": idx, "tau": s.tau[got], "answer": s.answer[got],
                "counts": s.counts[got], "steps": s.steps[got]})
    if done == total:
      break
    if n_steps == 0:
      raise RuntimeError("simulation made no progress")  # defensive: a bug
    # The tail: every trial has started and few lanes still run. Move them to a
    # pool SHRINK times smaller (one more compiled program, so only once the run
    # has lasted long enough to pay for it).
    small = n_lanes // SHRINK
    if (shrink is not None and small >= MIN_LANES and np.all(next_trial >= per_device) and
        np.max(np.sum(index >= 0, axis=1)) <= small and wall >= shrink * compile_s and
        all(x.is_fully_addressable for x in jax.tree.leaves(pool))):
      n_lanes = small
      lanes_used.append(n_lanes)
      fn, sharding = _compiled(*program(n_lanes))
      pool = jax.device_put(_shrink(pool, n_lanes), sharding)
      first_chunk = fn not in _RAN

  hit_cap = out_tau == 0
  tau = np.where(hit_cap, out_steps[:, None], out_tau)
  answer = np.where(hit_cap, -1, out_answer)
  best = np.repeat(np.argmax(table, axis=-1), int(n_trials))
  correct = answer == best[:, None]
  shape = (n_inst, int(n_trials)) if means_np.ndim == 2 else (int(n_trials),)
  d_shape = () if np.ndim(delta) == 0 else (len(deltas),)

  def shaped(a, tail=()):
    return a.reshape(shape + tail)

  summaries = []
  for i in range(n_inst):
    sl = slice(i * int(n_trials), (i + 1) * int(n_trials))
    best_w = optimal(family, table[i])
    for d, dlt in enumerate(deltas):
      summaries.append(summarize(family, table[i], dlt, tau[sl, d], correct[sl, d],
                                 hit_cap[sl, d], instance=i, optimum=best_w))
  run_stats = {"wall_seconds": wall, "compile_seconds": compile_s,
               "useful_steps": useful, "timed_useful_steps": timed_useful,
               "lane_steps": lane_steps,
               "utilisation": useful / lane_steps if lane_steps else 0.0,
               "lanes": lanes_used[0], "pool_sizes": lanes_used, "devices": len(devices),
               "rule": repr(rule), "family": repr(family), "threshold": repr(threshold)}
  return Result(tau=shaped(tau, d_shape) if d_shape else shaped(tau[:, 0]),
                answer=shaped(answer, d_shape) if d_shape else shaped(answer[:, 0]),
                correct=shaped(correct, d_shape) if d_shape else shaped(correct[:, 0]),
                hit_cap=shaped(hit_cap, d_shape) if d_shape else shaped(hit_cap[:, 0]),
                counts=shaped(out_counts, (num_arms,)), steps=shaped(out_steps),
                summary=summaries, stats=run_stats)


def _to_host(tree):
  """Fetches per-device arrays; across hosts (jax.distributed), every process
  gathers the whole pool's output."""
  if all(x.is_fully_addressable for x in jax.tree.leaves(tree)):
    return jax.device_get(tree)
  from jax.experimental import multihost_utils
  return multihost_utils.process_allgather(tree, tiled=True)


def default_lanes(total: int, n_devices: int = 1) -> int:
  """Lanes per device: enough to vectorise, few enough that the last, longest
  trials do not leave most lanes idle (about 32 trials per lane)."""
  per_device = -(-total // n_devices)
  return int(min(512, max(8, per_device // 32)))


def _raw_key(key) -> jax.Array:
  """Accepts a typed key (jax.random.key) or a raw uint32 key (PRNGKey)."""
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    return jax.random.key_data(key)
  return key


def wilson(k: int, n: int, z: float = 1.959964) -> tuple:
  """Wilson score interval for a binomial proportion k/n."""
  if n == 0:
    return (0.0, 1.0)
  p = k / n
  den = 1 + z * z / n
  centre = (p + z * z / (2 * n)) / den
  half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
  return (max(0.0, centre - half), min(1.0, centre + half))


@functools.lru_cache(maxsize=256)
def _optimum(family: Family, means: tuple, dtype: str) -> tuple:
  del dtype  # a key only: the oracle computes in the default float dtype
  from jbai import oracle
  w, gam = oracle.exact_solve(family, np.asarray(means))
  return tuple(float(x) for x in np.asarray(w)), float(gam)


def optimal(family: Family, means) -> tuple:
  """(w(nu), Gamma(nu)) of the exact oracle at one instance, as Python floats.

  Cached per (family, means, default float dtype): a run of many simulations of
  one instance (a sweep over beta or delta) solves the oracle once.
  """
  means = tuple(float(m) for m in np.asarray(means, float).reshape(-1))
  return _optimum(family, means, str(jnp.zeros(()).dtype))


def summarize(family: Family, means, delta: float, tau, correct, hit_cap,
              instance: int = 0, optimum: Optional[tuple] = None) -> dict:
  """Summary of one (instance, delta): mean tau with a 95% CI, error rate with a
  Wilson 95% CI, trials at the cap, T*(nu) log(1/delta) and the ratio.

  The error rate counts wrong answers and trials at the cap (they did not return a
  correct answer); `wrong` counts wrong answers alone. Trials at the cap enter the
  mean tau at the cap (so that mean is then a lower bound, flagged by hit_cap > 0).
  `optimum` is (w(nu), Gamma(nu)) when the caller has it (default: the cached
  oracle solution of `optimal(family, means)`).
  """
  n = len(tau)
  w, gam = optimal(family, means) if optimum is None else optimum
  t_star = 1.0 / float(gam)
  mean = float(np.mean(tau))
  half = 1.959964 * float(np.std(tau, ddof=1)) / math.sqrt(n) if n > 1 else float("nan")
  errors = int(np.sum(~correct))
  lower_bound = t_star * math.log(1 / delta)
  return {"instance": instance, "means": [float(m) for m in means], "delta": float(delta),
          "trials": n, "mean_tau": mean, "tau_ci95": [mean - half, mean + half],
          "median_tau": float(np.median(tau)), "max_tau": int(np.max(tau)),
          "error_rate": errors / n, "error_ci95": list(wilson(errors, n)),
          "wrong": int(np.sum(~correct & ~hit_cap)), "hit_cap": int(np.sum(hit_cap)),
          "t_star": t_star, "w_star": [float(x) for x in np.asarray(w)],
          "t_star_log": lower_bound, "ratio": mean / lower_bound}


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
def _compiled_advance(family, rule, num_arms):

  def advance(lane: Lane, until):
    def cond(lane):
      return lane.stats.t < until

    def body(lane):
      stats = lane.stats
      k_rule, k_reward = step_keys(lane.key, stats.t)
      arm, rule_state = rule.select(k_rule, family, stats, lane.rule_state)
      reward = family.sample(k_reward, lane.means[arm])
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
    horizon: last time recorded.
    n_trials: trials per instance.
    n_points: number of log-spaced recording times.
    progress: optional callback(t, horizon) after each recording time.

  Returns:
    A `Trace`.
  """
  family, rule, _ = _resolve(family, rule, "gk16")
  means_np = check_means(family, means)
  table = means_np.reshape(-1, means_np.shape[-1])
  n_inst, num_arms = table.shape
  total = n_inst * int(n_trials)
  dtype = jnp.zeros(()).dtype
  config = Config(key=_raw_key(key), means=jnp.asarray(table, dtype),
                  n_trials=jnp.asarray(n_trials, jnp.int32),
                  max_steps=jnp.asarray(horizon, jnp.int32), thr_params=None,
                  rule_state=rule.init(num_arms))
  lanes = jax.vmap(lambda i: _start(family, rule, config, i, num_arms, 1))(
      jnp.arange(total, dtype=jnp.int32))
  advance = _compiled_advance(family, rule.program(), num_arms)
  times = log_times(horizon, n_points)
  props, gammas, shares = [], [], []
  for t in times:
    lanes, (w, g, share) = advance(lanes, jnp.asarray(t, jnp.int32))
    props.append(np.asarray(w))
    gammas.append(np.asarray(g))
    shares.append(np.asarray(share))
    if progress is not None:
      progress(int(t), horizon)
  lead = (n_inst, int(n_trials)) if means_np.ndim == 2 else (int(n_trials),)
  return Trace(times=times,
               proportions=np.stack(props, 1).reshape(lead + (len(times), num_arms)),
               gamma_t=np.stack(gammas, 1).reshape(lead + (len(times),)),
               top_share=np.stack(shares, 1).reshape(lead + (len(times),)))
