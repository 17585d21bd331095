"""`budget`: runs to a fixed budget, with the recommendation at every checkpoint.

The fixed-budget and anytime view of a rule: every trial runs exactly T rewards,
and records the arm the rule would answer after t rewards at each checkpoint t
(`jbai.stops.budget`). From them come the probability of error P(J_t != a*) and
the simple regret E[mu* - mu_{J_t}] at each checkpoint, per instance. A trial is
the same as the trial of `jbai.simulate` with the same key, up to where that one
stops: the same rewards, the same choices; but for a rule with a `schedule`
(uniform) on a family with blocks, whose arms take their shares of T as blocks
(`jbai.core.blocks.share`): its trials are the same in every run to T only.
"""

from typing import Callable, NamedTuple, Optional

import jax
import numpy as np

from jbai import stops
from jbai.core import inputs
from jbai.core.assembly import assemble
from jbai.core.budget import check_run
from jbai.host.driver import run_pool
from jbai.host.summary import mean_ci, wilson
from jbai.problems.base import Problem
from jbai.problems.judge import judge


class BudgetResult(NamedTuple):
  """What `budget` returns, numpy arrays with leading axes [I] (dropped for a
  single instance), then [n_trials] for per-trial arrays, and [C] checkpoints.

  Attributes:
    checkpoints: [C] int, the times t_c at which the recommendation is recorded
      (the last is the budget T).
    recommendation: [..., n, C] int16 (int32 beyond 32,767 arms), the arm the rule
      answers after t_c rewards; for a question beyond the best arm, [..., n, C, K]
      bool, the answer set.
    counts: [..., n, K] the pulls of each arm after T rewards.
    error: [..., C] the fraction of trials whose recommendation is not the best
      arm (not the answer set of the question), an estimate of P(J_t != a*).
    error_ci: [..., C, 2] its Wilson 95% interval.
    regret: [..., C] the mean simple regret mu* - mu_{J_t} (a question's
      `jbai.problems.Problem.regret`: for the top m, the m best means' sum minus
      the answer's; for thresholding, the largest |mu_a - tau| of a misplaced arm).
    regret_ci: [..., C, 2] its normal 95% interval.
    means: [..., K] the instances.
    stats: run statistics (`jbai.simulate`'s).
  """

  checkpoints: np.ndarray
  recommendation: np.ndarray
  counts: np.ndarray
  error: np.ndarray
  error_ci: np.ndarray
  regret: np.ndarray
  regret_ci: np.ndarray
  means: np.ndarray
  stats: dict

  def rows(self) -> list:
    """One dict per (instance, checkpoint): t, trials, the error and the simple
    regret with their intervals (the columns of a budget study's cells)."""
    shape = (-1, len(self.checkpoints))
    error, error_ci = np.reshape(self.error, shape), np.reshape(self.error_ci, shape + (2,))
    regret, regret_ci = np.reshape(self.regret, shape), np.reshape(self.regret_ci, shape + (2,))
    n = self.recommendation.shape[-2]
    return [{"instance": i, "t": int(t), "trials": n, "error": float(error[i, c]),
             "error_ci_low": float(error_ci[i, c, 0]), "error_ci_high": float(error_ci[i, c, 1]),
             "regret": float(regret[i, c]), "regret_ci_low": float(regret_ci[i, c, 0]),
             "regret_ci_high": float(regret_ci[i, c, 1])}
            for i in range(error.shape[0]) for c, t in enumerate(self.checkpoints)]


