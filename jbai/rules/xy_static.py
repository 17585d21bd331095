"""XY-static: the static XY-allocation of Soare, Lazaric & Munos (2014), tracked by C-tracking.

The design lambda* = argmin_lambda max_{y in Y} ||y||^2_{A(lambda)^-1} over the
directions Y = {x - x'} of every pair of arms (Soare et al. 2014, Sec. 4, the
XY-static allocation), or with `design="g"` the G-optimal design
argmin_lambda max_x ||x||^2_{A(lambda)^-1} (their G-allocation), computed once
for the family's arms (`jbai.linear.design`, Frank-Wolfe on the host in float64)
and tracked by C-tracking without projection (`jbai.rules.tas.c_tracking`): each
arm is pulled once first, then the arm of the largest deficit
sum_s lambda* - N_t, which keeps |N_t(a) - t lambda*_a| < K.

Departures from the paper: Soare et al. pull the arms by the greedy incremental
rule x_t = argmin_x max_y ||y||^2_{(A_{t-1} + x x^T)^-1}; tracking the solved
design, as LinBAI.jl's and FWS's static baselines do, reaches the same
proportions. They stop when a confidence set around theta_hat lies in one
cell; here the rule runs with the GLLR stop against the run's threshold (gk16,
the field's practice, or linear-sn, proven). It runs on the linear model only
(`jbai.linear.linear_family`) and refuses any other family with one line.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.linear import design as designs
from jbai.linear.family import spec_of
from jbai.rules.base import Rule
from jbai.rules.tas import c_tracking

NAME = "xy-static"


class StaticState(NamedTuple):
  deficit: jax.Array  # [K] float, sum_{s <= t} lambda* - N_t


@cached
def _select(kind: str):
  def select(key, family, arm_stats, state):
    spec = spec_of(family, f"rule {NAME!r}")
    rows = tuple(tuple(float(v) for v in row) for row in spec.features)
    w = jnp.asarray(designs.design(rows, kind), state.deficit.dtype)
    arm, deficit = c_tracking(key, arm_stats.counts, arm_stats.t, w, state.deficit,
                              "none", "none")
    return arm, StaticState(deficit)

  return select


def _init(num_arms: int) -> StaticState:
  return StaticState(jnp.zeros(num_arms, jnp.result_type(float)))


@cached
def xy_static(design: str = "xy") -> Rule:
  """XY-static (Soare, Lazaric & Munos 2014): a fixed design of the linear model,
  tracked; `design="g"` for the G-optimal design. Linear model only.

  Args:
    design: "xy" (the XY-allocation over every pair's direction) or "g" (G-optimal).

  Returns:
    The rule.

  Raises:
    ValueError: for another design; for a family that is not linear, when run.
  """
  if design not in designs.KINDS:
    raise ValueError(f"design must be one of {designs.KINDS}, got {design!r}")
  return Rule(NAME, _init, _select(design), (("design", design),))


__all__ = ["NAME", "StaticState", "xy_static"]
