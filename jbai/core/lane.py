"""One lane of the simulation: a trial's state and its step.

A trial is a pure function of its PRNG key: trial number n (counting instances
first: n = instance * n_trials + j) uses key fold_in(key, n); its step t uses
fold_in(trial_key, 2t) for the rule, and the n-th reward of arm a (n from 0)
fold_in(fold_in(trial_key, 2a + 1), n) (keys wrapped with
`jbai.random.prng.THREEFRY`, bit-identical to jax.random's default threefry;
with 64-bit counts, 2t and n from 2^32 on enter as the hash's high counter
word, where jax.random.fold_in would wrap them: `fold_in_count`).
A block of pulls (below) of arm a whose first reward is the n-th draws its
rewards' summed statistics from that reward's key, and the split of one of its
parts [lo, hi) at mid from the key of the reward at mid, always inside the block
(`jbai.core.blocks.prefix`): no key serves twice in a trial.
Each arm has its own stream of rewards, the "stack of rewards" of bandit theory:
two runs with the same key see the same n-th reward of an arm whatever order
they pull the arms in, so their common random numbers survive a different
choice (a flipped top-two coin, another rule), which keeps finite differences
and comparisons between rules tight.

Each step of a running lane, with the statistics of the t rewards so far:
  1. stopping (the paper's eq. (stop)): top = argmax of the projected sample
     means (lowest index among ties), Lambda_t(top, i) = transport cost with the
     counts as weights and the MLEs as means (the GLLR), ch = argmin_i
     Lambda_t(top, i), and every delta whose threshold Lambda_t(top, ch) crosses
     for the first time records tau = t and answer = top (with a stopping rule
     of `jbai.stops` in the threshold's place, its test decides instead);
  2. the trial ends when every delta has crossed or t reaches max_steps (the
     cap: such a trial is reported in `hit_cap`, never dropped);
  3. otherwise the rule selects an arm, the family samples a reward, and the
     statistics are updated.

Blocks of pulls. For a rule with `pulls` on a family that draws a block's
statistics and splits them (`jbai.core.blocks`), the rule's choice starts a
block of L = clip(pulls, 1, max_steps - t) rewards of its arm (never past the
cap), whose total is drawn at once (`Family.sample_block`) and kept in the lane;
while it lasts the rule is not consulted. A step takes the rest of the block, or
up to the next time the stop must see (a budget run's next checkpoint: `until`),
or with scores one reward, and the arm's statistics become those of the block's
first q rewards, read off its total by halving splits under the family's
conditional law (`jbai.core.blocks.prefix`: a hypergeometric split of a binomial
sum, a Brownian bridge of a Gaussian one). So the statistics after any q rewards
of a block are a function of the trial's key alone, the same bits whoever reads
them: checkpoints, chunks and scores leave a trial's rewards, choices and answers
as they are (issue 79). The rewards so read are iid with the arm's law. In a run
with scores a stop without `until` (the GLLR's) is consulted at a block's end
only, where the same run without scores sees it. A rule with a `schedule`
(uniform) takes, in a run to a budget, its arm's share of the next checkpoint
from the arm's share of the budget, one block (`jbai.core.blocks.share`).

With scores, each lane also records the likelihood-ratio scores of its stopped
trajectory (`Scores`), from which `jbai.estimate` builds gradients: the score
S_tau, and for the causal estimator of d E[tau] the sum of the running scores
sum_{t < tau} S_t and the control variates sum_{s < tau} s_s phi_k(state_s)
(`features`), where s_s = S_{s+1} - S_s is the score of step s's choice and reward.
Inside a block a step's reward is the difference of two prefixes of the block: its
rewards' joint law is the iid law, so these scores are those of the same trial.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jbai import ties
from jbai.core import blocks as blocks_lib
from jbai.core.blocks import Block
from jbai.families.base import Family, draw
from jbai.problems.base import statistic
from jbai.problems.best_arm import best_arm
from jbai.random import prng
from jbai.rules.base import Rule
from jbai.state import ArmStats, count_dtype, empty_stats, observe, observe_piece
from jbai.stops.base import Stop


class Scores(NamedTuple):
  """What a trial records for its likelihood-ratio gradients.

  The score of a stopped trajectory with respect to a parameter is the derivative
  of its log-likelihood: for the means, sum_{t < tau} d/dmu log pi(X_t | mu_{A_t}),
  one entry per arm; for a rule's runtime parameter, the rule's own score of its
  random choices (`Rule.score`). Each is recorded at every delta's stopping time.
  """

  running: Any        # [K] float, reward score so far (() when the family has `score`)
  reward: jax.Array   # [D, K] float, reward score at each delta's stopping time
  policy: Any         # {name: [D, *P] float}, the rule's score at each stopping time
  #                     (P: the parameter's shape, () for a scalar such as beta)
  # The causal estimator (jbai.core.estimators): with S_t the score after t steps and
  # s_t = S_{t+1} - S_t the score of step t, each delta records at its stopping time
  # tau the causal score sum_{t < tau} S_t = sum_{s < tau} s_s (tau - s - 1) and the
  # control variates sum_{s < tau} s_s phi_k(state_s), k < F (see `features`).
  causal_reward: Any = ()  # [D, K] float, sum_{t < tau} S_t (reward part)
  causal_policy: Any = ()  # {name: [D, *P] float}, the same for the rule's score
  # then the future-noise control variates sum_{s < tau} S_s w_s psi_k(state_s, A_s)
  # (`_record_scores`): C = N_CONTROLS columns in all. The features do not depend
  # on delta, so the running sums have no delta axis; each delta records them at
  # its stopping time.
  cv_reward: Any = ()      # [D, C, K] float, sum_{s < tau} s_s phi_k(state_s), then the above
  cv_policy: Any = ()      # {name: [D, C, *P] float}
  sum_reward: Any = ()     # [K] float, sum_{u < t} S_u so far
  sum_policy: Any = ()     # {name: [*P] float}
  mix_reward: Any = ()     # [F, K] float, sum_{u < t} S_u (phi_{u-1} - phi_u) so far
  mix_policy: Any = ()     # {name: [F, *P] float}
  phi_prev: Any = ()       # [F] float, the features of the previous step
  fut_reward: Any = ()     # [3F, K] float, sum_{s < t} S_s w_s psi(state_s, A_s) so far
  fut_policy: Any = ()     # {name: [3F, *P] float}
  prev_reward: Any = ()    # [K] float, S_{t-1}
  prev_policy: Any = ()    # {name: [*P] float}, the rule's score after t - 1 steps


class Lane(NamedTuple):
  """One lane of the pool, running one trial (or idle)."""

  stats: ArmStats     # statistics of the trial's rewards
  rule_state: Any     # the rule's state
  key: jax.Array      # [2] uint32, the trial's key
  index: jax.Array    # [] int32, trial number, -1 when idle
  means: jax.Array    # [K] float, the trial's instance
  tau: jax.Array      # [D] count_dtype(), first crossing time per delta (0: none yet)
  answer: jax.Array   # [D] int32, answer at that crossing ([D, K] bool: a set of arms)
  done: jax.Array     # [] bool, trial ended, result not yet written
  scores: Any         # Scores, or () without scores
  block: Any = ()     # the block of pulls it is taking (`jbai.core.blocks.Block`), else ()


class Config(NamedTuple):
  """Runtime values of a simulation (no recompilation when they change)."""

  key: jax.Array          # [2] uint32, base key
  means: jax.Array        # [I, K] float
  n_trials: jax.Array     # [] int32, trials per instance
  max_steps: jax.Array    # [] count_dtype(), cap on the rewards of a trial
  thr_params: Any         # threshold parameters (from Threshold.init)
  rule_state: Any         # every trial's initial rule state, rule.init(K)
  todo: Any = None        # [T] int32, the trial numbers to run (None: 0, 1, ..., total - 1)
  stride: Any = None      # [2] int32 (first, step): without todo, the trial numbers
                          # first + step * j, j < total (None: first 0, step 1)


def fold_in_count(key: jax.Array, n: jax.Array) -> jax.Array:
  """fold_in(key, n) for a count n >= 0 of `count_dtype()` (a typed key in and out).

  An int32 count is folded in as jax.random.fold_in(key, uint32(n)). A 64-bit
  count is hashed as the threefry counters (n >> 32, n mod 2^32): the same key
  as fold_in for n < 2^32 (fold_in hashes (0, n)), and a distinct one beyond,
  where fold_in would wrap n to 32 bits and repeat a key. No other draw hashes
  such counters under these keys: `jbai.random.prng.block_words` hashes (block,
  index) under the reward keys, never under a trial's or a stream's key.
  """
  if jnp.dtype(n.dtype).itemsize <= 4:
    return jax.random.fold_in(key, n.astype(jnp.uint32))
  n = n.astype(jnp.uint64)
  data = jax.random.key_data(key)
  words = prng.threefry2x32(data[0], data[1], (n >> 32).astype(jnp.uint32),
                            n.astype(jnp.uint32))
  return prng.wrap(jnp.stack(words))


def rule_key(key: jax.Array, t: jax.Array) -> jax.Array:
  """The key of the rule's choice at step t of a trial (raw key data in, a typed
  `jbai.random.prng.THREEFRY` key out, bit-identical to jax.random's default)."""
  return fold_in_count(prng.wrap(key), 2 * t)


