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

The loop runs in chunks of `chunk` steps (`build_chunk`: one compiled program
per rule, family, threshold, K, number of deltas and pool size); n_trials, the
means, delta, max_steps and the rule's runtime hyper-parameters (a top-two
rule's beta: the rule's initial state, built on the host and passed in
`Config.rule_state`) are runtime values and never cause a recompilation. "Rule"
here means `Rule.program()`, the rule without its runtime parameters.
For jbai's own families, rules and thresholds the chunk program is also kept on
disk, exported (`jbai.program_cache`), so that a later process loads it instead
of tracing and lowering it, and its executable from JAX's compilation cache.

Two drivers run the same chunk (one engine):
  * `rollout`, the functional core: the whole simulation in one compiled
    program (a lax.while_loop over chunks), a pure function that runs under the
    caller's jit, vmap and grad (with `jbai.estimate`);
  * `simulate`, the host shell: between chunks it reports progress, hands
    finished trials to a callback, resumes from saved trials, shards the lanes
    over devices and hosts, and moves the tail to a smaller pool once the run
    has paid for the extra compilation.
With `scores=True` each trial also records its final sufficient statistics and
the scores of its stopped trajectory (`Scores`), from which `jbai.estimate`
builds likelihood-ratio gradients.
"""

import functools
import math
import time
import weakref
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import memory_maps
from jbai import prng
from jbai import program_cache
from jbai import thresholds as thresholds_lib
from jbai.families.base import Family, check_means
from jbai.rules.base import Rule
from jbai.state import ArmStats, arm_stats, empty_stats, observe
from jbai.transport import gamma, pair_costs


REFILL_EVERY = 8  # steps between writing results and refilling finished lanes
SHRINK = 8        # the tail's pool has 1/SHRINK of the lanes ...
MIN_LANES = 4     # ... and at least MIN_LANES


class Scores(NamedTuple):
  """What a trial records for its likelihood-ratio gradients (`scores=True`).

  The score of a stopped trajectory with respect to a parameter is the derivative
  of its log-likelihood: for the means, sum_{t < tau} d/dmu log pi(X_t | mu_{A_t}),
  one entry per arm; for a rule's runtime parameter, the rule's own score of its
  random choices (`Rule.score`). Each is recorded at every delta's stopping time.
  """

  running: Any        # [K] float, reward score so far (() when the family has `score`)
  reward: jax.Array   # [D, K] float, reward score at each delta's stopping time
  policy: Any         # {name: [D] float}, the rule's score at each stopping time


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
  scores: Any         # Scores, or () without scores


class Slots(NamedTuple):
  """Results written by the lanes during one chunk."""

  index: jax.Array    # [M] int32, trial number (-1: unused slot)
  tau: jax.Array      # [M, D] int32
  answer: jax.Array   # [M, D] int32
  counts: jax.Array   # [M, K] int32, final counts
  steps: jax.Array    # [M] int32, length of the trial
  extra: dict         # with scores: final_stats [M, K, S], reward_score [M, D, K] and
                      # "policy_score.<name>" [M, D]; else empty


class Pool(NamedTuple):
  """The carry of the chunked loop."""

  lanes: Lane             # [L] lanes
  slots: Slots            # [M] output slots
  written: jax.Array      # [] int32, slots used in this chunk
  next_trial: jax.Array   # [] int32, next trial (position in the list of trials) to start
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
  todo: Any = None        # [T] int32, the trial numbers to run (None: 0, 1, ..., total - 1)


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


def reward_score(family: Family, stats: ArmStats, means: jax.Array, running) -> jax.Array:
  """[K] sum over the rewards so far of d/dmu log pi(x | mu_arm), at the true means:
  the family's closed form from the sufficient statistics, else `running`."""
  if family.score is not None:
    return family.score(stats.counts, stats.stats, means).astype(means.dtype)
  return running


