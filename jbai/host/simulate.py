"""`simulate`: the host shell over the chunk program.

Between compiled chunks of `jbai.core.pool.build_chunk` it reports progress,
hands finished trials to a callback, resumes from saved trials, shards the lanes
over devices and hosts, and moves the last, longest trials to a smaller pool:
the pool driver, `jbai.host.driver.run_pool`. Here are the checks before it and
the `Result` after it. Per trial, its results are those of `jbai.rollout` with
the same key.
"""

import inspect
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import stops
from jbai.core import inputs, records
from jbai.core.assembly import Plan, assemble
from jbai.core.rollout import Rollout, from_records
from jbai.host import summary as summary_lib
from jbai.host.driver import run_pool
from jbai.host.summary import summarize
from jbai.problems.judge import slack


@jax.tree_util.register_pytree_node_class
class Result:
  """What `simulate` returns: the per-trial arrays, and the run's summary apart.

  `trials` is a `Rollout` of numpy arrays, with leading axes [I, n_trials] (I
  dropped for a single instance) and a trailing delta axis [D] (dropped for a
  scalar delta); its fields read directly too (`result.tau` is
  `result.trials.tau`). As a pytree a Result has the arrays of `trials` as
  leaves, and `summary` and `stats` as static data, so that jax.tree.map and
  friends apply to the arrays alone.

  Attributes:
    trials: a `Rollout` (final_stats, reward_score and policy_score with
      scores=True, else None).
    summary: one summary dict (`jbai.host.summary.summarize`) per (instance, delta).
    stats: run statistics: wall and compile seconds, useful steps, lane
      utilisation, pool sizes, devices, resumed trials.
  """

  def __init__(self, trials: Rollout, summary: list, stats: dict):
    self.trials, self.summary, self.stats = trials, summary, stats

  def __getattr__(self, name):
    if name == "trials":  # not yet set (unpickling): no recursion
      raise AttributeError(name)
    return getattr(self.trials, name)

  def cells(self):
    """The summary as rows with the columns of a study's cells.csv (`jbai.study`):
    one per (instance, delta); a pandas DataFrame when pandas is importable,
    else a dict of columns."""
    return summary_lib.cells(self.summary, self.stats)

  def __repr__(self):
    shapes = ", ".join(f"{k}={getattr(v, 'shape', v)}" for k, v in self.trials._asdict().items()
                       if v is not None)
    return f"Result({shapes}; {len(self.summary)} summaries)"

  def tree_flatten(self):
    return (self.trials,), _Static(self.summary, self.stats)

  @classmethod
  def tree_unflatten(cls, static, children):
    return cls(children[0], static.summary, static.stats)


class _Static:
  """A Result's summary and stats, static data of its pytree (equal by identity)."""

  def __init__(self, summary, stats):
    self.summary, self.stats = summary, stats


def _check(key, plan: Plan, means, delta, n_trials, max_steps, lanes, chunk, scores):
  """The means [.., K] and the deltas of a run of `plan`, every value checked
  (`jbai.core.inputs`) before anything compiles: the key, the means (ties judged
  in the simulation's dtype, and Gamma(nu) > 0), delta at any magnitude, whole
  numbers where counts belong, and the memory the per-trial results will take."""
  inputs.check_key(key)
  family, rule = plan.family, plan.rule
  asked = getattr(plan.stop, "problem", None)
  means_np = inputs.check_table(family, means, problem=asked)
  levels = inputs.parse_delta(delta)
  n_trials = inputs.check_trials(n_trials)
  inputs.check_max_steps(max_steps)
  inputs.check_lanes(lanes)
  inputs.check_count("chunk", chunk, 1)
  table = means_np.reshape(-1, means_np.shape[-1])
  inputs.check_total("jbai.simulate", table.shape[0] * n_trials,
                     inputs.trial_bytes(table.shape[1], len(levels.values), bool(scores)))
  if asked is None:
    inputs.check_separable(family, table)
  inputs.check_rule_arms(family, rule, table)
  return means_np, levels



