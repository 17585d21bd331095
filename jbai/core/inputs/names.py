"""Names resolved: a family, a rule and a threshold from objects or names.

`resolve` turns what an entry point was given into (Family, Rule, Threshold),
refusing a threshold or stop that does not apply to the family or rule; a
rule of the user's (any object with `init` and `select`) runs as a `Rule`, its
arms checked on a trial's first steps (`check_rule_arms`), and `rule_refusal`
says why a rule does not apply to a family, found by tracing its `select` (and,
on the unknown-variance and bounded models, by name: `model_refusal`).
"""

import functools
import re
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import families as families_lib
from jbai import rules as rules_lib
from jbai import stops as stops_lib
from jbai import thresholds as thresholds_lib
from jbai.bounded import family as bounded_family
from jbai.core.inputs.traced import concrete, tracing
from jbai.core.inputs.values import shown
from jbai.families.base import Family, draw
from jbai.rules.base import Rule
from jbai.thresholds import Threshold
from jbai.variance import families as variance_families


def as_rule(rule) -> Rule:
  """A `Rule` from a rule, a registered name, or any object with pure `init` and
  `select` functions (a NamedTuple of two functions, say), which runs as a rule
  with no parameters (with its `score`, `stop`, `pulls` and `schedule` where it has them)."""
  if isinstance(rule, Rule):
    return rule
  if isinstance(rule, str):
    return rules_lib.get(rule)
  init, select = getattr(rule, "init", None), getattr(rule, "select", None)
  if not (callable(init) and callable(select)):
    raise TypeError(f"a rule is a jbai.rules.Rule, a rule name, or an object with "
                    f"init(num_arms) and select(key, family, arm_stats, state) "
                    f"functions; got {rule!r}")
  return Rule(name=getattr(rule, "name", type(rule).__name__), init=init, select=select,
              score=getattr(rule, "score", None), stop=getattr(rule, "stop", None),
              pulls=getattr(rule, "pulls", None), recommend=getattr(rule, "recommend", None),
              schedule=getattr(rule, "schedule", None))


USER_RULE_STEPS = 32  # the first steps on which a user's rule's arms are checked


def check_rule_arms(family: Family, rule: Rule, means) -> None:
  """A user's rule (its `select` defined outside jbai) must select arms in [0, K):
  its select runs eagerly on a trial's first steps (at most USER_RULE_STEPS,
  rewards drawn at the first instance's means), and an arm out of range is
  refused naming the arm, the step and the rule. jbai's own rules are not run
  (their arms are in range by construction): they pay nothing. Inside a JAX
  trace (the caller's jit, or traced means) nothing is checked here, since a
  traced arm cannot be read: `checks=True` checks every step's arm instead
  (`jbai.checks.check_arms`)."""
  if builtin_rule(rule) or tracing() or not concrete(means):
    return
  from jbai.state import empty_stats, observe
  table = np.asarray(means, float)
  num_arms = table.shape[-1]
  first = jnp.asarray(table.reshape(-1, num_arms)[0])
  stats, state = empty_stats(family, num_arms, first.dtype), rule.init(num_arms)
  key = jax.random.key(0)
  for t in range(min(2 * num_arms, USER_RULE_STEPS)):
    arm, state = rule.select(jax.random.fold_in(key, 2 * t), family, stats, state)
    arm = np.asarray(arm)
    if arm.shape != () or not np.issubdtype(arm.dtype, np.integer):
      raise ValueError(f"rule {rule.name!r}: select must return one integer arm, got "
                       f"{shown(arm)} (dtype {arm.dtype}) at step {t}")
    if not 0 <= int(arm) < num_arms:
      raise ValueError(f"rule {rule.name!r} selected arm {int(arm)} at step {t} of a "
                       f"trial; the arms are 0 to {num_arms - 1}")
    reward = draw(family, jax.random.fold_in(key, 2 * t + 1), first, jnp.asarray(arm))
    stats = observe(family, stats, jnp.asarray(arm, jnp.int32), reward)


def builtin_rule(rule: Rule) -> bool:
  """True for jbai's own rules (their arms are in range by construction)."""
  return getattr(rule.select, "__module__", "").startswith("jbai.")


_RULE_HINT = re.compile(r";\s*use\b.*$")


def model_refusal(family, rule) -> Optional[str]:
  """Why a built-in rule does not run on a model that refuses rules by name (the
  unknown-variance Gaussian one, `jbai.variance.families.refusal`; the bounded one,
  `jbai.bounded.family.refusal`: rules that would read the truth through the
  oracle), or None."""
  if not builtin_rule(rule):
    return None
  return (variance_families.refusal(family, rule.name)
          or bounded_family.refusal(family, rule.name))


@functools.lru_cache(maxsize=256)
def rule_refusal(family, rule, num_arms: int) -> Optional[str]:
  """Why `rule` does not apply to `family` (None when it does), found by tracing
  its `select` on abstract values at the run's `num_arms` arms (no compilation):
  a rule refuses a family with a ValueError when it is traced. The rule's own
  advice is dropped (the caller suggests options checked against the whole
  command)."""
  from jbai.linear.family import is_linear, rule_refusal as linear_refusal
  from jbai.state import empty_stats
  model = model_refusal(family, rule)
  if model is not None:
    return _RULE_HINT.sub("", model)
  if is_linear(family) and linear_refusal(rule) is not None:
    return _RULE_HINT.sub("", linear_refusal(rule))
  try:
    jax.eval_shape(lambda key: rule.select(key, family, empty_stats(family, num_arms),
                                           rule.init(num_arms)), jax.random.key(0))
  except ValueError as e:
    reason = _RULE_HINT.sub("", str(e).splitlines()[0])
    return reason if repr(rule.name) in reason else f"rule {rule.name!r}: {reason}"
  return None


def as_family(family) -> Family:
  """A `Family` from a family or a built-in name."""
  if isinstance(family, str):
    family = families_lib.get(family)
  if not isinstance(family, Family):
    raise TypeError(f"family must be a jbai.families.Family or a name, got {family!r}")
  return family


def resolve(family, rule, threshold) -> tuple:
  """(Family, Rule, Threshold) from objects or names; raises ValueError where the
  threshold does not apply to the family."""
  family = as_family(family)
  rule = as_rule(rule)
  if rule.budget is not None:  # Rule.budget: a rule that runs only to a budget
    raise ValueError(f"rule {rule.name!r} samples with a fixed budget and never stops by "
                     "itself: run it to a budget with jbai.budget (jbai run --budget T)")
  if threshold is None:  # the rule's own stop (jbai.stops), else the GLLR with gk16
    # (with the bounded model's own threshold on that model: gk16 is a heuristic)
    threshold = stops_lib.own_stop(rule) or (
        "bounded" if family.name == bounded_family.NAME else "gk16")
  if isinstance(threshold, str):
    threshold = thresholds_lib.get(threshold)
  if not isinstance(threshold, (Threshold, stops_lib.Stop)):
    raise TypeError(f"threshold must be a jbai.thresholds.Threshold, a jbai.stops.Stop "
                    f"or a name, got {threshold!r}")
  if isinstance(threshold, Threshold):
    thresholds_lib.check(threshold, family)
  stops_lib.check(threshold, rule, family)
  model = model_refusal(family, rule)
  if model is not None:  # a rule that would read the true sigma through the oracle
    raise ValueError(model)
  return family, rule, threshold
