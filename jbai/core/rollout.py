"""`rollout`: a whole simulation as one pure, compiled function.

The lane pool of `jbai.core.pool` runs in a `lax.while_loop` until every trial
has ended or reached the cap, its written slots scattered into per-trial
outputs. It runs under the caller's `jax.jit`, `jax.vmap` and `jax.grad` (with
`jbai.estimate`): the family, rule, threshold, n_trials, lanes and the shapes are
static; the means, delta, max_steps, a run's budget T and the rule's runtime
parameters are runtime values.
"""

import functools
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import checks as checks_lib
from jbai import stops
from jbai.core import budget as budget_lib, guard, inputs, pool as pool_lib, records
from jbai.core.assembly import assemble
from jbai.eps_transport import check_slack
from jbai.stops.eps_good import RULE_EPS
from jbai.core.lane import Config
from jbai.state import count_dtype

CORE_CHUNK = 256  # steps between scattering results (no host in between)


class Rollout(NamedTuple):
  """Per-trial results, with leading axes [I, n_trials] (I dropped for a single
  instance); the axis marked (D) is dropped for a scalar delta.

  The scores are the derivatives of the log-likelihood of each trial's stopped
  trajectory (the rewards and the rule's random choices up to tau): their
  products with a function of the trajectory, averaged, are likelihood-ratio
  estimates of its gradient (see `jbai.estimate`).
  """

  tau: Any            # int [..., (D)], stopping time (max_steps at the cap)
  answer: Any         # int [..., (D)], empirical top arm at stopping (-1 at the cap)
  correct: Any        # bool [..., (D)], answer is the best arm
  hit_cap: Any        # bool [..., (D)], reached max_steps before crossing
  counts: Any         # int [..., K], counts at the end of the trial
  steps: Any          # int [...], length of the trial (the largest tau)
  final_stats: Any = None   # float [..., K, S], sufficient statistics at the end (scores only)
  reward_score: Any = None  # float [..., (D), K], sum_{t < tau} d/dmu_i log pi(X_t | mu_{A_t})
  policy_score: Any = None  # {name: float [..., (D), *P]}, the rule's score at tau
  #   (Rule.score), P the parameter's shape ([] for beta; [K] for a static design's logits)
  causal_score: Any = None  # float [..., (D), K], sum_{t < tau} S_t (S_t: score after t steps)
  score_cv: Any = None      # float [..., (D), C, K], the control variates (lane.py, N_CONTROLS)
  causal_policy_score: Any = None  # {name: float [..., (D)]}, sum_{t < tau} of the rule's score
  policy_score_cv: Any = None      # {name: float [..., (D), C]}, its control variates


def from_records(flat: dict, lead: tuple, scalar_delta: bool, scores: bool) -> Rollout:
  """A `Rollout` from flat per-trial outputs (`records.finish`)."""
  out = records.shaped(flat, lead, scalar_delta)
  return Rollout(tau=out["tau"], answer=out["answer"], correct=out["correct"],
                 hit_cap=out["hit_cap"], counts=out["counts"], steps=out["steps"],
                 final_stats=out.get("final_stats"), reward_score=out.get("reward_score"),
                 policy_score=records.policy_scores(out) if scores else None,
                 causal_score=out.get("causal_score"), score_cv=out.get("score_cv"),
                 causal_policy_score=(records.policy_scores(out, "causal_policy_score.")
                                      if scores else None),
                 policy_score_cv=(records.policy_scores(out, "policy_score_cv.")
                                  if scores else None))


