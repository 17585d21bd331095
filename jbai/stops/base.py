"""The stopping-rule interface beside `Threshold`, and which stop suits which rule.

A GLLR threshold (`jbai.thresholds.Threshold`) stops a trial when the GLLR
Lambda_t(top, ch) crosses beta_t(delta). The confidence-bound, elimination and
lil'UCB rules of the field stop otherwise; a `Stop` is that stopping rule, a
NamedTuple of two pure functions built by a factory, like a threshold:

  init(delta, num_arms) -> params       delta: [D] levels or a `LogDelta`
  test(params, family, arm_stats, rule_state) -> (top, ch, stat, level)

`test` returns the answer `top` ([] int32, or a [K] bool mask for a stop that
answers a set of arms, `Stop.problem`), an arm `ch` it was told apart from, and
[D] floats: the trial stops for level delta_d at the first t with
stat[d] > level[d] (so that the engine's step treats a GLLR threshold and a stop
alike, `jbai.core.lane.step`). A stop may read the rule's state (the elimination
stop reads the active set). A stop that breaks ties at random (`keyed`: a run to a
budget's recommendation, a race's elimination) takes the key of step t first,
test(key, params, family, arm_stats, rule_state), the key the rule's `select` gets
at the same t (`jbai.ties.tie_key`); `Stop.decide` calls either form.

Delta in the sampling. These rules' *sampling* depends on delta (their
confidence bounds use beta(t, delta)), unlike the GLLR rules, where one
trajectory serves every delta. Such a rule keeps log(1/delta) in its state, in
the field `log_inv_delta`: a runtime value, set by the engine from the run's
single level (`with_delta`), so that one compiled program serves every delta
and a sweep over delta with the same key runs on common random numbers. A list
of several levels with such a rule is refused (`with_delta` raises): run one
level at a time.
"""

from typing import Any, Callable, NamedTuple, Optional

import jax.numpy as jnp

from jbai.builders import fields_equal

DELTA_FIELD = "log_inv_delta"  # the rule-state field of a delta-dependent rule


class Stop(NamedTuple):
  """A stopping rule: `init` once per simulation, `test` at every step.

  `rules`: the rule names it serves (None: any rule that keeps sampling every
  arm); `refusal` names one of them in its suggestion. `runtime`: the params
  that `test` reads from the rule's state, not from its closure (the eps of
  EB-TC_eps's own stop): runtime values, left out of `program()`. `until`:
  until(params, t) -> the next time after t at which the stop must see the
  trial's statistics (a run to a budget's next checkpoint), where a rule's block
  of pulls (`jbai.rules.Rule.pulls`) ends; None: any time.
  """

  name: str
  init: Callable[[Any, int], Any]
  test: Callable[..., tuple]
  params: tuple = ()
  rules: Optional[tuple] = None
  runtime: tuple = ()
  until: Optional[Callable[..., Any]] = None
  problem: Any = None  # the question it answers (a `jbai.problems.Problem` whose answer
  #                      is a set of arms: `test`'s top is then a [K] bool mask); None:
  #                      the best arm (top an arm)
  keyed: bool = False  # test takes the key of step t first (its ties broken at random)

  def decide(self, key, params, family, arm_stats, rule_state) -> tuple:
    """`test` at step t, given that step's key (`jbai.core.lane.rule_key`), which
    a `keyed` stop reads and any other ignores."""
    if self.keyed:
      return self.test(key, params, family, arm_stats, rule_state)
    return self.test(params, family, arm_stats, rule_state)

  def __repr__(self):
    return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params)})"

  def program(self) -> "Stop":
    """The stop without its runtime params: equal for stops that compile alike."""
    return self._replace(params=tuple((k, v) for k, v in self.params
                                      if k not in self.runtime))

  def __hash__(self):
    return hash((self.name, self.params))

  def __eq__(self, other):
    return isinstance(other, Stop) and fields_equal(self, other)

  def __ne__(self, other):
    return not self == other


def takes_delta(rule_state) -> bool:
  """Whether a rule's state carries log(1/delta) (its sampling depends on delta)."""
  return hasattr(rule_state, "_fields") and DELTA_FIELD in rule_state._fields