def _policy_score(rule: Rule, state) -> dict:
  return {} if rule.score is None else dict(rule.score(state))


def _initial_scores(family: Family, rule: Rule, config: Config, num_arms: int,
                    n_deltas: int) -> Scores:
  dtype = config.means.dtype
  zeros = jnp.zeros((n_deltas,), dtype)
  return Scores(
      running=() if family.score is not None else jnp.zeros(num_arms, dtype),
      reward=jnp.zeros((n_deltas, num_arms), dtype),
      policy={k: zeros for k in _policy_score(rule, config.rule_state)})


def _start(family: Family, rule: Rule, config: Config, index, num_arms: int,
           n_deltas: int, scores: bool) -> Lane:
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
      done=jnp.asarray(False),
      scores=_initial_scores(family, rule, config, num_arms, n_deltas) if scores else ())


def _keep(advance, new, old):
  """`new` where the lane advanced, else `old` (leaf by leaf)."""
  return jax.tree.map(lambda n, o: jnp.where(advance, n, o), new, old)


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
  scores = lane.scores
  if scores:
    # Each delta records the scores at its stopping time (at the cap: at the end).
    at_stop = crossed | (ends & (tau == 0))
    now = reward_score(family, stats, lane.means, scores.running)
    scores = scores._replace(
        reward=jnp.where(at_stop[:, None], now, scores.reward),
        policy={k: jnp.where(at_stop, v, scores.policy[k])
                for k, v in _policy_score(rule, lane.rule_state).items()})
    if family.score is None:
      d_log_pi = jax.grad(family.log_density, argnums=1)(reward, lane.means[arm])
      one_hot = jnp.arange(lane.means.shape[-1]) == arm
      scores = scores._replace(running=jnp.where(
          advance & one_hot, scores.running + d_log_pi, scores.running))
  lane = lane._replace(stats=_keep(advance, observe(family, stats, arm, reward), stats),
                       rule_state=_keep(advance, rule_state, lane.rule_state),
                       tau=tau, answer=answer, done=lane.done | ends, scores=scores)
  return lane, advance


def _lane_extra(lanes: Lane) -> dict:
  """What a finished lane writes besides tau, answer, counts and steps."""
  if not lanes.scores:
    return {}
  extra = {"final_stats": lanes.stats.stats, "reward_score": lanes.scores.reward}
  extra.update({f"policy_score.{k}": v for k, v in lanes.scores.policy.items()})
  return extra


def _empty_slots(lanes: Lane, n_slots: int) -> Slots:
  """Unused output slots shaped after the lanes (leaves [L, ...] -> [n_slots, ...])."""
  like = Slots(index=lanes.index, tau=lanes.tau, answer=lanes.answer,
               counts=lanes.stats.counts, steps=lanes.stats.t, extra=_lane_extra(lanes))
  slots = jax.tree.map(lambda x: jnp.zeros((n_slots,) + x.shape[1:], x.dtype), like)
  return slots._replace(index=jnp.full((n_slots,), -1, jnp.int32))