def reward_key(key: jax.Array, arm: jax.Array, n: jax.Array) -> jax.Array:
  """The key of arm `arm`'s n-th reward (n from 0) in a trial:
  fold_in(fold_in(trial_key, 2 arm + 1), n), the arm's own stream of rewards."""
  stream = jax.random.fold_in(prng.wrap(key), 2 * arm.astype(jnp.uint32) + 1)
  return fold_in_count(stream, n)


def pulls_of(stats: ArmStats, arm: jax.Array) -> jax.Array:
  """[] count_dtype(), T_t(arm), read with a mask (it vectorises under vmap)."""
  return jnp.sum(jnp.where(jnp.arange(stats.counts.shape[-1]) == arm, stats.counts, 0))


BEST_ARM = best_arm()


def stopping_statistic(family: Family, stats: ArmStats):
  """(top, challenger, Lambda_t(top, challenger)) of the GLLR stopping rule: the
  best arm's GLLR through its problem (`jbai.problems.base.statistic`)."""
  top, _, ch, glr = statistic(BEST_ARM, family, stats)
  return top, ch, glr


def reward_score(family: Family, stats: ArmStats, means: jax.Array, running) -> jax.Array:
  """[K] sum over the rewards so far of d/dmu log pi(x | mu_arm), at the true means:
  the family's closed form from the sufficient statistics, else `running`."""
  if family.score is not None:
    return family.score(stats.counts, stats.stats, means).astype(means.dtype)
  return running