def _summaries(family, table, levels, flat, n_trials: int, problem) -> list:
  """One summary per (instance, delta); `levels` carries log(1/delta). T*, w* and
  the ratio are those of the run's question (`jbai.host.summary.question_optimum`:
  the eps oracle's for an eps-good arm, a set question's own)."""
  summaries = []
  for i in range(table.shape[0]):
    sl = slice(i * n_trials, (i + 1) * n_trials)
    optimum = summary_lib.question_optimum(problem, family, table[i])
    for d, dlt in enumerate(levels.values):
      summaries.append(summarize(family, table[i], dlt, flat["tau"][sl, d],
                                 flat["correct"][sl, d], flat["hit_cap"][sl, d],
                                 instance=i, optimum=optimum,
                                 log_inv_delta=float(levels.log_inv[d])))
  return summaries


def simulate(key: jax.Array, family, means, rule, delta, n_trials: int,
             threshold=None, max_steps: Optional[int] = None, lanes: Optional[int] = None,
             chunk: int = 2048, progress: Optional[Callable] = None,
             on_chunk: Optional[Callable] = None, devices=None,
             shrink: Optional[float] = 2.0, done: Optional[dict] = None,
             scores: bool = False, eps_good: Optional[float] = None,
             problem=None) -> Result:
  """Runs n_trials trials of a BAI algorithm on one instance or a batch of instances.

  The host shell over the chunk program that `rollout` runs inside one compiled
  loop: it reports progress, hands finished trials to `on_chunk`, resumes from
  `done`, shards the lanes over devices and hosts, and moves the last, longest
  trials to a smaller pool. Per trial, its results are those of `rollout` with
  the same key. It runs on the host: inside jax.jit, vmap or grad use `rollout`.

  Args:
    key: PRNG key; the same key gives identical results.
    family: a `Family` (or a built-in name).
    means: [K] or [I, K] arm means.
    rule: a `Rule` (or a registered name).
    delta: confidence level in (0, 1) (a number, or its text for a level below
      float64's range: "1e-400"), or a 1-d list of levels: one trajectory
      then records the first crossing of every level's threshold (the sampling
      rules do not depend on delta) and runs until the smallest level crosses.
    n_trials: trials per instance.
    threshold: a `Threshold` (or "gk16", "kk", "paper"), or another stopping rule
      (`jbai.stops.Stop`); None: the rule's own stop, else the GLLR with gk16.
      A rule whose sampling depends on delta (`jbai.stops.base`) takes one level.
    max_steps: cap on a trial's rewards; trials that reach it are reported in
      `hit_cap` (and counted as errors in the summary's error rate). At most
      2^31 - 2, or 2^53 with JAX's x64 mode (64-bit counts). None: the rule's
      default (`jbai.core.inputs.default_max_steps`: 10^6, or a block rule's
      own without scores); the run's cap is in `stats["max_steps"]`.
    lanes: lanes per device (default: see `jbai.core.pool.default_lanes`; at least
      two: `jbai.core.pool.width`).
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
    shrink: move the last, longest trials to smaller pools
      (`jbai.core.pool.pool_sizes`) once every trial has started, on one host,
      after `shrink` times `jbai.core.pool.shrink_after` lane-steps (about a
      smaller pool's compile, counted in steps: the same place in every run).
      None: never. Results do not depend on it (docs/design/float32.md).
    done: records of trials already run with the same arguments (those that
      `on_chunk` handed out, concatenated): they are not run again, and the
      result is that of an uninterrupted run.
    scores: also record each trial's final sufficient statistics and its
      likelihood-ratio scores (see `Rollout`).
    eps_good: an additive eps >= 0: stop with the eps-GLLR against `threshold`
      (a GLLR threshold; None: gk16) and count an answer as correct when it is
      eps-good, mu_answer >= max mu - eps (`jbai.stops.eps_good`). Refused
      (ValueError) with a stop other than the GLLR.
    problem: a question beyond the best arm (`jbai.problems.top_m(m)`,
      `above(level)`): stop with its GLLR against `threshold` (a GLLR threshold;
      None: gk16, `jbai.stops.answer_gllr`), answer a set of arms (`answer` holds
      [K] bool masks) and count it correct when it is the instance's; T*, w* and
      the ratio are the problem's. The rule must sample for it (`uniform`, `apt`).

  Returns:
    A `Result` (each summary's "eps_good": the eps its error rate counts against;
    with eps > 0 its "t_star", "w_star", "t_star_log" and "ratio" are those of the
    eps-good complexity T*_eps(nu), `jbai.oracle.eps_solve`).

  Example:
    >>> import jax, jbai
    >>> res = jbai.simulate(jax.random.key(0), "gaussian", [1.0, 0.0], "tcb",
    ...                     delta=0.1, n_trials=20)
    >>> res.tau.shape
    (20,)
  """
  inputs.refuse_traced("jbai.simulate", "jbai.rollout, its pure counterpart", means=means,
                       delta=delta, key=key)
  plan, means_np, levels, out, stats = _simulate(
      key, family, means, rule, delta, n_trials, threshold, max_steps, lanes, chunk, progress,
      on_chunk, devices, shrink, done, scores, eps_good, problem, share=None)
  return _result(plan, means_np, levels, int(n_trials), np.ndim(delta) == 0, scores, out,
                 stats)