def build_chunk(family: Family, rule: Rule, threshold, num_arms: int,
                n_deltas: int, n_lanes: int, chunk: int, scores: bool = False) -> Callable:
  """The pure function that runs up to `chunk` steps of the pool.

  With several devices each runs its own pool of `n_lanes` lanes on the trials
  n = todo[device + n_devices * j], j = 0, 1, ... (the trial's result depends on n
  alone, so the split does not change any result).

  Returns:
    chunk_fn(pool, config, total, device, n_devices) -> pool, where total is the
    number of trials to run (instances * n_trials, or len(config.todo)). Exposed
    so that tests can count traces.
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
    values = Slots(index=lanes.index, tau=lanes.tau, answer=lanes.answer,
                   counts=lanes.stats.counts, steps=lanes.stats.t, extra=_lane_extra(lanes))
    slots = jax.tree.map(lambda s, v: s.at[target].set(v, mode="drop"), pool.slots, values)
    # Written and idle lanes take the next pending trials, in lane order.
    free = written | (lanes.index < 0)
    position = device + n_devices * (pool.next_trial + jnp.cumsum(free) - 1)
    trial = (position if config.todo is None else
             config.todo[jnp.clip(position, 0, config.todo.shape[0] - 1)])
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


def _static(obj) -> tuple:
  """The fields of a family, rule or threshold other than its functions: for a
  built-in (`_builtin`), with its name and parameters, all that its program depends on."""
  return tuple((k, v) for k, v in obj._asdict().items() if not callable(v))


def _builtin(family: Family, rule: Optional[Rule] = None, threshold=None) -> bool:
  """family, rule and threshold are jbai's own, untouched, so that `_static` of
  each (of `Rule.program()` for the rule) names its program (see
  `program_cache.builtin`)."""
  from jbai import families, rules
  return (program_cache.builtin(family, families.BUILTIN) and
          (rule is None or program_cache.builtin(rule, rules.RULES)) and
          (threshold is None or program_cache.builtin(threshold, thresholds_lib.THRESHOLDS)))


@functools.lru_cache(maxsize=64)
def _compiled(family, rule, threshold, num_arms, n_deltas, n_lanes, chunk, devices,
              scores=False, builtin=False):
  """The jitted chunk, shard_mapped over `devices` (a pool of n_lanes lanes each).

  With `builtin` (family, rule and threshold are jbai's own: `_builtin`) and
  devices of this process the program goes through `jbai.program_cache`
  (`jax.export`, one device or several): a later process loads it instead of
  tracing and lowering it. Otherwise, and across hosts (jax.distributed), it is
  a plain `jax.jit`.
  """
  local = build_chunk(family, rule, threshold, num_arms, n_deltas, n_lanes, chunk, scores)
  mesh = jax.sharding.Mesh(np.array(devices), (AXIS,))

  def per_device(pool, config, total):
    pool = jax.tree.map(lambda x: x[0], pool)
    pool = local(pool, config, total, jax.lax.axis_index(AXIS), len(devices))
    return jax.tree.map(lambda x: x[None], pool)

  spec = jax.sharding.PartitionSpec(AXIS)
  mapped = jax.shard_map(per_device, mesh=mesh, in_specs=(spec, None, None),
                         out_specs=spec, check_vma=False)
  sharding = jax.sharding.NamedSharding(mesh, spec)
  here = all(d.process_index == jax.process_index() for d in devices)
  if not (builtin and here):
    return jax.jit(mapped, out_shardings=sharding), sharding
  key = ("chunk", _static(family), _static(rule), _static(threshold), num_arms, n_deltas,
         n_lanes, chunk, scores)
  return program_cache.jit(mapped, key, lambda pool, *_: jax.tree.structure(pool),
                           devices, out_shardings=sharding), sharding


def _compact(pool: Pool, n_lanes: int) -> Pool:
  """`pool` cut to n_lanes lanes: its lanes with index >= 0 (running, or ended and
  not yet written), in order, then idle lanes; the output slots start empty."""
  order = jnp.argsort(pool.lanes.index < 0, stable=True)[:n_lanes]
  lanes = jax.tree.map(lambda x: x[order], pool.lanes)
  zero = jnp.zeros_like(pool.written)
  return Pool(lanes, _empty_slots(lanes, 2 * n_lanes + REFILL_EVERY), zero,
              pool.next_trial, zero, zero)


def pool_sizes(n_lanes: int) -> list:
  """The pool sizes a run moves through: n_lanes, then SHRINK times fewer, while at
  least MIN_LANES."""
  sizes = [n_lanes]
  while sizes[-1] // SHRINK >= MIN_LANES:
    sizes.append(sizes[-1] // SHRINK)
  return sizes


def _initial_pool(family, rule, config, num_arms, n_deltas, n_lanes, scores=False) -> Pool:
  idle = jnp.full((n_lanes,), -1, jnp.int32)
  lanes = jax.vmap(lambda i: _start(family, rule, config, i, num_arms, n_deltas, scores))(idle)
  zero = jnp.zeros((), jnp.int32)
  return Pool(lanes, _empty_slots(lanes, 2 * n_lanes + REFILL_EVERY), zero, zero, zero, zero)


def _idle_pool(family, rule, config, num_arms, n_deltas, n_lanes, scores,
               n_devices: int) -> Pool:
  """An idle pool per device (leaves [n_devices, ...]), built on the host (numpy).

  It has the shapes of `_initial_pool` (`jax.eval_shape`: a trace, no op run),
  index -1 in every lane and slot and zeros elsewhere. A chunk first starts a
  trial (or an idle lane, `_start`) on every idle lane, so no other field of an
  idle lane is read: the results are those from `_initial_pool`.
  """
  shapes = jax.eval_shape(
      lambda c: _initial_pool(family, rule, c, num_arms, n_deltas, n_lanes, scores), config)

  def zeros(s):  # numpy, or jax for extended dtypes (PRNG keys)
    make = jnp.zeros if jnp.issubdtype(s.dtype, jax.dtypes.extended) else np.zeros
    return make((n_devices,) + s.shape, s.dtype)

  pool = jax.tree.map(zeros, shapes)
  lanes = pool.lanes._replace(index=np.full((n_devices, n_lanes), -1, np.int32))
  slots = pool.slots._replace(index=np.full(pool.slots.index.shape, -1, np.int32))
  return pool._replace(lanes=lanes, slots=slots)


def _records(slots: Slots) -> dict:
  """The per-trial outputs of written slots, by name (every field but the index)."""
  out = {k: getattr(slots, k) for k in ("tau", "answer", "counts", "steps")}
  out.update(slots.extra)
  return out


def _finish(xp, raw: dict, table, n_trials: int) -> dict:
  """Per-trial outputs (flat, [I * n_trials, ...]) from the raw records: the cap
  (tau = 0: no crossing) becomes tau = steps and answer = -1, and `correct` and
  `hit_cap` are added. `xp` is numpy or jax.numpy."""
  hit_cap = raw["tau"] == 0
  out = dict(raw, hit_cap=hit_cap,
             tau=xp.where(hit_cap, raw["steps"][:, None], raw["tau"]),
             answer=xp.where(hit_cap, -1, raw["answer"]))
  best = xp.repeat(xp.argmax(table, axis=-1), n_trials)
  out["correct"] = out["answer"] == best[:, None]
  return out


def _shaped(flat: dict, lead: tuple, scalar_delta: bool) -> dict:
  """Flat per-trial outputs reshaped to lead + (...), the delta axis (right after
  the trial axes) dropped for a scalar delta."""
  per_delta = ("tau", "answer", "correct", "hit_cap", "reward_score")
  out = {}
  for name, a in flat.items():
    a = a.reshape(lead + a.shape[1:])
    if scalar_delta and (name in per_delta or name.startswith("policy_score.")):
      a = a[(slice(None),) * len(lead) + (0,)]
    out[name] = a
  return out


def _policy(out: dict) -> dict:
  return {k.split(".", 1)[1]: v for k, v in out.items() if k.startswith("policy_score.")}


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
  # With scores=True (else None): see `Rollout`.
  final_stats: Optional[np.ndarray] = None   # float [..., K, S]
  reward_score: Optional[np.ndarray] = None  # float [..., (D), K]
  policy_score: Optional[dict] = None        # {name: float [..., (D)]}


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
             shrink: Optional[float] = 2.0, done: Optional[dict] = None,
             scores: bool = False) -> Result:
  """Runs n_trials trials of a BAI algorithm on one instance or a batch of instances.

  The host shell over `build_chunk` (the program that `rollout` runs inside one
  compiled loop): it reports progress, hands finished trials to `on_chunk`,
  resumes from `done`, shards the lanes over devices and hosts, and moves the
  last, longest trials to a smaller pool. Per trial, its results are those of
  `rollout` with the same key.

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
    on_chunk: optional callback(records) after each chunk, with the records of
      the trials finished in that chunk: a dict of numpy arrays, "index" (the
      trial number n = instance * n_trials + j), "tau", "answer" (0 and
      unchanged at the cap), "counts", "steps" and, with scores, the score
      records; concatenated over chunks they are what `done` takes.
    devices: devices to shard the lanes over (default: all local devices); each
      runs its own pool on every n_devices-th trial, with identical results.
      After jax.distributed.initialize(), pass jax.devices() to use every host's
      devices: each process runs this same call and receives all the results.
    shrink: once every trial has started and at most lanes / SHRINK lanes still
      run, move them to a pool SHRINK times smaller, so that the last, longest
      trials do not run on a mostly idle pool; on one host, and once the run has
      lasted `shrink` times its compilation time (the smaller pool is one more
      compiled program). None: never. Results do not depend on it.
    done: records of trials already run with the same arguments (those that
      `on_chunk` handed out, concatenated): they are not run again, and the
      result is that of an uninterrupted run.
    scores: also record each trial's final sufficient statistics and its
      likelihood-ratio scores (see `Rollout`).

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
  n_all = n_inst * int(n_trials)
  seen = np.zeros(n_all, bool)
  if done is not None and len(done["index"]):
    seen[np.asarray(done["index"])] = True
  todo = np.flatnonzero(~seen).astype(np.int32)
  total = len(todo)
  devices = tuple(devices or jax.local_devices())
  n_lanes = int(lanes or default_lanes(max(total, 1), len(devices), devices[0].platform))

  builtin = _builtin(family, rule, threshold)
  memory_maps.relieve()  # before this run's programs: see there

  def program(n_lanes):  # the arguments of `_compiled` for a pool of n_lanes lanes
    return (family, rule.program(), threshold, num_arms, len(deltas), n_lanes, int(chunk),
            devices, bool(scores), builtin)

  fn, sharding = _compiled(*program(n_lanes))
  dtype = jnp.result_type(float)
  # Numpy where it can be, sent in one transfer: each op run on the host is a
  # dispatch, and in a new process a compilation (or a load from the cache).
  config, total_j = jax.device_put((
      Config(key=_raw_key(key), means=np.asarray(table, dtype),
             n_trials=np.asarray(n_trials, np.int32), max_steps=np.asarray(max_steps, np.int32),
             thr_params=threshold.init(jnp.asarray(deltas, dtype), num_arms),
             rule_state=rule.init(num_arms), todo=None if total == n_all else todo),
      np.asarray(total, np.int32)))
  pool = _idle_pool(family, rule, config, num_arms, len(deltas), n_lanes, scores, len(devices))
  out = {k: np.zeros((n_all,) + v.shape[2:], v.dtype) for k, v in _records(pool.slots).items()}
  if seen.any():
    missing = sorted(set(out) - set(done))
    if missing:
      raise ValueError(f"done lacks the records {missing} of this run (scores={scores})")
    for k in out:
      out[k][np.asarray(done["index"])] = done[k]
  pool = jax.device_put(pool, sharding)

  per_device = np.array([len(range(d, total, len(devices))) for d in range(len(devices))])
  lanes_used = [n_lanes]
  useful = lane_steps = timed_useful = 0
  compile_s = wall = 0.0
  first_chunk = fn not in _RAN  # the first call of a program compiles it
  while not seen.all():
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
    records = {"index": s.index[got]}
    records.update({k: v[got] for k, v in _records(s).items()})
    for k, v in records.items():
      if k != "index":
        out[k][records["index"]] = v
    seen[records["index"]] = True
    if progress is not None:
      progress(int(seen.sum()), n_all, useful)
    if on_chunk is not None:
      on_chunk(records)
    if seen.all():
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
      small_pool = jax.vmap(lambda p: _compact(p, small))(jax.device_get(pool))
      pool = jax.device_put(small_pool, sharding)
      first_chunk = fn not in _RAN

  flat = _finish(np, out, table, int(n_trials))
  summaries = []
  for i in range(n_inst):
    sl = slice(i * int(n_trials), (i + 1) * int(n_trials))
    best_w = optimal(family, table[i])
    for d, dlt in enumerate(deltas):
      summaries.append(summarize(family, table[i], dlt, flat["tau"][sl, d],
                                 flat["correct"][sl, d], flat["hit_cap"][sl, d],
                                 instance=i, optimum=best_w))
  run_stats = {"wall_seconds": wall, "compile_seconds": compile_s,
               "useful_steps": useful, "timed_useful_steps": timed_useful,
               "lane_steps": lane_steps,
               "utilisation": useful / lane_steps if lane_steps else 0.0,
               "lanes": lanes_used[0], "pool_sizes": lanes_used, "devices": len(devices),
               "resumed_trials": n_all - total,
               "rule": repr(rule), "family": repr(family), "threshold": repr(threshold)}
  lead = (n_inst, int(n_trials)) if means_np.ndim == 2 else (int(n_trials),)
  res = _shaped(flat, lead, np.ndim(delta) == 0)
  return Result(tau=res["tau"], answer=res["answer"], correct=res["correct"],
                hit_cap=res["hit_cap"], counts=res["counts"], steps=res["steps"],
                summary=summaries, stats=run_stats,
                final_stats=res.get("final_stats"), reward_score=res.get("reward_score"),
                policy_score=_policy(res) if scores else None)


def _to_host(tree):
  """Fetches per-device arrays; across hosts (jax.distributed), every process
  gathers the whole pool's output."""
  if all(x.is_fully_addressable for x in jax.tree.leaves(tree)):
    return jax.device_get(tree)
  from jax.experimental import multihost_utils
  return multihost_utils.process_allgather(tree, tiled=True)


# --------------------------------------------------------------------------
# The functional core: a whole simulation inside one compiled program.


class Rollout(NamedTuple):
  """Per-trial results of `rollout` (jnp arrays), with leading axes [I, n_trials]
  (I dropped for a single instance); the axis [D] marked (D) is dropped for a
  scalar delta.

  The scores are the derivatives of the log-likelihood of each trial's stopped
  trajectory (the rewards and the rule's random choices up to tau): their
  products with a function of the trajectory, averaged, are likelihood-ratio
  estimates of its gradient (see `jbai.estimate`).
  """

  tau: jax.Array          # int [..., (D)], stopping time (max_steps at the cap)
  answer: jax.Array       # int [..., (D)], empirical top arm at stopping (-1 at the cap)
  correct: jax.Array      # bool [..., (D)], answer is the best arm
  hit_cap: jax.Array      # bool [..., (D)], reached max_steps before crossing
  counts: jax.Array       # int [..., K], counts at the end of the trial
  steps: jax.Array        # int [...], length of the trial (the largest tau)
  final_stats: Any        # float [..., K, S], sufficient statistics at the end (None: scores=False)
  reward_score: Any       # float [..., (D), K], sum_{t < tau} d/dmu_i log pi(X_t | mu_{A_t})
  policy_score: Any       # {name: float [..., (D)]}, the rule's score at tau (Rule.score)


CORE_CHUNK = 256  # steps between scattering results in `rollout` (no host in between)


@functools.lru_cache(maxsize=64)
def _rollout_program(family, rule, threshold, num_arms, n_deltas, total, n_lanes, scores):
  """The jitted whole simulation of `total` trials: the chunk of `build_chunk` run
  until every trial is written, its slots scattered into per-trial outputs; once
  every trial has started and few lanes still run, the pool moves to the next of
  `pool_sizes` (as `simulate`'s tail does)."""
  sizes = pool_sizes(n_lanes)
  chunks = [build_chunk(family, rule, threshold, num_arms, n_deltas, size, CORE_CHUNK, scores)
            for size in sizes]

  def run(config: Config) -> dict:
    pool = _initial_pool(family, rule, config, num_arms, n_deltas, n_lanes, scores)
    out = {k: jnp.zeros((total,) + v.shape[1:], v.dtype)
           for k, v in _records(pool.slots).items()}
    carry = (pool, out, jnp.zeros((), jnp.int32))
    for phase, chunk_fn in enumerate(chunks):
      smaller = sizes[phase + 1] if phase + 1 < len(sizes) else 0

      def cond(carry):
        pool, _, written = carry
        tail = (pool.next_trial >= total) & (jnp.sum(pool.lanes.index >= 0) <= smaller)
        return (written < total) & ~tail

      def body(carry):
        pool, out, written = carry
        pool = chunk_fn(pool, config, total)
        target = jnp.where(pool.slots.index >= 0, pool.slots.index, total)  # total: dropped
        out = {k: out[k].at[target].set(v, mode="drop")
               for k, v in _records(pool.slots).items()}
        return pool, out, written + pool.written

      if phase:
        carry = (_compact(carry[0], sizes[phase]),) + carry[1:]
      carry = jax.lax.while_loop(cond, body, carry)
    return carry[1]

  return jax.jit(run)


def _concrete(x) -> bool:
  return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(x))


