"""One place that puts a run together: from what the user gave to what the lanes run.

`assemble` takes a run's ingredients as a user gives them (family, rule and
threshold as objects or names, the question, a budget and the options of a stop)
and returns a `Plan`: the family, the rule fitted to the question, the stop the
lanes test and the question, each resolved and checked. `jbai.simulate`,
`jbai.rollout`, `jbai.estimate`, `jbai.budget`, the command line and a study's
spec all call it, so that a refusal (a rule that cannot answer the question, the
options of a stop in a run to a budget, an eps-good answer with a stop that has
none) is written once, here.

The question is a `jbai.problems.Problem` (`jbai.problems.question`: None is the
best arm; `eps_good=eps` is an alias of `problem=eps_good(eps)`). The stop:

  * to a budget: the recommendation at the checkpoints (`jbai.stops.budget_stop`);
  * the best arm: the threshold (a name, a `Threshold` or a `Stop`), by default
    the rule's own stop, else the GLLR against gk16;
  * an eps-good arm: the eps-GLLR against a GLLR threshold, or the rule's own
    stop where the rule was built for that eps (ebtc-eps, lucb1-eps);
  * a set of arms (top-m, thresholding): the problem's GLLR against a GLLR
    threshold (`jbai.stops.answer_gllr`), or the rule's own stop of the problem
    (lucb-top-m's).

How a new question or a new model enters: docs/design/assembly.md.
"""

from typing import Any, NamedTuple, Optional

from jbai import problems, stops
from jbai.core import inputs
from jbai.eps_transport import check_slack
from jbai.families.base import Family
from jbai.linear import family as linear_family
from jbai.problems.base import Problem
from jbai.rules.base import Rule, recommendation
from jbai.stops.eps_good import NAME as EPS_GLLR, eps_gllr, eps_of, threshold_of


class Plan(NamedTuple):
  """A run put together by `assemble`.

  Attributes:
    family: the reward family.
    rule: the sampling rule, fitted to the question.
    stop: what the lanes test, a `jbai.thresholds.Threshold` (the best arm's GLLR)
      or a `jbai.stops.Stop`.
    problem: the question (`jbai.problems.Problem`; `best_arm()` by default), what
      the answers are judged against (`jbai.problems.judge`).
  """

  family: Family
  rule: Rule
  stop: Any
  problem: Problem


def assemble(family, rule, threshold=None, problem: Optional[Problem] = None, *,
             eps_good: Optional[float] = None, budget=None, delta=None,
             max_steps=None) -> Plan:
  """The `Plan` of a run: resolved, checked, the rule fitted to the question.

  Args:
    family: a `Family` or a built-in family's name.
    rule: a `Rule` or a registered name (a name is built for the question:
      `fitted`).
    threshold: a `Threshold`, its name or a `jbai.stops.Stop`; None: the rule's
      own stop, else the question's GLLR against gk16.
    problem: the question (`jbai.problems.Problem`); None: the best arm.
    eps_good: the alias of problem=eps_good(eps).
    budget: a run to a budget T (a value, possibly traced: only whether it is
      given matters here), which has no stop.
    delta: the confidence level of a run that stops, which a run to a budget
      refuses where given (a run that stops checks it itself).
    max_steps: the cap of a run that stops, refused alike with a budget.

  Raises:
    ValueError: one line naming what does not go together (or the bad value).
  """
  if budget is not None:
    given = [name for name, value in (("delta", delta), ("threshold", threshold),
                                      ("max_steps", max_steps), ("eps_good", eps_good))
             if value is not None]
    if given:
      raise ValueError(f"a run to a budget (budget={budget!r}) has no stop, so no "
                       f"{given[0]}: pass {given[0]}=None")
    problem = problems.question(problem)
    family, rule = inputs.as_family(family), inputs.as_rule(fitted(rule, problem))
    check_model(family, rule, problem)
    return Plan(family, rule, stops.budget_stop(recommendation(rule), problem), problem)
  problem = problems.question(problem, eps_good)
  rule = inputs.as_rule(fitted(rule, problem))
  check_model(inputs.as_family(family), rule, problem)
  family, rule, stop = inputs.resolve(family, rule, stop_for(rule, threshold, problem))
  eps = eps_of(stop)
  if eps > 0:  # at or beyond Theta's width every arm is eps-good: nothing to identify
    check_slack(eps, family)
  if problem.name == "best-arm":  # nothing asked: the question the stop answers
    if getattr(stop, "problem", None) is not None:
      problem = stop.problem
    elif eps > 0:  # an eps-GLLR stop, or a rule built for eps-good answers with its own
      problem = problems.eps_good(eps)
  return Plan(family, rule, stop, problem)


