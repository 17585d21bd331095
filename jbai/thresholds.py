"""Stopping thresholds beta_t(delta) for the GLLR stopping rule (paper eq. stop).

A threshold is a NamedTuple of two pure functions:

  init(delta, num_arms) -> params      delta: [D] confidence levels; params: pytree
  value(params, family, arm_stats, top, ch) -> [D]   beta_t(delta) for each delta

`init` runs once per simulation (inside jit), so that work depending on delta
alone (a calibration function, say) is not repeated every step. The engine stops a
trial for level delta_d at the first t with Lambda_t(top, ch) > value[d].
"""

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp


class Threshold(NamedTuple):
  name: str
  init: Callable[[jax.Array, int], Any]
  value: Callable[..., jax.Array]
  params: tuple = ()

  def __repr__(self):
    return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params)})"

  def __hash__(self):
    return hash((self.name, self.params))

  def __eq__(self, other):
    return (isinstance(other, Threshold) and
            (self.name, self.params) == (other.name, other.params))


def gk16() -> Threshold:
  """beta_t(delta) = log((1 + log t) / delta), the heuristic of Garivier & Kaufmann (2016).

  Used in most experiments of the literature (and the paper's); not proven
  delta-correct.
  """

  def init(delta, num_arms):
    del num_arms
    return {"log_inv_delta": -jnp.log(delta)}

  def value(params, family, arm_stats, top, ch):
    del family, top, ch
    t = jnp.maximum(arm_stats.t, 1).astype(params["log_inv_delta"].dtype)
    return jnp.log1p(jnp.log(t)) + params["log_inv_delta"]

  return Threshold("gk16", init, value)


THRESHOLDS = {"gk16": gk16}


def get(name: str, **params) -> Threshold:
  """Builds a threshold by name; raises ValueError naming an unknown one."""
  if name not in THRESHOLDS:
    raise ValueError(f"unknown threshold {name!r}; choose from {sorted(THRESHOLDS)}")
  return THRESHOLDS[name](**params)