def rollout(key: jax.Array, family, means, rule, delta, n_trials: int,
            threshold="gk16", max_steps=1_000_000, *, params: Optional[dict] = None,
            lanes: Optional[int] = None, scores: bool = True) -> Rollout:
  """Runs n_trials trials inside one compiled program: a pure function.

  The lane pool of `simulate` (same chunk program, same lane recycling) in a
  `lax.while_loop` until every trial has ended or reached the cap. For the same
  key its per-trial results are those of `simulate`. It runs under the caller's
  `jax.jit` and `jax.vmap`: over instances, over delta, over the rule's runtime
  parameters (`params`), over keys; family, rule, threshold, n_trials, lanes,
  scores and the shapes of means and delta are static, everything else is a
  runtime value.

  Args:
    key: PRNG key.
    family: a `Family` or a built-in name.
    means: [K] or [I, K] arm means (validated when concrete).
    rule: a `Rule` or a registered name.
    delta: confidence level, or a [D] vector of levels (one trajectory serves all).
    n_trials: trials per instance (static).
    threshold: a `Threshold` or a name.
    max_steps: cap on a trial's length.
    params: the rule's runtime parameters, {name: value} (e.g. {"beta": b} for a
      top-two rule, {"eps": e} for TCB): they replace the values the rule was
      built with, and may be traced (vmap, grad).
    lanes: size of the pool (static; default `default_lanes(I * n_trials)`).
    scores: record final sufficient statistics and scores (see `Rollout`).

  Returns:
    A `Rollout`.

  Example:
    >>> import jax, jax.numpy as jnp, jbai
    >>> run = jax.jit(lambda b: jbai.rollout(jax.random.key(0), "gaussian", [1.0, 0.5, 0.0],
    ...               jbai.rules.t3c(), 0.1, 64, params={"beta": b}).tau.mean())
    >>> taus = jax.vmap(run)(jnp.array([0.3, 0.5]))
  """
  family, rule, threshold = _resolve(family, rule, threshold)
  dtype = jnp.zeros(()).dtype
  if _concrete(means):
    check_means(family, means)
  if _concrete(delta):
    check_delta(delta)
  means = jnp.asarray(means, dtype)
  if means.ndim not in (1, 2):
    raise ValueError(f"means must have shape [K] or [I, K], got shape {means.shape}")
  n_trials = int(n_trials)
  if n_trials < 1:
    raise ValueError(f"n_trials must be >= 1, got {n_trials!r}")
  table = means.reshape(-1, means.shape[-1])
  n_inst, num_arms = table.shape
  deltas = jnp.atleast_1d(jnp.asarray(delta, dtype))
  rule_state = rule.init(num_arms)
  if params:
    unknown = set(params) - set(rule.runtime)
    if unknown:
      raise ValueError(f"rule {rule.name!r} has no runtime parameter {sorted(unknown)[0]!r}; "
                       f"its runtime parameters are {list(rule.runtime)}")
    rule_state = rule_state._replace(
        **{k: jnp.asarray(v, getattr(rule_state, k).dtype) for k, v in params.items()})
  config = Config(key=_raw_key(key), means=table,
                  n_trials=jnp.asarray(n_trials, jnp.int32),
                  max_steps=jnp.asarray(max_steps, jnp.int32),
                  thr_params=threshold.init(deltas, num_arms), rule_state=rule_state)
  total = n_inst * n_trials
  run = _rollout_program(family, rule.program(), threshold, num_arms, deltas.shape[0],
                         total, int(lanes or default_lanes(total)), bool(scores))
  flat = _finish(jnp, run(config), table, n_trials)
  lead = (n_inst, n_trials) if means.ndim == 2 else (n_trials,)
  out = _shaped(flat, lead, np.ndim(delta) == 0)
  return Rollout(tau=out["tau"], answer=out["answer"], correct=out["correct"],
                 hit_cap=out["hit_cap"], counts=out["counts"], steps=out["steps"],
                 final_stats=out.get("final_stats"), reward_score=out.get("reward_score"),
                 policy_score=_policy(out) if scores else None)


