"""Runs to a budget: the stop that records a rule's recommendation at checkpoints.

A run to a budget T (`jbai.budget`) is the same trial as a run that stops
(`jbai.simulate`), with another end. At every time t the engine's step
(`jbai.core.lane.step`) asks its stop whether each level has crossed, and records
the time and the answer at each level's first crossing. Here the levels are the
checkpoints t_1 < ... < t_C = T: level c crosses when t reaches t_c, and its
answer is the rule's recommendation then (`jbai.rules.base.recommendation`, the
empirical best arm by default). A trial so records the arm it would answer after
t_c rewards, for every c, and ends at T, the run's cap. Its rewards are those of
the same trial of `jbai.simulate` with the same key: the rule's choices and the
arms' reward streams depend on the trial's index and the time alone (but for a
rule with a `schedule`, uniform, on a family with blocks: each arm's share of T
is one block, read up to its share of each checkpoint, `jbai.core.blocks.share`).

The stop is `keyed`: its test gets the key of step t, and the recommendation
breaks its ties at random from it (`jbai.ties.tie_key`), as does a set answer's
(top-m: equal MLEs across the edge of the top m at random). A recommendation at
t_c so depends on the trial, t_c and the statistics then, never on which other
checkpoints the run records.

The checkpoints are runtime values (`init` hands them on as the stop's params):
one compiled program serves every budget and every list of C checkpoints. A rule
that pulls in blocks (`jbai.rules.Rule.pulls`: Successive Rejects' phases) ends
each block at the next checkpoint (`until`), so that the trial meets every one,
and a rule with a `schedule` takes each arm's share up to it.

A rule whose sampling depends on the budget (Successive Rejects, Sequential
Halving) keeps T in its state, in the field `budget` (BUDGET_FIELD), a runtime
value that the run sets (`with_budget`); it declares the smallest budget it runs
at (`jbai.rules.Rule.budget`).
"""

from typing import Any

import jax.numpy as jnp

from jbai.builders import cached
from jbai.problems.top_m import NAME as TOP_M, answer_random_ties
from jbai.state import count_dtype
from jbai.stops.base import Stop
from jbai.ties import RECOMMEND, tie_key

NAME = "budget"
BUDGET_FIELD = "budget"  # the rule-state field of a rule that samples with the budget


@cached
def budget_stop(recommend, problem=None) -> Stop:
  """The stop of a run to a budget for a rule that recommends with `recommend`
  (`jbai.rules.base.recommendation(rule)`); its levels are the checkpoints.
  With a `problem` whose answer is a set (`jbai.problems.top_m(m)`, `above(level)`),
  the recommendation is that problem's empirical answer, the answer of the MLEs
  (a [K] bool mask), and `recommend` is not read. With one whose answer is an arm
  (`eps_good(eps)`) it is the rule's recommendation, as for the best arm, and the
  run scores it for that question.

  Example:
    >>> from jbai import problems, rules, stops
    >>> stops.budget_stop(rules.base.recommendation(rules.tcb()))
    budget()
    >>> stops.budget_stop(rules.base.recommendation(rules.apt(0.5)), problems.above(0.5))
    budget(problem=above(level=0.5))
  """
  asked = problem if problem is not None and problem.name != "best-arm" else None
  sets = asked is not None and not asked.arm  # the answer is a set of arms

  def init(checkpoints, num_arms):
    del num_arms
    return jnp.asarray(checkpoints, count_dtype())

  def test(key, params, family, arm_stats, rule_state):
    t = jnp.broadcast_to(arm_stats.t, params.shape)
    if sets:
      answer = set_answer(asked, tie_key(key, RECOMMEND), arm_stats.mle)
      return answer, jnp.zeros((), jnp.int32), t, params - 1
    answer = recommend(key, family, arm_stats, rule_state).astype(jnp.int32)
    return answer, answer, t, params - 1  # crossed where t > t_c - 1: t = t_c

  def until(params, t):  # the next checkpoint: a block of pulls ends there
    return jnp.min(jnp.where(params > t, params, jnp.max(params)))

  return Stop(NAME, init, test, () if asked is None else (("problem", asked),),
              until=until, problem=asked, keyed=True)


def set_answer(asked, key, mle):
  """[K] bool the empirical answer of a question whose answer is a set: top-m's
  with its ties broken at random (`jbai.problems.top_m.answer_random_ties`), any
  other's `answer` of the MLEs (the arms above a level: no arm order enters)."""
  if asked.name == TOP_M:
    return answer_random_ties(key, mle, dict(asked.params)["m"])
  return asked.answer(mle)


def is_budget(stop) -> bool:
  """Whether `stop` is a run's budget stop."""
  return isinstance(stop, Stop) and stop.name == NAME


def takes_budget(rule_state) -> bool:
  """Whether a rule's state carries the budget (its sampling depends on it)."""
  return hasattr(rule_state, "_fields") and BUDGET_FIELD in rule_state._fields


def with_budget(rule_state, budget) -> Any:
  """The rule's state with the run's budget T set (unchanged for a rule whose
  sampling does not depend on it); a state with a `with_budget(T)` method sets it
  itself (Successive Rejects' phase lengths, computed from T on the host)."""
  if not takes_budget(rule_state):
    return rule_state
  if hasattr(rule_state, "with_budget"):  # a state that derives more from T (its own)
    return rule_state.with_budget(budget)
  old = getattr(rule_state, BUDGET_FIELD)
  return rule_state._replace(**{BUDGET_FIELD: jnp.asarray(budget, old.dtype)})
