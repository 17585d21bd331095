"""A study spec's [[rules]]: every rule setting (sweeps expanded) with the
thresholds it runs with, each checked on the study's instances; in a budget study
each checked to run to every budget (docs/guide/study.md).
"""

import inspect
import itertools

import numpy as np

from jbai.studies.spec.checks import as_list, choice, fail, known
from jbai.studies.spec.questions import problem_of, question, study_problem
from jbai.studies.spec.section import NO_STOP

RULE_KEYS = ("name", "threshold")  # beside the rule's own parameters
OWN = "own"  # threshold value: the rule's own stop


def _rules(entries, study: dict):
  """Yields (where, entry, name, [(params, Rule)]) of each [[rules]] entry, its
  sweeps expanded (the product of its lists), in spec order."""
  from jbai.core.assembly import fitted, question_params
  from jbai.rules import ALL
  if not isinstance(entries, list) or not entries:
    fail("rules", entries, "give at least one [[rules]] entry")
  for i, entry in enumerate(entries):
    where = f"rules[{i}]"
    if not isinstance(entry, dict):
      fail(where, entry, "must be a table")
    name = choice(f"{where}.name", entry.get("name"), ALL)
    accepted = inspect.signature(ALL[name]).parameters
    known(where, entry, RULE_KEYS + tuple(accepted))
    for key, asked in (("m", "top = M"), ("level", "above = LEVEL")):  # OTHER_QUESTIONS'
      needed = key in accepted and accepted[key].default is inspect.Parameter.empty
      if needed and key not in entry and key not in question_params(study_problem(study)):
        fail(f"{where}.name", name, f"samples for another question than the best arm, "
             f"built for its {key}: give [study] {asked}")
    swept = {k: as_list(f"{where}.{k}", v) for k, v in entry.items() if k not in RULE_KEYS}
    rules = []
    for values in itertools.product(*swept.values()):
      params = dict(zip(swept, values))
      try:
        rules.append((params, fitted(name, study_problem(study), **params)))
      except (TypeError, ValueError) as e:
        fail(where, params, str(e).splitlines()[0])
    yield where, entry, name, rules


def resolve_settings(entries, study: dict, instances: list) -> list:
  """[{rule, params, threshold}]: every rule setting (sweeps expanded) with each
  threshold it runs with ("own": the rule's own stop), in spec order; for a
  budget study [{rule, params}] (`_budget_settings`)."""
  if study["budget"] is not None:
    return _budget_settings(entries, study, instances)
  from jbai import stops
  from jbai.core.assembly import stop_for
  from jbai.thresholds import THRESHOLDS
  families = {}
  for inst in instances:
    families.setdefault((inst["family"], repr(sorted(inst["family_params"].items()))),
                        inst)
  asked = study_problem(study)
  out = []
  for where, entry, name, rules in _rules(entries, study):
    thresholds = entry.get("threshold")
    if thresholds is not None:
      thresholds = as_list(f"{where}.threshold", thresholds)
      for t in thresholds:
        choice(f"{where}.threshold", t, list(THRESHOLDS) + [OWN])
    for params, rule in rules:
      if rule.budget is not None:
        fail(f"{where}.name", name, "samples with a fixed budget and never stops; give "
             "[study] budget = [T, ...] to run it to a budget")
      own = stops.own_stop(rule)
      chosen = thresholds or ([OWN] if own is not None else study["threshold"])
      for t in chosen:
        if t == OWN and own is None:
          fail(f"{where}.threshold", t, f"rule {name!r} has no stop of its own; use "
               f"{list(THRESHOLDS)}")
        try:  # the question's stop (`jbai.core.assembly`), before any family
          stop = stop_for(rule, None if t == OWN else t, asked)
        except ValueError as e:
          fail(f"{where}.threshold", t, str(e).splitlines()[0])
        for inst in families.values():
          _check_slack("study" if study["eps_good"] is not None else where, stop, inst)
          _check_rule(where, rule, t, inst, asked)
        out.append({"rule": name, "params": params, "threshold": t})
  keys = [(s["rule"], repr(sorted(s["params"].items())), s["threshold"]) for s in out]
  for k in keys:
    if keys.count(k) > 1:
      fail("rules", k[0], f"runs the setting {k[1]} with threshold {k[2]!r} twice")
  return out