@functools.lru_cache(maxsize=64)
def _program(family, rule, threshold, num_arms, n_deltas, total, n_lanes, scores, unroll):
  """The jitted whole simulation of `total` trials: the chunk of `build_chunk` run
  until every trial is written, its slots scattered into per-trial outputs; once
  every trial has started and few lanes still run, the pool moves to the next of
  `pool_sizes` (as `simulate`'s tail does)."""
  sizes = pool_lib.pool_sizes(n_lanes)
  chunks = [pool_lib.build_chunk(family, rule, threshold, num_arms, n_deltas, size,
                                 CORE_CHUNK, scores, unroll) for size in sizes]

  def run(config: Config) -> dict:
    pool = pool_lib.initial_pool(family, rule, config, num_arms, n_deltas, n_lanes, scores,
                                 threshold)
    out = {k: jnp.zeros((total,) + v.shape[1:], v.dtype)
           for k, v in pool_lib.records(pool.slots).items()}
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
               for k, v in pool_lib.records(pool.slots).items()}
        return pool, out, written + pool.written

      if phase:
        carry = (pool_lib.compact(carry[0], sizes[phase]),) + carry[1:]
      carry = jax.lax.while_loop(cond, body, carry)
    return carry[1]

  return jax.jit(run)


def rollout(key: jax.Array, family, means, rule, delta=None, n_trials: int = None,
            threshold=None, max_steps=None, *, params: Optional[dict] = None,
            lanes: Optional[int] = None, scores: bool = True,
            unroll: Optional[int] = None, eps_good: Optional[float] = None,
            checks: bool = False, budget: Optional[int] = None,
            checkpoints=None, problem=None) -> Rollout:
  """Runs n_trials trials inside one compiled program: a pure function.

  The lane pool of `simulate` (same chunk program, same lane recycling) in a
  `lax.while_loop` until every trial has ended or reached the cap. For the same
  key its per-trial results are those of `simulate`. It runs under the caller's
  `jax.jit` and `jax.vmap`: over instances, over delta, over the rule's runtime
  parameters (`params`), over keys; family, rule, threshold, n_trials, lanes,
  scores and the shapes of means and delta are static, everything else is a
  runtime value. Concrete values are checked (`jbai.core.inputs`: ValueError or
  TypeError naming the value); traced ones pass through unchecked.

  Args:
    key: PRNG key.
    family: a `Family` or a built-in name.
    means: [K] or [I, K] arm means (validated when concrete).
    rule: a `Rule` or a registered name.
    delta: confidence level, or a [D] vector of levels (one trajectory serves all); None
      (or left out, with n_trials by name) with `budget`.
    n_trials: trials per instance (static; required).
    threshold: a `Threshold` or a name, or a `jbai.stops.Stop`; None: the rule's
      own stop, else the GLLR with gk16 (a rule whose sampling depends on delta
      takes one level: see `jbai.stops.base`).
    max_steps: cap on a trial's rewards, a whole number in [1, 2^31 - 2] (in [1,
      2^53] with JAX's x64 mode, whose counts are int64), checked when concrete;
      None: the rule's default (`jbai.core.inputs.default_max_steps`: 10^6, or a
      block rule's own without scores).
    params: the rule's runtime parameters, {name: value} (e.g. {"beta": b} for a
      top-two rule, {"eps": e} for TCB): they replace the values the rule was
      built with, and may be traced (vmap, grad).
    lanes: size of the pool (static; default `default_lanes(I * n_trials)`; at
      least two: `jbai.core.pool.width`).
    scores: record final sufficient statistics and scores (see `Rollout`).
    unroll: steps per iteration of the pool's loop (static; a divisor or a
      multiple of `pool.REFILL_EVERY`; default `pool.default_unroll()`). Results
      do not depend on it.
    eps_good: the alias of problem=eps_good(eps), as in `jbai.simulate`.
    checks: check traced values too (`jbai.checks`, with
      `jax.experimental.checkify`): NaN or infinite means, means outside Theta, a
      tie for the best arm, delta outside (0, 1), a runtime parameter outside its
      domain, and a user's rule's arm out of range on every step. Under the
      caller's `jax.jit`, functionalise with `checkify.checkify` and call
      `err.throw()` outside. Static; off, it costs nothing.
    budget: run every trial to exactly this many rewards T, with no stop (delta,
      threshold, max_steps and eps_good None), and record at each checkpoint the
      arm the rule recommends (`jbai.budget`'s run, as a pure function): then the
      (D) axis holds the checkpoints, tau is t_c, answer the recommendation after
      t_c rewards and correct whether it is the best arm; the scores are at t_c.
      A whole number at least K and the rule's own minimum; the rule samples
      without delta. T is a runtime value of the compiled program, as in
      `jbai.budget`: it may be traced (an integer scalar under the caller's
      `jax.jit` or `jax.vmap`, so that a new T reuses the program), with
      checkpoints None; a traced T is not checked (see `jbai.core.inputs`).
    checkpoints: with `budget`, a list of times in [1, T] (the (D) axis, T last)
      or a count of log-spaced ones (`jbai.core.budget.checkpoint_times`); None:
      T alone, and no (D) axis.
    problem: the question (`jbai.problems`; None: the best arm), static, as in
      `jbai.simulate` (the run is put together by `jbai.core.assembly`). With
      `budget`, a set's answer at each checkpoint is the problem's empirical
      answer; an eps-good arm the rule's recommendation.

  Returns:
    A `Rollout` of jax arrays.

  Example:
    >>> import jax, jax.numpy as jnp, jbai
    >>> run = jax.jit(lambda b: jbai.rollout(jax.random.key(0), "gaussian", [1.0, 0.5, 0.0],
    ...               jbai.rules.t3c(), 0.1, 64, params={"beta": b}).tau.mean())
    >>> taus = jax.vmap(run)(jnp.array([0.3, 0.5]))
  """
  key = inputs.check_key(key)
  # No silent zero derivative of tau, answer or counts (jbai.core.guard).
  means, delta, params = guard.no_pathwise("jbai.rollout", means, delta, params)
  if budget is None and checkpoints is not None:
    raise ValueError("checkpoints are the times of a run to a budget: give budget")
  plan = assemble(family, rule, threshold, problem, eps_good=eps_good, budget=budget,
                  delta=delta, max_steps=max_steps)
  family, rule, threshold = plan.family, plan.rule, plan.stop
  dtype = jnp.zeros(()).dtype
  means = _checked_means(plan, means, dtype)
  n_trials = inputs.check_trials(n_trials)
  lanes = inputs.check_lanes(lanes)
  table = means.reshape(-1, means.shape[-1])
  n_inst, num_arms = table.shape
  rule_state = inputs.initial_rule_state(rule, num_arms, params)
  if budget is not None:
    levels = _checkpoint_levels(family, rule, threshold, rule_state, budget, checkpoints,
                                num_arms)
  else:
    levels = _delta_levels(rule, threshold, rule_state, delta, max_steps, scores, num_arms,
                           dtype)
  max_steps, n_deltas, thr_params, rule_state, scalar_levels = levels
  max_steps = inputs.check_max_steps(max_steps)
  inputs.check_total("jbai.rollout", n_inst * n_trials,
                     inputs.trial_bytes(num_arms, n_deltas, bool(scores)))
  config = Config(key=inputs.raw_key(key), means=table,
                  n_trials=jnp.asarray(n_trials, jnp.int32),
                  max_steps=jnp.asarray(max_steps, count_dtype()),
                  thr_params=thr_params, rule_state=rule_state)
  total = n_inst * n_trials
  unroll = pool_lib.default_unroll() if unroll is None else unroll
  pool_lib.check_unroll(unroll)
  if checks:
    _check_traced(family, table, delta, params, dtype)
  run = _program(family, rule.program(), stops.program_of(threshold), num_arms, n_deltas, total,
                 pool_lib.width(lanes or pool_lib.default_lanes(total)), bool(scores), unroll)
  out = run(config)
  if checks and not inputs.builtin_rule(rule):
    checks_lib.run_checked(functools.partial(checks_lib.check_arms, rule.name),
                           out["counts"], out["steps"])
  flat = records.finish(jnp, out, table, n_trials, plan.problem,
                        _runtime_eps(family, threshold, params, dtype))
  lead = (n_inst, n_trials) if means.ndim == 2 else (n_trials,)
  return from_records(flat, lead, scalar_levels, scores)


