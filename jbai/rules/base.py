"""The sampling-rule interface and the helpers every rule shares.

A rule is a NamedTuple of two pure functions (optax's GradientTransformation
style), built by a factory that closes over the rule's hyper-parameters:

  init(num_arms) -> rule_state                      (any pytree; () if none)
  select(key, family, arm_stats, rule_state) -> (arm, rule_state)

`select` sees the statistics of the rewards so far (`jbai.state.ArmStats`) and
returns the next arm to pull (int32 scalar). It must be jit- and vmap-able and
must not depend on anything but its arguments, so that a trial is a
deterministic function of its PRNG key.

Runtime hyper-parameters. A numeric hyper-parameter that `select` reads from the
state (built by `init` on the host, with `hyper`) rather than from its closure is
a runtime value of the compiled simulation: the rule names it in `runtime`, and
`Rule.program()`, the identity under which the engine caches compiled programs,
leaves it out. Changing it (say a top-two rule's beta) then reuses the program.
A parameter that changes the program's structure (a loop bound, None against a
number) stays in the closure and in the identity.

Equality. Two rules are equal when their names, params, runtime names, `select`,
`score` and `pulls` are; functions are compared by identity (jbai.builders), and `init`
is left out. jbai's factories build `select` in a cached builder keyed on the
structural parameters only, so that, say, every beta of a top-two rule shares one
`select` and one compiled program; a user's lookalike function never does.

Policy scores. A rule whose choices are random given the history, with a law
that depends on a runtime parameter (a top-two rule's coin: leader with
probability beta), accumulates in its state the score of those choices,
sum_t d/dparam log P(choice_t), and exposes it through `score(state) ->
{name: [] float}`; `jbai.estimate` turns it into likelihood-ratio gradients. A
rule whose choices are deterministic in a parameter (TCB's eps) has no score for
it: differentiate it by finite differences with common random numbers
(`jbai.finite_difference`).

Recommendations. A rule answers an arm at every time, which a run to a budget
records at its checkpoints (`jbai.budget`): `recommend(key, family, arm_stats,
rule_state) -> arm`, by default the empirical best arm (`empirical_best`, ties
among equal sample means broken at random). `key` is the key of step t, the one
`select` gets at the same t: a recommendation breaks its ties with
`jbai.ties.tie_key(key, RECOMMEND)`, and an elimination that `recommend` replays
(Successive Rejects' rejection at the end of a phase) with the same key as
`select`, so that both reach it alike (docs/design/ties.md). An elimination rule
answers the best of the arms it keeps (Successive Rejects, Sequential Halving). A rule whose sampling
depends on the budget T (its phases are T's shares) keeps T in its state's field
`budget`, which a run to a budget sets (`jbai.stops.budget.with_budget`), and says
with `budget(K)` the smallest T it runs at; the others are anytime rules.

Blocks of pulls. A rule that pulls the arm it selects many times in a row (an
elimination phase) may say how many with `pulls(family, arm_stats, rule_state,
arm) -> int32 >= 1`, read after `select`. Where the family draws a block's
statistics in one go and splits them (`Family.sample_block`, `split_block`) the
engine then takes the whole block in one step, capped at the trial's remaining
steps, and consults the rule again after it; the trial's law is the same as pull
by pull, and the counts, t and tau count pulls. A block cut at a budget run's
checkpoint, or taken a reward a step in a run with scores, has the same rewards
(`jbai.core.lane`), so neither changes the trial. `jbai.trace` takes one reward
per step from the arms' streams (other trials). Such a rule's
cost is per block, so it may declare a default cap on a trial's rewards
(`max_steps`) that fits its sample complexity, used by runs in blocks that give
none (`jbai.core.inputs.default_max_steps`).

Schedules. A rule whose counts at every time are fixed in advance, whatever the
rewards (uniform's round robin), may give them as `schedule(arm, t, K) -> the
arm's count after t pulls` (a count of `t`'s dtype). In a run to a budget T on a
family with blocks, each arm then takes its share of T, schedule(arm, T, K), as
one block drawn under its first reward's key, read up to its share of the next
checkpoint in one step (`jbai.core.blocks.share`): about K steps a checkpoint
instead of one a reward. Such a trial has the law of the same rule's trial pull
by pull, and the same bits in every run to the same budget (whatever the
checkpoints, lanes, resumes or scores), but not the bits of `jbai.simulate`'s
trial, which draws reward by reward (docs/guide/budget.md).
"""