def simulate_share(key: jax.Array, family, means, rule, delta, n_trials: int, *,
                   share: tuple, **kwargs) -> dict:
  """Runs one share of `simulate`'s trials: those whose index n (over instances
  x n_trials, instance-major) is r modulo s, share = (r, s), handing their
  records to `on_chunk` as they finish, as `simulate` does.

  The shares of a run, each in its own process, run its trials once: their
  records, concatenated (with `done`'s), are the `done` of a `simulate` call
  with the same arguments, which then runs nothing and returns the whole run's
  Result (a trial is a function of the key and its index). `jbai study
  --processes` runs a study this way, one process per core.

  Args:
    key: as `simulate`'s.
    family: as `simulate`'s.
    means: as `simulate`'s.
    rule: as `simulate`'s.
    delta: as `simulate`'s.
    n_trials: as `simulate`'s.
    share: (r, s), 0 <= r < s.
    **kwargs: `simulate`'s other arguments.

  Returns:
    The share's run statistics (`Result.stats`).
  """
  r, s = share
  inputs.check_count("the number of shares", s, 1)
  if not 0 <= r < s:
    raise ValueError(f"share ({r}, {s}): r must be in [0, {s})")
  inputs.refuse_traced("jbai.simulate_share", "jbai.rollout", means=means, delta=delta, key=key)
  bound = inspect.signature(simulate).bind(key, family, means, rule, delta, n_trials, **kwargs)
  bound.apply_defaults()
  return _simulate(**bound.arguments, share=(int(r), int(s)))[-1]


def _simulate(key, family, means, rule, delta, n_trials, threshold, max_steps, lanes, chunk,
              progress, on_chunk, devices, shrink, done, scores, eps_good, problem, share):
  """`simulate`'s checks and run: (the `Plan`, means, levels, the raw records, the
  stats)."""
  plan = assemble(family, rule, threshold, problem, eps_good=eps_good)
  family, rule, threshold = plan.family, plan.rule, plan.stop
  if max_steps is None:
    max_steps = inputs.default_max_steps(rule, blocks=not scores)
  means_np, levels = _check(key, plan, means, delta, n_trials, max_steps, lanes, chunk, scores)
  table = means_np.reshape(-1, means_np.shape[-1])
  out, stats = run_pool(key, family, rule, threshold, table, int(n_trials), max_steps,
                        inputs.threshold_params(threshold, levels, table.shape[1],
                                                jnp.result_type(float)),
                        stops.with_delta(rule.name, rule.init(table.shape[1]), levels.log_inv),
                        len(levels.values), lanes, chunk, devices, shrink, done, scores,
                        progress, on_chunk, share)
  return plan, means_np, levels, out, stats


def _result(plan: Plan, means_np, levels, n_trials: int, scalar_delta: bool,
            scores: bool, out: dict, stats: dict) -> Result:
  """`simulate`'s Result from the pool's raw records: the per-trial arrays and
  one summary per (instance, level), each with the eps its error counts against."""
  table = means_np.reshape(-1, means_np.shape[-1])
  eps = slack(plan.problem) if plan.problem.arm else 0.0
  flat = records.finish(np, out, table, n_trials, plan.problem)
  lead = (table.shape[0], n_trials) if means_np.ndim == 2 else (n_trials,)
  trials = from_records(flat, lead, scalar_delta, scores)
  summaries = _summaries(plan.family, table, levels, flat, n_trials, plan.problem)
  for s in summaries:  # the error rate counts answers that are not eps-good
    s["eps_good"] = eps
  return Result(trials, summaries, stats)
