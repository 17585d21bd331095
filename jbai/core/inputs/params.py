"""The rules' runtime parameters checked: names, shapes and domains.

A runtime parameter (a top-two rule's beta, TCB's eps) is given as {name:
value}; each must be a runtime parameter of the rule, of the shape of the
rule's own value and, where concrete, in its domain (`RUNTIME_DOMAINS`, the
rule factories' checks). `initial_rule_state` puts the values in the rule's
initial state.
"""

import math
import numbers
from typing import Optional

import jax.numpy as jnp
import numpy as np

from jbai.core.inputs.traced import concrete
from jbai.core.inputs.values import shown
from jbai.rules.base import Rule

# The domains of the rules' runtime parameters (the rule factories check the same).
RUNTIME_DOMAINS = {"beta": (0.0, 1.0, "in (0, 1)"), "eps": (0.0, math.inf, "> 0 and finite"),
                   "eps_good": (0.0, math.inf, "> 0 and finite"),
                   **{name: (0.0, math.inf, "> 0 and finite") for name in ("a", "c", "h1")}}


def check_runtime(rule: Rule, names) -> None:
  """Raises ValueError for a name that is not a runtime parameter of the rule."""
  unknown = set(names) - set(rule.runtime)
  if unknown:
    raise ValueError(f"rule {rule.name!r} has no runtime parameter {sorted(unknown)[0]!r}; "
                     f"its runtime parameters are {list(rule.runtime)}")


def check_params(rule: Rule, params: Optional[dict], shapes: Optional[dict] = None) -> dict:
  """The rule's runtime parameters {name: value}, checked: each a runtime
  parameter of the rule, of the shape of the rule's own value (`shapes`, {name:
  shape}; default: a scalar, vmap for several values) and, where concrete, in its
  domain (beta in (0, 1), eps > 0 and finite: the rule factories' checks; other
  values finite). Traced values pass through."""
  if params is None:
    return {}
  if not isinstance(params, dict):
    raise TypeError(f"params must be a dict {{name: value}}, got {params!r}")
  check_runtime(rule, params)
  for name, value in params.items():
    if not concrete(value):
      continue
    if isinstance(value, (bool, np.bool_)) or not (
        isinstance(value, numbers.Real) or np.issubdtype(np.asarray(value).dtype, np.number)):
      raise TypeError(f"params[{name!r}] must be a number, got {shown(value)}")
    shape = tuple((shapes or {}).get(name, ()))
    if np.shape(value) != shape:
      expected = "a scalar (jax.vmap over several values)" if not shape else f"of shape {shape}"
      raise ValueError(f"params[{name!r}] must be {expected}, got shape {np.shape(value)}")
    lo, hi, text = RUNTIME_DOMAINS.get(name, (-math.inf, math.inf, "finite"))
    v = np.asarray(value, float)
    if not np.all((lo < v) & (v < hi)):
      raise ValueError(f"{name} must be {text}, got {shown(value)}")
  return dict(params)


def initial_rule_state(rule: Rule, num_arms: int, params: Optional[dict]):
  """rule.init(num_arms) with the runtime parameters `params` (checked where
  concrete, possibly traced) in place of the values the rule was built with."""
  state = rule.init(num_arms)
  shapes = {k: jnp.shape(getattr(state, k)) for k in (params or {}) if k in rule.runtime}
  params = check_params(rule, params, shapes)
  if params:
    state = state._replace(
        **{k: jnp.asarray(v, getattr(state, k).dtype) for k, v in params.items()})
  return state