def check_model(family: Family, rule: Rule, problem: Problem) -> None:
  """A model whose arms share parameters (the linear bandit, `jbai.linear.family`)
  runs the best-arm question with the rules that read its costs, its oracle or
  nothing of the family (`jbai.linear.family.rule_refusal`).

  Raises:
    ValueError: one line naming the rule or the question.
  """
  if not linear_family.is_linear(family):
    return
  if problem.name != "best-arm":
    raise ValueError(f"the linear model answers the best arm only, not {problem!r}")
  why = linear_family.rule_refusal(rule)
  if why is not None:
    raise ValueError(why)


QUESTION_PARAMS = {"eps-good": {"eps": "eps_good"}, "top-m": {"m": "m"},
                   "above": {"level": "level"}}  # a question's params, as rules take them


def question_params(problem: Problem) -> dict:
  """The parameters of a question that rules are built for: {"eps_good": eps} of
  an eps-good arm, {"m": m} of the top m, {"level": level} above a level; {} for
  the best arm (`fitted`)."""
  names = QUESTION_PARAMS.get(problem.name, {})
  return {names[k]: v for k, v in problem.params if k in names}


def fitted(rule, problem: Problem, **params):
  """A rule given by name, built for the question (`question_params`, each
  passed only to a factory that takes it: ebtc-eps's eps_good, ebtc-top-m's m,
  apt's level) with `params`, the rule's own; a `Rule` unchanged."""
  if not isinstance(rule, str):
    return rule
  from jbai import rules  # the registry, which imports every rule
  return rules.get(rule, **{**question_params(problem), **params})


def stop_for(rule: Rule, threshold, problem: Problem):
  """The stop of a run of `rule` that asks `problem` (see the module's docstring).

  Raises:
    ValueError: with a stop that answers another question (the rule's own, or one
      named), or a rule built for another eps.
  """
  own = stops.own_stop(rule)
  if problem.arm:  # the best arm, an eps-good arm
    if threshold is None and own is not None and own.problem is not None:
      raise ValueError(stops.question_refusal(None, rule))  # its own stop answers a question
    if problem.name == "eps-good":
      return _eps_stop(rule, threshold, dict(problem.params)["eps"])
    return threshold
  if isinstance(threshold, stops.Stop) and threshold.problem == problem:
    return threshold  # a stop of the problem already
  name = getattr(rule, "name", "?")
  if threshold is None and own is not None and own.problem == problem:
    return own  # the rule's own stop of the problem (lucb-top-m's)
  if isinstance(threshold, stops.Stop) or (threshold is None and own is not None):
    stop = threshold if isinstance(threshold, stops.Stop) else own
    raise ValueError(f"{problem!r} stops with its GLLR against a threshold, not with stop "
                     f"{stop.name!r} (rule {name!r}): pass threshold='gk16' or another "
                     "GLLR threshold (on the command line, --stop gllr)")
  return stops.answer_gllr(problem, threshold or "gk16")


def _eps_stop(rule: Rule, threshold, eps: float):
  """The stop of an eps-good run: the eps-GLLR against `threshold` (a GLLR
  threshold or its name; None: gk16), or the rule's own stop where the rule was
  built for eps-good answers (its stop carries an eps > 0: ebtc-eps, lucb1-eps)
  with this eps.

  Raises:
    ValueError: with a stop other than the GLLR (the rule's own, or one named),
      where eps-good answers are not defined, or with a rule built for another
      eps; the message says what to run.
  """
  own = getattr(rule, "stop", None)
  name = getattr(rule, "name", "?")
  own_eps = eps_of(own)
  if own_eps > 0 and eps != own_eps:
    raise ValueError(
        f"rule {name!r} was built for eps-good answers with eps_good={own_eps}, but the "
        f"run asks eps_good={eps}: build the rule with eps_good={eps}")
  if threshold is not None and own is not None and threshold == own:
    threshold = None  # the rule's own stop, named: as by default
  if isinstance(threshold, stops.Stop) and threshold.name != EPS_GLLR:
    raise ValueError(
        f"eps_good is defined for the GLLR stop, not for stop {threshold.name!r}: pass "
        "threshold='gk16' (or another GLLR threshold) with eps_good (on the command line, "
        "--stop gllr)")
  if isinstance(threshold, stops.Stop) and threshold.name == EPS_GLLR:
    threshold = threshold_of(threshold)
  if threshold is None:  # the rule's own stop, where it answers eps-good arms
    if own_eps > 0:
      return own
    if own is not None:
      hint = ("use a GLLR rule, e.g. rule 'tcb' or 'tas-d' (on the command line, --rule tcb)"
              if own.name == "elimination" else
              f"pass threshold='gk16' to run {name!r} with the GLLR stop (on the command "
              "line, add --stop gllr)")
      raise ValueError(
          f"rule {name!r} stops with its own stop {own.name!r}, where eps-good answers "
          f"are not defined: {hint}")
    threshold = "gk16"
  return eps_gllr(eps, threshold)