def _checked_means(plan, means, dtype) -> jax.Array:
  """The means [K] or [I, K] in the run's dtype, checked where concrete (each
  instance identifiable in `dtype`: `inputs.check_table`; the rule's arms)."""
  if inputs.concrete(means):
    inputs.check_table(plan.family, means, dtype, getattr(plan.stop, "problem", None))
    inputs.check_rule_arms(plan.family, plan.rule, np.asarray(means))
  means = jnp.asarray(means, dtype)
  if means.ndim not in (1, 2):
    raise ValueError(f"means must have shape [K] or [I, K], got shape {means.shape}")
  return means


def _delta_levels(rule, threshold, rule_state, delta, max_steps, scores, num_arms, dtype):
  """(max_steps, D, the threshold's params, the rule's state, whether delta is a
  scalar) of a run that stops at each delta."""
  if max_steps is None:
    max_steps = inputs.default_max_steps(rule, blocks=not scores)
  if inputs.concrete(delta):
    # log(1/delta) carried where delta is below the dtype's range (inputs.threshold_params).
    n_deltas = len(inputs.check_delta(delta))
    thr_params = inputs.threshold_params(threshold, delta, num_arms, dtype)
    log_inv = inputs.log_inv_delta(delta)
  else:  # traced: see inputs' docstring
    deltas = jnp.atleast_1d(jnp.asarray(delta, dtype))
    n_deltas, thr_params = deltas.shape[0], threshold.init(deltas, num_arms)
    log_inv = -jnp.log(deltas)
  rule_state = stops.with_delta(rule.name, rule_state, log_inv)
  return max_steps, n_deltas, thr_params, rule_state, np.ndim(delta) == 0