def budget(key: jax.Array, family, means, rule, budget: int, n_trials: int,
           checkpoints=None, lanes: Optional[int] = None, chunk: int = 2048,
           progress: Optional[Callable] = None, on_chunk: Optional[Callable] = None,
           devices=None, done: Optional[dict] = None, problem=None) -> BudgetResult:
  """Runs n_trials trials of a rule to a fixed budget T, recording its
  recommendation at checkpoints up to T.

  Every trial takes exactly T rewards: no stopping rule, no delta. At each
  checkpoint t it records the arm the rule answers (`jbai.rules.Rule.recommend`:
  the empirical best arm by default, the lowest index among equal means; the best
  surviving arm for an elimination rule), from which come P(error) and the simple
  regret at t. A rule whose sampling depends on T (Successive Rejects, Sequential
  Halving) runs with this T; the others are anytime rules, whose recommendation
  at each checkpoint is what a run with that budget would answer. A trial's
  rewards and choices are those of the same trial of `jbai.simulate` with the
  same key, but for a rule with a `schedule` (uniform) on Bernoulli or Gaussian
  arms: each arm's share of T is one block, with the same law and other bits
  (docs/guide/budget.md).

  Args:
    key: PRNG key; the same key gives identical results (and, but for uniform
      on Bernoulli or Gaussian arms, the trials of `simulate` with that key).
    family: a `Family` (or a built-in name).
    means: [K] or [I, K] arm means (a unique best arm each).
    rule: a `Rule` (or a registered name) that samples without delta.
    budget: the budget T, a whole number at least K (and the rule's own minimum).
    n_trials: trials per instance.
    checkpoints: how many log-spaced checkpoints from K to T (default 20), or a
      list of times in [1, T]; T is always one.
    lanes: lanes per device, as `jbai.simulate`'s.
    chunk: steps per compiled chunk between host callbacks.
    progress: optional callback(done_trials, total_trials, lane_steps).
    on_chunk: optional callback of the finished trials' records, as
      `jbai.simulate`'s (with the per-checkpoint "answer": the recommendations).
    devices: the devices to run on, as `jbai.simulate`'s.
    done: records of finished trials to resume from (`on_chunk`'s), as
      `jbai.simulate`'s.
    problem: a question beyond the best arm (`jbai.problems.top_m(m)`,
      `above(level)`): the recommendation at t_c is its empirical answer, the
      answer of the MLEs after t_c rewards, and an error is a wrong answer set;
      the rule must sample for it (`uniform`, `apt`, `ebtc-top-m`, ...). For
      `eps_good(eps)` the recommendation is the rule's, as for the best arm, and
      an error is an arm whose mean is below the largest by more than eps.

  Returns:
    A `BudgetResult`.

  Raises:
    ValueError: naming the bad value: a budget below K or the rule's minimum, a
      checkpoint beyond the budget, a rule whose sampling needs delta.

  Example:
    >>> import jax, jbai
    >>> res = jbai.budget(jax.random.key(0), "bernoulli", [0.5, 0.4, 0.3], "uniform",
    ...                   budget=300, n_trials=100, checkpoints=[30, 100])
    >>> res.checkpoints.tolist(), res.error.shape
    ([30, 100, 300], (3,))
  """
  inputs.refuse_traced("jbai.budget", "jbai.rollout", means=means, key=key)
  inputs.check_key(key)
  family, rule, stop, problem = assemble(family, rule, problem=problem, budget=budget)
  means_np = inputs.check_table(family, means, problem=stop.problem)
  table = means_np.reshape(-1, means_np.shape[-1])
  n_inst, num_arms = table.shape
  horizon, times = check_run(family, rule, budget, checkpoints, num_arms, stop.problem)
  n_trials = inputs.check_trials(n_trials)
  inputs.check_lanes(lanes)
  inputs.check_count("chunk", chunk, 1)
  inputs.check_total("jbai.budget", n_inst * n_trials,
                     inputs.trial_bytes(num_arms, len(times), False))
  check_done(done, n_inst * n_trials)
  state = stops.with_budget(rule.init(num_arms), horizon)
  out, stats = run_pool(key, family, rule, stop, table, n_trials, horizon,
                        stop.init(times, num_arms), state, len(times), lanes, chunk, devices,
                        None, done, False, progress, on_chunk)
  stats["budget"] = horizon
  return _result(table, means_np.ndim == 2, n_trials, times, out, stats, problem)


def check_done(done, n_all: int) -> None:
  """`done` None, or the records that `on_chunk` hands out: a dict with the
  trials' "index" (whole numbers in [0, I n)) and records of as many trials.

  Raises:
    TypeError: for anything else than a dict with "index".
    ValueError: for an index out of range or records of other lengths.
  """
  if done is None:
    return
  if not isinstance(done, dict) or "index" not in done:
    raise TypeError(f"done must be None or the records of finished trials that on_chunk "
                    f"hands out (a dict with 'index'), got {inputs.shown(done)}")
  index = np.asarray(done["index"])
  if index.ndim != 1 or (index.size and not np.issubdtype(index.dtype, np.integer)):
    raise TypeError(f"done['index'] must be a 1-d list of trial indices, got "
                    f"{inputs.shown(done['index'])}")
  if index.size and not (0 <= index.min() and index.max() < n_all):
    raise ValueError(f"done['index'] must be trial indices in [0, {n_all}), got "
                     f"{int(index.min())} .. {int(index.max())}")
  for name, value in done.items():
    if len(np.asarray(value)) != index.size:
      raise ValueError(f"done[{name!r}] holds {len(np.asarray(value))} trials, "
                       f"done['index'] {index.size}")


def _result(table: np.ndarray, batch: bool, n_trials: int, times: np.ndarray, out: dict,
            stats: dict, problem: Problem) -> BudgetResult:
  """The result from the raw records (answer [I n, C]: the recommendations; [I n,
  C, K] masks for a problem's answer sets). A recommended arm is wrong where it is
  not the best arm, or, for `eps_good(eps)`, where it is not eps-good."""
  n_inst, num_arms = table.shape
  answer = np.asarray(out["answer"]).reshape((n_inst, n_trials, len(times), -1))
  if problem.arm:
    answer = answer[..., 0]
    rec = answer.astype(np.int16 if num_arms <= np.iinfo(np.int16).max else np.int32)
  else:
    rec = answer
  flat = answer.reshape((n_inst, -1) + answer.shape[3:])  # [I, n C] (, K)
  correct, regret = judge(np, problem, table, flat)
  wrong, regret = ~correct.reshape(answer.shape[:3]), regret.reshape(answer.shape[:3])
  error = wrong.mean(axis=1)
  error_ci = np.array([[wilson(int(k), n_trials) for k in row] for row in wrong.sum(axis=1)])
  pairs = [[mean_ci(regret[i, :, c]) for c in range(len(times))] for i in range(n_inst)]
  regret_mean = np.array([[m for m, _ in row] for row in pairs])
  half = np.array([[h for _, h in row] for row in pairs])
  regret_ci = np.stack([regret_mean - half, regret_mean + half], axis=-1)
  counts = np.asarray(out["counts"]).reshape(n_inst, n_trials, num_arms)
  lead = (lambda x: x) if batch else (lambda x: x[0])
  return BudgetResult(checkpoints=times, recommendation=lead(rec), counts=lead(counts),
                      error=lead(error), error_ci=lead(error_ci), regret=lead(regret_mean),
                      regret_ci=lead(regret_ci), means=lead(table), stats=stats)


__all__ = ["BudgetResult", "budget"]