def policy_score(rule: Rule, state) -> dict:
  """The rule's scores of its random choices so far, {name: [] float}."""
  return {} if rule.score is None else dict(rule.score(state))


N_FEATURES = 4  # features of the state for the control variates (`features`)
N_CONTROLS = 4 * N_FEATURES  # control variates per parameter: F baselines, 3F future noise


def features(t: jax.Array, glr: jax.Array, dtype) -> jax.Array:
  """[F] features phi_k of a lane's state at step t for the state-dependent
  baselines of the causal estimator: 1, t, Lambda_t (the GLLR, which stays below
  a delta's threshold beta_t until that delta stops) and t / max(Lambda_t, 1)
  (times beta_t, the stopping time of a GLLR growing linearly in t: a guess of
  tau; the regression's coefficient per delta takes the place of beta_t, which
  varies slowly in t). A stopping rule's statistic per delta enters through the
  first delta's. Any function of the state before step t's choice gives an
  unbiased estimator; a non-finite value (before any reward) enters as 0."""
  t = jnp.asarray(t, dtype)
  glr = jnp.ravel(jnp.asarray(glr, dtype))[0]
  phi = jnp.stack([jnp.ones_like(t), t, glr, t / jnp.maximum(glr, 1.0)])
  return jnp.where(jnp.isfinite(phi), phi, 0.0)


def initial_scores(family: Family, rule: Rule, config: Config, num_arms: int,
                   n_deltas: int) -> Scores:
  dtype = config.means.dtype
  shapes = {k: jnp.shape(v) for k, v in policy_score(rule, config.rule_state).items()}
  policy = lambda *lead: {k: jnp.zeros(lead + p, dtype) for k, p in shapes.items()}
  return Scores(
      running=() if family.score is not None else jnp.zeros(num_arms, dtype),
      reward=jnp.zeros((n_deltas, num_arms), dtype),
      policy=policy(n_deltas),
      causal_reward=jnp.zeros((n_deltas, num_arms), dtype),
      causal_policy=policy(n_deltas),
      cv_reward=jnp.zeros((n_deltas, N_CONTROLS, num_arms), dtype),
      cv_policy=policy(n_deltas, N_CONTROLS),
      sum_reward=jnp.zeros(num_arms, dtype),
      sum_policy=policy(),
      mix_reward=jnp.zeros((N_FEATURES, num_arms), dtype), mix_policy=policy(N_FEATURES),
      phi_prev=jnp.zeros((N_FEATURES,), dtype),
      fut_reward=jnp.zeros((N_CONTROLS - N_FEATURES, num_arms), dtype),
      fut_policy=policy(N_CONTROLS - N_FEATURES),
      prev_reward=jnp.zeros(num_arms, dtype),
      prev_policy=policy())


