"""One lane of the simulation: a trial's state and its step.

A trial is a pure function of its PRNG key: trial number n (counting instances
first: n = instance * n_trials + j) uses key fold_in(key, n), and its step t uses
fold_in(trial_key, 2t) for the rule and fold_in(trial_key, 2t + 1) for the reward
(keys wrapped with `jbai.random.prng.THREEFRY`, bit-identical to jax.random's
default threefry).

Each step of a running lane, with the statistics of the t rewards so far:
  1. stopping (the paper's eq. (stop)): top = argmax of the projected sample
     means (lowest index among ties), Lambda_t(top, i) = transport cost with the
     counts as weights and the MLEs as means (the GLLR), ch = argmin_i
     Lambda_t(top, i), and every delta whose threshold Lambda_t(top, ch) crosses
     for the first time records tau = t and answer = top;
  2. the trial ends when every delta has crossed or t reaches max_steps (the
     cap: such a trial is reported in `hit_cap`, never dropped);
  3. otherwise the rule selects an arm, the family samples a reward, and the
     statistics are updated.

With scores, each lane also records the likelihood-ratio scores of its stopped
trajectory (`Scores`), from which `jbai.estimate` builds gradients.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jbai.families.base import Family
from jbai.random import prng
from jbai.rules.base import Rule
from jbai.state import ArmStats, empty_stats, observe
from jbai.transport import pair_costs


class Scores(NamedTuple):
  """What a trial records for its likelihood-ratio gradients.

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
  in, typed `jbai.random.prng.THREEFRY` keys out, bit-identical to jax.random's
  default). Two fold_ins (two threefry blocks) rather than fold_in then split."""
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


def policy_score(rule: Rule, state) -> dict:
  """The rule's scores of its random choices so far, {name: [] float}."""
  return {} if rule.score is None else dict(rule.score(state))


def initial_scores(family: Family, rule: Rule, config: Config, num_arms: int,
                   n_deltas: int) -> Scores:
  dtype = config.means.dtype
  zeros = jnp.zeros((n_deltas,), dtype)
  return Scores(
      running=() if family.score is not None else jnp.zeros(num_arms, dtype),
      reward=jnp.zeros((n_deltas, num_arms), dtype),
      policy={k: zeros for k in policy_score(rule, config.rule_state)})


def start(family: Family, rule: Rule, config: Config, index, num_arms: int,
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
      scores=initial_scores(family, rule, config, num_arms, n_deltas) if scores else ())


def _keep(advance, new, old):
  """`new` where the lane advanced, else `old` (leaf by leaf)."""
  return jax.tree.map(lambda n, o: jnp.where(advance, n, o), new, old)


def _record_scores(family: Family, rule: Rule, lane: Lane, at_stop, advance, arm,
                   reward) -> Scores:
  """The lane's scores after this step: each delta records them at its stopping
  time (at the cap: at the end), and, for a family without a closed-form score,
  the running reward score adds d/dmu log pi(reward | mu_arm)."""
  scores, stats = lane.scores, lane.stats
  now = reward_score(family, stats, lane.means, scores.running)
  scores = scores._replace(
      reward=jnp.where(at_stop[:, None], now, scores.reward),
      policy={k: jnp.where(at_stop, v, scores.policy[k])
              for k, v in policy_score(rule, lane.rule_state).items()})
  if family.score is None:
    d_log_pi = jax.grad(family.log_density, argnums=1)(reward, lane.means[arm])
    one_hot = jnp.arange(lane.means.shape[-1]) == arm
    scores = scores._replace(running=jnp.where(
        advance & one_hot, scores.running + d_log_pi, scores.running))
  return scores


def step(family: Family, rule: Rule, threshold, config: Config, lane: Lane):
  """Advances one running lane by one step (a no-op for idle or done lanes).

  Returns:
    (lane, advanced): the new lane, and whether it took a reward.
  """
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
    at_stop = crossed | (ends & (tau == 0))
    scores = _record_scores(family, rule, lane, at_stop, advance, arm, reward)
  lane = lane._replace(stats=_keep(advance, observe(family, stats, arm, reward), stats),
                       rule_state=_keep(advance, rule_state, lane.rule_state),
                       tau=tau, answer=answer, done=lane.done | ends, scores=scores)
  return lane, advance