def default_lanes(total: int, n_devices: int = 1, platform: Optional[str] = None) -> int:
  """Lanes per device, by measurement (benchmarks/lanes.py), for devices of
  `platform` (default: JAX's default backend).

  On a CPU: enough to vectorise, few enough that the last, longest trials do not
  leave most lanes idle (about 32 trials per lane, at most 512). On an accelerator
  a step costs about the same for a few lanes as for thousands, so the pool is
  large (2 trials per lane, at most 16384): on an H200, 16,384 trials of ITCB on
  Bernoulli K = 5 ran 8.9 times as fast on 8,192 lanes as on 512, TCB on Gaussian
  K = 5 1.7 times.
  """
  per_device = -(-total // n_devices)
  if (platform or jax.default_backend()) == "cpu":
    return int(min(512, max(8, per_device // 32)))
  return int(min(16384, max(8, per_device // 2)))


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


@functools.lru_cache(maxsize=16)
def _exact_solve(family: Family, builtin: bool) -> Callable:
  """`oracle.exact_solve` at `family`, through `jbai.program_cache` for a built-in."""
  from jbai import oracle
  solve = functools.partial(oracle.exact_solve, family)
  if not builtin:
    return solve
  return program_cache.jit(solve, ("exact_solve", _static(family)),
                           lambda means: jax.tree.structure((0, 0)))


@functools.lru_cache(maxsize=256)
def _optimum(family: Family, means: tuple, dtype: str) -> tuple:
  del dtype  # a key only: the oracle computes in the default float dtype
  w, gam = _exact_solve(family, _builtin(family))(np.asarray(means))
  return tuple(float(x) for x in np.asarray(w)), float(gam)


def optimal(family: Family, means) -> tuple:
  """(w(nu), Gamma(nu)) of the exact oracle at one instance, as Python floats.

  Cached per (family, means, default float dtype): a run of many simulations of
  one instance (a sweep over beta or delta) solves the oracle once.
  """
  means = tuple(float(m) for m in np.asarray(means, float).reshape(-1))
  return _optimum(family, means, str(jnp.result_type(float)))


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
  memory_maps.relieve()  # before this trace's programs
  lanes = jax.vmap(lambda i: _start(family, rule, config, i, num_arms, 1, False))(
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