def answer_prototype(threshold, num_arms: int):
  """A trial's answer before it stops: an arm, or for a stop that answers a set of
  arms (`jbai.stops.Stop.problem`), a [K] bool mask (None: an arm). A NumPy
  constant: the programs that hold it are cached, and one built under a caller's
  `jax.jit` must not keep a tracer of that trace."""
  if isinstance(threshold, Stop) and threshold.problem is not None and not threshold.problem.arm:
    return np.zeros(num_arms, bool)
  return None


def start(family: Family, rule: Rule, config: Config, index, num_arms: int,
          n_deltas: int, scores: bool, answer=None) -> Lane:
  """A lane starting trial `index` (idle if index < 0); `answer` is the stop's
  `answer_prototype` (None: the answer is an arm)."""
  instance = jnp.maximum(index, 0) // config.n_trials
  dtype = config.means.dtype
  return Lane(
      stats=empty_stats(family, num_arms, dtype),
      rule_state=config.rule_state,
      key=jax.random.key_data(
          jax.random.fold_in(prng.wrap(config.key), jnp.maximum(index, 0))),
      index=index.astype(jnp.int32),
      means=config.means[instance],
      tau=jnp.zeros(n_deltas, count_dtype()),
      answer=(jnp.zeros(n_deltas, jnp.int32) if answer is None else
              jnp.broadcast_to(answer, (n_deltas,) + answer.shape)),
      done=jnp.asarray(False),
      scores=initial_scores(family, rule, config, num_arms, n_deltas) if scores else (),
      block=(blocks_lib.empty_block(family, dtype) if blocks_lib.takes_blocks(family, rule)
             else ()))


def _keep(advance, new, old):
  """`new` where the lane advanced, else `old` (leaf by leaf)."""
  return jax.tree.map(lambda n, o: jnp.where(advance, n, o), new, old)


def _outer(a: jax.Array, v: jax.Array) -> jax.Array:
  """a [F] times a parameter's value v [*P]: [F, *P] (a * v for a scalar)."""
  return a.reshape(a.shape + (1,) * jnp.ndim(v)) * v


def _at_stop(at_stop: jax.Array, new, old):
  """`new` where each delta [D] stops now, else `old` ([D, ...])."""
  return jnp.where(at_stop.reshape(at_stop.shape + (1,) * (jnp.ndim(old) - 1)), new, old)