from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.builders import fields_equal
from jbai.families.base import Family
from jbai.state import ArmStats
from jbai.ties import argmax_random_ties, first_index


class Rule(NamedTuple):
  name: str
  init: Callable[[int], Any]
  select: Callable[[jax.Array, Family, ArmStats, Any], tuple]
  params: tuple = ()   # ((name, value), ...) for display
  runtime: tuple = ()  # names of the params that select reads from the state
  score: Optional[Callable[[Any], dict]] = None  # state -> {runtime name: policy score}
  stop: Any = None  # the rule's own stop (a jbai.stops.Stop), None: the GLLR
  pulls: Optional[Callable[..., jax.Array]] = None  # block size after select, None: 1
  max_steps: Optional[int] = None  # default cap on a trial's rewards where its pulls
  #                                  come in blocks (None: jbai.core.inputs.DEFAULT_MAX_STEPS)
  recommend: Optional[Callable[..., jax.Array]] = None  # (key, family, arm_stats, state) -> the
  #                                  arm it answers now (None: `empirical_best`)
  budget: Optional[Callable[[int], int]] = None  # a rule that samples with a budget T
  #                                  (its state's `budget`): K -> the smallest T; None: anytime
  answers: tuple = ("best-arm",)  # the questions (`jbai.problems` names) it samples for
  schedule: Optional[Callable[..., jax.Array]] = None  # (arm, t, K) -> the arm's count after
  #                                  t pulls, for a rule whose counts are fixed in advance

  def __repr__(self):
    return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params)})"

  def program(self) -> "Rule":
    """The rule without its runtime params: equal for rules that compile alike.

    Example:
      >>> from jbai import rules
      >>> rules.t3c(beta=0.3).program() == rules.t3c(beta=0.7).program()
      True
    """
    return self._replace(params=tuple((k, v) for k, v in self.params
                                      if k not in self.runtime))

  def __hash__(self):
    return hash((self.name, self.params))

  def __eq__(self, other):
    # Equal fields, select and score the same objects (jbai.builders); init is
    # left out: it makes the runtime state, data of the program.
    return isinstance(other, Rule) and fields_equal(
        (self.name, self.select, self.params, self.runtime, self.score, self.pulls,
         self.recommend, self.budget, self.schedule),
        (other.name, other.select, other.params, other.runtime, other.score, other.pulls,
         other.recommend, other.budget, other.schedule))

  def __ne__(self, other):
    return not self == other


def empirical_best(key: jax.Array, family: Family, arm_stats: ArmStats,
                   rule_state) -> jax.Array:
  """[] int32, the arm a rule answers by default at any time: the empirical best
  arm, ties among equal sample means (up to rounding, `jbai.ties.maxima`) broken
  uniformly at random with the key of step t (`jbai.ties.tie_key`, RECOMMEND), so
  that the answer does not depend on the order in which the arms are listed.
  (The GLLR stop's answer, in fixed-confidence runs, is still the lowest index.)"""
  del family, rule_state
  return ties.argmax_random_ties(ties.tie_key(key, ties.RECOMMEND), arm_stats.mean)


def recommendation(rule: "Rule"):
  """The rule's `recommend`, or `empirical_best`."""
  return rule.recommend or empirical_best


def no_state(num_arms: int):
  del num_arms
  return ()


def hyper(value) -> jax.Array:
  """A numeric hyper-parameter as a state leaf: a scalar of the default float
  dtype, the dtype of the sample means that it meets in `select`."""
  return jnp.asarray(value, jnp.result_type(float))


def least_sampled(counts: jax.Array) -> jax.Array:
  """The least-sampled arm (lowest index among ties): jnp.argmin of the integer
  counts from two plain reductions (exact for integers), which XLA:CPU runs
  several times faster than argmin's variadic one at large K."""
  return first_index(counts <= jnp.min(counts))


def under_explored(counts: jax.Array, t: jax.Array) -> jax.Array:
  """True when some arm has T_t(i) <= ceil(sqrt(t / K)) (the paper's set U_t)."""
  num_arms = counts.shape[-1]
  bound = jnp.ceil(jnp.sqrt(t / num_arms))
  return jnp.min(counts) <= bound


def leader(key: jax.Array, arm_stats: ArmStats) -> jax.Array:
  """The empirical top arm a_t^top: argmax of the projected sample means, ties
  broken uniformly at random."""
  return argmax_random_ties(key, arm_stats.mean)
