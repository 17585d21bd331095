"""LinGapE: the gap-based linear rule of Xu, Honda & Sugiyama (2018), greedy selection.

With theta_hat_t and V_t the ridge least squares of the linear model
(`jbai.linear.linear_family`; V_t = lambda I + sum x x^T / sigma^2), at each step
(Xu et al. 2018, Algorithm 1):

  1. the leader i_t = argmax_i x_i^T theta_hat_t;
  2. the challenger j_t = argmax_{j != i_t} (x_j - x_i_t)^T theta_hat_t
     + C_t ||x_i_t - x_j||_{V_t^-1}: the arm whose gap to the leader has the
     largest upper confidence bound, with the self-normalised radius
     C_t = sqrt(2 log(1/delta) + log(det V_t / lambda^d)) + sqrt(lambda) S
     (Abbasi-Yadkori et al. 2011; the paper's C_t in V_t's 1/sigma^2 weighting), delta
     the run's: the rule's state carries log(1/delta) (`jbai.stops.with_delta`), so a
     run takes one delta, and a run to a budget, which has none, refuses the rule;
  3. pull the arm that most shrinks the uncertainty of that gap, y_t = x_i_t - x_j_t:
     argmin_a ||y_t||^2_{(V_t + x_a x_a^T / sigma^2)^-1}, that is (Sherman-Morrison)
     argmax_a (x_a^T V_t^-1 y_t)^2 / (sigma^2 + x_a^T V_t^-1 x_a), ties at random
     (the paper's greedy arm selection, its eq. (9)).

Each arm is pulled once first (the least-sampled arm while some count is 0), as
the paper initialises and as FWS's and LinBAI.jl's codes do.

Departures: the paper's main variant tracks the optimal static ratio of the
direction y_t (a linear program per step); this is its greedy variant. The paper
stops when the challenger's index B(t) <= eps; here the rule runs with the GLLR
stop against the run's threshold (eps = 0). S >= ||theta||_2 is `theta_bound`
(default 1). Linear model only: any other family is refused with one line.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jbai.builders import cached
from jbai.linear.family import design_inverse, direction_gain, spec_of
from jbai.rules.base import Rule, hyper, least_sampled
from jbai.ties import argmax_random_ties

NAME = "lingape"


class GapState(NamedTuple):
  log_inv_delta: jax.Array  # [] float, log(1/delta) of the run (`jbai.stops.with_delta`)
  theta_bound: jax.Array    # [] float, S


def _select(key, family, arm_stats, state):
  spec = spec_of(family, f"rule {NAME!r}")
  dtype = arm_stats.mean.dtype
  x, v_inv = design_inverse(family, arm_stats.counts, dtype)
  k_lead, k_ch, k_arm = jax.random.split(key, 3)
  num_arms, dim = x.shape
  lead = argmax_random_ties(k_lead, arm_stats.mean)
  y = x[lead] - x                                               # [K, d]
  width = jnp.sqrt(jnp.maximum(jnp.einsum("ka,ab,kb->k", y, v_inv, y), 0.0))
  log_det = -jnp.linalg.slogdet(v_inv)[1] - dim * np.log(spec.ridge)
  radius = (jnp.sqrt(2 * state.log_inv_delta.astype(dtype) + log_det)
            + np.sqrt(spec.ridge) * state.theta_bound.astype(dtype))
  index = arm_stats.mean - arm_stats.mean[lead] + radius * width
  index = jnp.where(jnp.arange(num_arms) == lead, -jnp.inf, index)
  challenger = argmax_random_ties(k_ch, index)
  gap = y[challenger]                                           # y_t
  arm = argmax_random_ties(k_arm, direction_gain(x, v_inv, gap, spec.sigma))
  first = jnp.min(arm_stats.counts) == 0
  return jnp.where(first, least_sampled(arm_stats.counts), arm).astype(jnp.int32), state


def lingape(theta_bound: float = 1.0) -> Rule:
  """LinGapE (Xu, Honda & Sugiyama 2018), greedy selection: pull the arm that most
  shrinks the uncertainty of the leader's gap to its optimistic challenger.
  Linear model only; its bonus takes the run's delta (one per run).

  Args:
    theta_bound: S >= ||theta||_2 in the confidence radius C_t.

  Returns:
    The rule.
  """
  if isinstance(theta_bound, bool) or not (np.isfinite(theta_bound) and theta_bound >= 0):
    raise ValueError(f"theta_bound must be a finite number >= 0, got {theta_bound!r}")
  bound = float(theta_bound)
  # log(1/delta) is a placeholder until the run sets its own (jbai.stops.with_delta).
  return Rule(NAME, lambda num_arms: GapState(hyper(np.log(10.0)), hyper(bound)), _select,
              (("theta_bound", bound),), runtime=("theta_bound",))


__all__ = ["GapState", "NAME", "lingape"]