def _record_scores(family: Family, rule: Rule, lane: Lane, at_stop, advance, arm,
                   reward, phi) -> Scores:
  """The lane's scores after this step: each delta records them at its stopping
  time (at the cap: at the end), and, for a family without a closed-form score,
  the running reward score adds d/dmu log pi(reward | mu_arm).

  With S_t the score after the t rewards so far (`now`) and phi_t the [F]
  features of this state, the causal accumulators follow from summation by parts:
  sum_{s < tau} s_s phi_s = S_tau phi_{tau-1} + sum_{u < tau} S_u (phi_{u-1} - phi_u),
  so a step records sum_{u < t} S_u and mix_t + S_t phi_{t-1} (mix_t the running
  sum_{u < t} S_u (phi_{u-1} - phi_u)) at a stop, then, if it advances, adds S_t
  to the first and S_t (phi_{t-1} - phi_t) to mix (S_0 = 0, so phi_{-1} is moot).

  The future-noise control variates: the causal term sum_{s < tau} s_s (tau - s - 1)
  carries the noise sum_t S_t D_t, D_t the change in the expected remaining time
  that step t's random outcomes make. So the lane also accumulates
  sum_{t < tau} S_t u_t phi_t for three noises u_t of mean 0 given the state:
  w_t 1{A_t = leader} and w_t 1{A_t != leader}, w_t = d/dmu log pi(X_t | mu_{A_t})
  the score of step t's reward (a reward of the leader shortens the remaining
  time, a challenger's lengthens it), and c_t, the rule's score of step t's own
  choice (in the reward's columns summed over the rule's parameters and their
  entries, in a parameter's columns that entry's own; 0 for a deterministic rule),
  known one step later, so added then (`prev_*`). S_t and phi_t are known before
  step t's choice and reward, so each column has mean 0."""
  scores, stats = lane.scores, lane.stats
  now = reward_score(family, stats, lane.means, scores.running)
  policy_now = policy_score(rule, lane.rule_state)
  stop_dk = at_stop[:, None]
  stop_dfk = at_stop[:, None, None]
  step_phi = scores.phi_prev - phi  # [F]
  d_log_pi = jax.grad(family.log_density, argnums=1)(reward, lane.means[arm])
  w = jnp.where(jnp.isfinite(d_log_pi), d_log_pi, 0.0).astype(phi.dtype)
  lead = arm == ties.argmax(stats.mean)
  psi = jnp.concatenate([phi * jnp.where(lead, w, 0.0), phi * jnp.where(lead, 0.0, w),
                         jnp.zeros_like(phi)], axis=-1)  # [3F], this step's rewards
  # Step t-1's choice scores c (known now), per parameter and summed over all of them.
  c = {k: v - scores.prev_policy[k] for k, v in policy_now.items()}
  c_all = sum((jnp.sum(v) for v in c.values()), jnp.zeros((), phi.dtype))
  coin = jnp.concatenate([jnp.zeros_like(phi), jnp.zeros_like(phi), scores.phi_prev],
                         axis=-1)  # [3F], times the previous step's choice, S_{t-1} to come
  fut_reward = scores.fut_reward + (coin * c_all)[..., None] * scores.prev_reward
  fut_policy = {k: scores.fut_policy[k] + _outer(coin, c[k]) * scores.prev_policy[k]
                for k in policy_now}
  scores = scores._replace(
      reward=jnp.where(stop_dk, now, scores.reward),
      policy={k: _at_stop(at_stop, v, scores.policy[k]) for k, v in policy_now.items()},
      causal_reward=jnp.where(stop_dk, scores.sum_reward, scores.causal_reward),
      causal_policy={k: _at_stop(at_stop, scores.sum_policy[k], scores.causal_policy[k])
                     for k in policy_now},
      cv_reward=jnp.where(stop_dfk, jnp.concatenate(
          [scores.mix_reward + scores.phi_prev[..., None] * now, fut_reward], axis=-2),
                          scores.cv_reward),
      cv_policy={k: _at_stop(at_stop, jnp.concatenate(
          [scores.mix_policy[k] + _outer(scores.phi_prev, v), fut_policy[k]], axis=0),
                             scores.cv_policy[k]) for k, v in policy_now.items()},
      fut_reward=jnp.where(advance, fut_reward + psi[..., None] * now, scores.fut_reward),
      fut_policy={k: jnp.where(advance, fut_policy[k] + _outer(psi, v), scores.fut_policy[k])
                  for k, v in policy_now.items()},
      sum_reward=jnp.where(advance, scores.sum_reward + now, scores.sum_reward),
      sum_policy={k: jnp.where(advance, scores.sum_policy[k] + v, scores.sum_policy[k])
                  for k, v in policy_now.items()},
      mix_reward=jnp.where(advance, scores.mix_reward + step_phi[..., None] * now,
                           scores.mix_reward),
      mix_policy={k: jnp.where(advance, scores.mix_policy[k] + _outer(step_phi, v),
                               scores.mix_policy[k]) for k, v in policy_now.items()},
      phi_prev=jnp.where(advance, phi, scores.phi_prev),
      prev_reward=jnp.where(advance, now, scores.prev_reward),
      prev_policy={k: jnp.where(advance, v, scores.prev_policy[k])
                   for k, v in policy_now.items()})
  if family.score is None:
    one_hot = jnp.arange(lane.means.shape[-1]) == arm
    scores = scores._replace(running=jnp.where(
        advance & one_hot, scores.running + d_log_pi, scores.running))
  return scores