def _checkpoint_levels(family, rule, stop, rule_state, budget, checkpoints, num_arms):
  """The same for a run to a budget: max_steps = T, and a level per checkpoint
  (T alone, and no level axis, without checkpoints); the rule's state holds T.
  A traced T (the caller's jit or vmap) runs as a runtime value with no
  checkpoints but T (`budget_lib.traced_budget`)."""
  if not inputs.concrete(budget):
    budget_lib.check_rule(family, rule, num_arms, stop.problem)
    if hasattr(rule_state, "with_budget"):  # tables derived from T on the host
      raise TypeError(f"rule {rule.name!r} computes its phases from the budget on the host "
                      "(exact in float64): give a concrete budget, not a traced one")
    horizon = budget_lib.traced_budget(budget, checkpoints)
    return (horizon, 1, stop.init(horizon.reshape(1), num_arms),
            stops.with_budget(rule_state, horizon), True)
  horizon, times = budget_lib.check_run(
      family, rule, budget, [budget] if checkpoints is None else checkpoints, num_arms,
      stop.problem)
  return (horizon, len(times), stop.init(times, num_arms),
          stops.with_budget(rule_state, horizon), checkpoints is None)


def _runtime_eps(family, threshold, params, dtype):
  """The slack an eps-good answer is judged with where the stop reads it from the
  rule's state (EB-TC_eps): the run's `eps_good` param (below Theta's width where
  concrete; possibly traced); None: the question's own (`jbai.problems.judge`)."""
  if RULE_EPS in (params or {}) and "eps" in getattr(threshold, "runtime", ()):
    eps = params[RULE_EPS]
    if inputs.concrete(eps):
      check_slack(float(eps), family)
    return jnp.asarray(eps, dtype)
  return None


def _check_traced(family, table, delta, params, dtype) -> None:
  """The checks of `checks=True` on the values that are traced (concrete ones
  were checked at the boundary), handed on with `checkify.check_error`."""
  traced = {"table": table, "delta": delta}
  traced = {k: v for k, v in traced.items() if not inputs.concrete(v)}
  traced_params = {k: v for k, v in (params or {}).items() if not inputs.concrete(v)}
  if not (traced or traced_params):
    return

  def check(traced, traced_params):
    if "table" in traced:
      checks_lib.check_means(family, traced["table"])
    if "delta" in traced:
      checks_lib.check_delta(jnp.asarray(traced["delta"], dtype))
    checks_lib.check_params(traced_params, inputs.RUNTIME_DOMAINS)

  checks_lib.run_checked(check, traced, traced_params)