def _budget_settings(entries, study: dict, instances: list) -> list:
  """[{rule, params}] of a budget study: every rule setting, each checked to run
  to every budget on every instance's family and number of arms."""
  shapes = {}  # the first instance of each family and K
  for inst in instances:
    shapes.setdefault((inst["family"], repr(sorted(inst["family_params"].items())),
                       len(inst["means"])), inst)
  out = []
  for where, entry, name, rules in _rules(entries, study):
    if "threshold" in entry:
      fail(f"{where}.threshold", entry["threshold"], NO_STOP)
    for params, rule in rules:
      for inst in shapes.values():
        _check_budget_rule(where, rule, study, inst)
      out.append({"rule": name, "params": params})
  keys = [(s["rule"], repr(sorted(s["params"].items()))) for s in out]
  for k in keys:
    if keys.count(k) > 1:
      fail("rules", k[0], f"runs the setting {k[1]} twice")
  return out


def _check_budget_rule(where: str, rule, study: dict, inst: dict) -> None:
  """Refuses a rule that cannot run to each budget of a study on an instance's
  family and number of arms (`jbai.core.budget.check_rule`, `check_budget`): one
  whose sampling needs delta, that refuses the family, or whose smallest budget
  (or K) is above one of the study's, or that does not sample for its question."""
  import jax
  from jbai.families import get as get_family
  from jbai.core.budget import check_budget, check_rule
  family, num_arms = get_family(inst["family"], **inst["family_params"]), len(inst["means"])
  try:
    with jax.enable_x64(study["dtype"] == "float64"):  # the counts the trials run with
      check_rule(family, rule, num_arms, problem_of(question(study)))
      for t in study["budget"]:
        check_budget(rule, t, num_arms)
  except (TypeError, ValueError) as e:
    fail(f"{where}.name", rule.name, f"on instance {inst['name']!r} ({inst['family']}, "
         f"K = {num_arms}): {str(e).splitlines()[0]}")


def _check_rule(where: str, rule, threshold: str, inst: dict, asked) -> None:
  """Refuses a rule, a threshold or a stop that does not apply to an instance's
  family, or a rule that does not sample for the question `asked` (a
  `jbai.problems.Problem`): the run's assembly (`jbai.core.assembly.assemble`)."""
  from jbai.core.assembly import assemble
  from jbai.core.inputs import rule_refusal
  from jbai.families import get as get_family
  family = get_family(inst["family"], **inst["family_params"])
  why = rule_refusal(family, rule, len(inst["means"]))
  if why is None:
    try:
      assemble(family, rule, None if threshold == OWN else threshold, asked)
    except (TypeError, ValueError) as e:
      why = str(e).splitlines()[0]
  if why is None:
    try:
      from jbai.core.inputs import check_rule_arms
      check_rule_arms(family, rule, np.asarray([inst["means"]]))
    except ValueError as e:
      why = str(e).splitlines()[0]
  if why is not None:
    fail(f"{where}.name", rule.name, f"with threshold {threshold!r} on instance "
         f"{inst['name']!r} ({inst['family']}): {why}")


def _check_slack(where: str, stop, inst: dict) -> None:
  """Refuses an eps-good slack at or beyond the width of an instance family's
  Theta, as `jbai.simulate` and the eps oracle do (`jbai.eps_transport.check_slack`)."""
  from jbai.eps_transport import check_slack
  from jbai.families import get as get_family
  from jbai.stops.eps_good import eps_of
  try:
    if eps_of(stop) > 0:
      check_slack(eps_of(stop), get_family(inst["family"], **inst["family_params"]))
  except ValueError as e:
    fail(f"{where}.eps_good", dict(stop.params)["eps"], f"on instance {inst['name']!r}: "
         f"{str(e).splitlines()[0]}")