def step(family: Family, rule: Rule, threshold, config: Config, lane: Lane):
  """Advances one running lane by one step (a no-op for idle or done lanes).

  `threshold` is a GLLR `Threshold` or another stopping rule (`jbai.stops.Stop`).

  Returns:
    (lane, advanced): the new lane, and whether it took a reward.
  """
  running = (lane.index >= 0) & ~lane.done
  stats = lane.stats
  if isinstance(threshold, Stop):  # another stopping rule: stop where glr > beta too
    top, ch, glr, beta = threshold.decide(rule_key(lane.key, stats.t), config.thr_params,
                                          family, stats, lane.rule_state)
  else:
    top, ch, glr = stopping_statistic(family, stats)
    beta = threshold.value(config.thr_params, family, stats, top, ch)
  blocks = blocks_lib.takes_blocks(family, rule)
  until = (threshold.until if isinstance(threshold, Stop) and threshold.until is not None
           else None)
  pending = blocks and blocks_lib.pending(lane.block, pulls_of(stats, lane.block.arm))
  # Mid-block (a run with scores takes a reward a step), a stop without `until`
  # is consulted only where the same trial without scores would be: at a block's end.
  seen = running if until is not None or not blocks else running & ~pending
  crossed = (lane.tau == 0) & (glr > beta) & seen
  tau = jnp.where(crossed, stats.t, lane.tau)
  answer = jnp.where(crossed if lane.answer.ndim == 1 else crossed[:, None], top, lane.answer)
  ends = running & (jnp.all(tau > 0) | (stats.t >= config.max_steps))

  arm, rule_state = rule.select(rule_key(lane.key, stats.t), family, stats, lane.rule_state)
  k_reward = reward_key(lane.key, arm, pulls_of(stats, arm))
  advance = running & ~ends
  scores = lane.scores
  block = lane.block
  key_at = lambda n: reward_key(lane.key, arm, n)
  shares = blocks_lib.takes_shares(family, rule, until)
  if shares:  # a rule with a schedule: the arm's share up to the next checkpoint
    m, row = blocks_lib.share(family, rule, key_at, lane.means[arm], arm, stats.counts,
                              until(config.thr_params, stats.t), config.max_steps,
                              bool(scores), stats.stats.dtype)
  elif blocks:
    block, arm, rule_state = _next_block(family, rule, config, lane, arm, rule_state,
                                         k_reward, pending)
    # The block's next piece: one reward with scores, else up to its end or the
    # next time the stop must see (a budget run's next checkpoint).
    taken = pulls_of(stats, arm) - block.first
    m = block.length - taken
    if until is not None:
      m = jnp.minimum(m, until(config.thr_params, stats.t) - stats.t)
    m = jnp.ones_like(m) if scores else jnp.maximum(m, 1)
    row = block.base + blocks_lib.prefix(family, key_at, block, taken + m)
  if blocks or shares:
    new_stats = observe_piece(family, stats, arm, m, row)
    reward = (row - stats.stats[arm])[0]  # the reward taken, with scores
  else:
    reward = draw(family, k_reward, lane.means, arm)
    new_stats = observe(family, stats, arm, reward)
  if scores:
    at_stop = crossed | (ends & (tau == 0))
    scores = _record_scores(family, rule, lane, at_stop, advance, arm, reward,
                            features(stats.t, glr, lane.means.dtype))
  lane = lane._replace(stats=_keep(advance, new_stats, stats),
                       rule_state=_keep(advance, rule_state, lane.rule_state),
                       tau=tau, answer=answer, done=lane.done | ends, scores=scores,
                       block=_keep(advance, block, lane.block))
  return lane, advance


def _next_block(family: Family, rule: Rule, config: Config, lane: Lane, arm, rule_state,
                k_reward, pending):
  """(block, arm, rule_state) of this step: the pending block, its arm and the
  rule's state as they were (the rule chose once, at the block's start), else a
  new block of the arm selected now, of clip(pulls, 1, max_steps - t) rewards
  (never cut by a checkpoint) whose total is drawn under the key of its first
  reward (`Family.sample_block`)."""
  stats = lane.stats
  length = jnp.clip(rule.pulls(family, stats, rule_state, arm), 1,
                    jnp.maximum(config.max_steps - stats.t, 1)).astype(stats.t.dtype)
  fresh = Block(arm=jnp.asarray(arm, jnp.int32), first=pulls_of(stats, arm), length=length,
                total=family.sample_block(k_reward, lane.means[arm], length).astype(
                    stats.stats.dtype),
                base=stats.stats[arm])
  block = _keep(pending, lane.block, fresh)
  return (block, block.arm, _keep(pending, lane.rule_state, rule_state))