def with_delta(rule_name: str, rule_state, log_inv) -> Any:
  """The rule's state with log(1/delta) of the run's level set (a no-op for a
  rule whose sampling does not depend on delta).

  Args:
    rule_name: for the message.
    rule_state: rule.init(K).
    log_inv: [D] log(1/delta) of the run's levels (possibly traced).

  Raises:
    ValueError: for several levels with a delta-dependent rule.
  """
  if not takes_delta(rule_state):
    return rule_state
  log_inv = jnp.atleast_1d(jnp.asarray(log_inv))
  if log_inv.shape[0] != 1:
    raise ValueError(
        f"rule {rule_name!r} samples with confidence bounds that depend on delta, so "
        f"one trajectory cannot serve {log_inv.shape[0]} levels; run one delta at a "
        "time (the same key gives common random numbers across levels)")
  old = getattr(rule_state, DELTA_FIELD)
  return rule_state._replace(**{DELTA_FIELD: log_inv[0].astype(old.dtype)})


def program_of(threshold):
  """The identity under which a GLLR threshold or a stop compiles: a stop without
  its runtime params (`Stop.program`), a threshold itself."""
  return threshold.program() if isinstance(threshold, Stop) else threshold


def own_stop(rule) -> Optional[Stop]:
  """The stop a rule brings (its `stop` attribute), or None: the GLLR."""
  return getattr(rule, "stop", None)


def refusal(stop, rule, family) -> Optional[str]:
  """Why a stop (or a GLLR threshold) does not suit a rule and family, or None.

  * A rule that eliminates arms (its own stop is `elimination`) stops only
    with it: once an arm is eliminated it is never pulled again, so no other
    stop can tell it apart for sure.
  * `elimination` reads the rule's active set: it needs an eliminating rule.
  * `lil` stops when one arm has most of the pulls: it needs a rule that
    concentrates them (lil-ucb).
  * `confidence` with the sub-Gaussian index needs a sub-Gaussian family
    (`subgaussian_variance`).
  * A stop that answers another question than the best arm (`Stop.problem`)
    needs a rule that samples for it (`Rule.answers`), and a rule that samples
    for another question needs such a stop.
  """
  from jbai.stops.bounds import subgaussian_variance  # same package, no cycle
  rule_name = getattr(rule, "name", "?")
  own = own_stop(rule)
  eliminating = own is not None and own.name == "elimination"
  name = stop.name if isinstance(stop, Stop) else "gllr"
  why = question_refusal(stop.problem if isinstance(stop, Stop) else None, rule)
  if why is not None:
    return why
  if eliminating and name != "elimination":
    return (f"rule {rule_name!r} eliminates arms and stops when one remains; it cannot "
            f"run with stop {name!r}: use --stop elimination (or --rule lucb1 --stop "
            f"{'confidence' if name == 'elimination' else name})")
  if isinstance(stop, Stop):
    if stop.rules is not None and rule_name not in stop.rules:
      return (f"stop {name!r} needs rule {' or '.join(stop.rules)}, not {rule_name!r}: "
              f"use --rule {stop.rules[0]} --stop {name}, or --stop confidence")
    if name == "confidence" and dict(stop.params).get("index") == "subgaussian":
      if subgaussian_variance(family) is None:
        return (f"stop 'confidence' with the sub-Gaussian index needs a bounded or "
                f"Gaussian family, not {family.name!r}: use index 'kl'")
  return None


def question_refusal(asked, rule) -> Optional[str]:
  """Why `rule` cannot sample for the question `asked` (a `jbai.problems.Problem`
  whose answer is a set; None: the best arm), or None: a rule samples for the
  questions it names (`Rule.answers`), built for the question's parameters."""
  rule_name = getattr(rule, "name", "?")
  answers = getattr(rule, "answers", ("best-arm",))
  if (asked.name if asked is not None else "best-arm") not in answers:
    if asked is None:
      return (f"rule {rule_name!r} samples for {' or '.join(answers)}, not the best arm: ask "
              f"its question (--top M or --above LEVEL)")
    return (f"rule {rule_name!r} samples for the best arm; it cannot answer {asked!r}: use "
            f"rule 'uniform' or {'apt' if asked.name == 'above' else 'ebtc-top-m'}")
  built = dict(getattr(rule, "params", ()))
  for key, value in asked.params if asked is not None else ():
    if key in built and built[key] != value:  # a rule built for the question's parameters
      return (f"rule {rule_name!r} was built for {key} = {built[key]!r}, but the run asks "
              f"{asked!r}: build it with {key}={value!r}")
  return None


def check(stop, rule, family) -> None:
  """Raises ValueError with `refusal`'s reason when the combination does not suit."""
  reason = refusal(stop, rule, family)
  if reason is not None:
    raise ValueError(reason)
