"""The inputs every entry point shares: names resolved, values checked.

`simulate`, `rollout`, `estimate`, `finite_difference` and `trace` take a family,
a rule and a threshold as objects or names, and the same run-time values; they
resolve and check them here, so that a bad value gets the same clear error
wherever it enters. Checks of values run where the values are concrete; under a
caller's `jax.jit` a traced value passes through unchecked.
"""

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import families as families_lib
from jbai import rules as rules_lib
from jbai import thresholds as thresholds_lib
from jbai.families.base import Family
from jbai.rules.base import Rule
from jbai.thresholds import Threshold


def as_rule(rule) -> Rule:
  """A `Rule` from a rule, a registered name, or any object with pure `init` and
  `select` functions (a NamedTuple of two functions, say), which runs as a rule
  with no parameters and no scores."""
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
              score=getattr(rule, "score", None))


def resolve(family, rule, threshold) -> tuple:
  """(Family, Rule, Threshold) from objects or names; raises ValueError where the
  threshold does not apply to the family."""
  if isinstance(family, str):
    family = families_lib.get(family)
  if not isinstance(family, Family):
    raise TypeError(f"family must be a jbai.families.Family or a name, got {family!r}")
  rule = as_rule(rule)
  if isinstance(threshold, str):
    threshold = thresholds_lib.get(threshold)
  if not isinstance(threshold, Threshold):
    raise TypeError(f"threshold must be a jbai.thresholds.Threshold or a name, "
                    f"got {threshold!r}")
  thresholds_lib.check(threshold, family)
  return family, rule, threshold


def check_delta(delta) -> np.ndarray:
  """Validates delta (a scalar or a vector), every entry in (0, 1)."""
  arr = np.atleast_1d(np.asarray(delta, dtype=float))
  if arr.ndim != 1 or arr.size == 0:
    raise ValueError(f"delta must be a number or a 1-d list, got {delta!r}")
  for d in arr:
    if not 0.0 < d < 1.0:
      raise ValueError(f"delta must be in (0, 1), got {float(d)!r}")
  return arr


def check_trials(n_trials, minimum: int = 1) -> int:
  """n_trials as an int, at least `minimum`."""
  n = int(n_trials)
  if n < minimum:
    why = " for a standard error" if minimum > 1 else ""
    raise ValueError(f"n_trials must be >= {minimum}{why}, got {n_trials!r}")
  return n


def check_runtime(rule: Rule, names) -> None:
  """Raises ValueError for a name that is not a runtime parameter of the rule."""
  unknown = set(names) - set(rule.runtime)
  if unknown:
    raise ValueError(f"rule {rule.name!r} has no runtime parameter {sorted(unknown)[0]!r}; "
                     f"its runtime parameters are {list(rule.runtime)}")


def initial_rule_state(rule: Rule, num_arms: int, params: Optional[dict]):
  """rule.init(num_arms) with the runtime parameters `params` (possibly traced)
  in place of the values the rule was built with."""
  state = rule.init(num_arms)
  if params:
    check_runtime(rule, params)
    state = state._replace(
        **{k: jnp.asarray(v, getattr(state, k).dtype) for k, v in params.items()})
  return state


def raw_key(key) -> jax.Array:
  """The raw uint32 data of a typed key (jax.random.key) or of a raw key (PRNGKey)."""
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    return jax.random.key_data(key)
  return key


def concrete(x) -> bool:
  """True when no leaf of x is traced (x can be checked now)."""
  return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(x))


def refuse_traced(function: str, instead: str, **values) -> None:
  """Raises TypeError where a host-side function meets a traced value (it was
  called under jax.jit, vmap or grad), naming the pure function that runs there."""
  for name, value in values.items():
    if not concrete(value):
      raise TypeError(
          f"{function} runs on the host and cannot take a traced {name!r} (it was called "
          f"under jax.jit, jax.vmap or jax.grad); inside traced code use {instead}")
