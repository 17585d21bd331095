"""Gradient ascent on the empirical Gamma(w) (Menard 2019), with forced exploration.

"Gradient Ascent for Active Exploration in Bandit Problems" (Menard 2019) runs
online mirror ascent with the entropy (exponential weights) on the concave
functions w -> Gamma(mu_hat_t, w) = min_{lambda in Alt} sum_k w_k d(mu_hat_k, lambda_k),
mixes the iterate with the uniform allocation (forced exploration) and tracks the
cumulative mixed weights. After one pull of each arm, at each step t:

  1. g_t = the supergradient of Gamma(mu_hat_t, .) at the learner's iterate w~_t:
     (d(mu_hat_k, lambda_k))_k for the best response lambda
     (`jbai.rules.learners.best_response`), summed into G_t;
  2. w~_{t+1} = softmax(eta_t G_t), eta_t = 1 / sqrt(t + 1);
  3. w'_t = (1 - gamma_t) w~_{t+1} + gamma_t / K, gamma_t = 1 / (4 sqrt t);
  4. cumulative tracking of sum_s w'_s (the first K pulls add the uniform
     allocation, as in best-arm).

The step sizes and the mixing follow the peer package best-arm
(algorithms/gradient_ascent.py), which this rule reproduces but for tie-breaks;
Koolen's code (tidnabbil `Menard`) uses a fixed-share learner with a tuned scale
instead, and the paper's analysis clips the gradients at a bound M (best-arm's
M = inf, unused, as here).

Sources checked: eta_t = 1 / sqrt(t + 1), gamma_t = 1 / (4 sqrt t), the uniform
mixing and the summed supergradients agree with best-arm's
algorithms/gradient_ascent.py. Koolen's `Menard` (in
rctzeng/NeurIPS2021-Fast-Pure-Exploration-via-Frank-Wolfe standard/samplingrules.jl,
a copy of tidnabbil's purex_games_paper code) indeed uses a `FixedShare` learner with a
`scale` parameter, the plain (not optimistic) gradient at the best response,
and tracks the learner's w without mixing. The paper's algorithm, step sizes
and clipping bound were not checked (no stored copy of the paper's body was
found here).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.rules.base import Rule, leader, least_sampled
from jbai.rules.learners import best_response, track_deficit


class AscentState(NamedTuple):
  w: jax.Array        # [K] float, the learner's iterate w~_t
  total: jax.Array    # [K] float, G_t, the summed gradients
  deficit: jax.Array  # [K] float, sum_s w'_s - T_t


@cached
def gradient_ascent() -> Rule:
  """Gradient ascent (Menard 2019): exponential weights on the empirical Gamma(w), mixed with uniform.

  Returns:
    The rule.
  """

  def init(num_arms):
    dtype = jnp.result_type(float)
    return AscentState(w=jnp.full(num_arms, 1.0 / num_arms, dtype),
                       total=jnp.zeros(num_arms, dtype), deficit=jnp.zeros(num_arms, dtype))

  def select(key, family, arm_stats, state):
    k_top, k_resp, k_arm = jax.random.split(key, 3)
    counts, t, mean = arm_stats.counts, arm_stats.t, arm_stats.mean
    num_arms = counts.shape[-1]
    initial = jnp.min(counts) == 0
    tf = jnp.maximum(t, 1).astype(state.w.dtype)
    top = leader(k_top, arm_stats)
    grad = best_response(k_resp, family, state.w, mean, top).gradient
    total = jnp.where(initial, state.total, state.total + grad.astype(tf.dtype))
    w = jnp.where(initial, state.w, jax.nn.softmax(total / jnp.sqrt(tf + 1)))
    gamma = 0.25 / jnp.sqrt(tf)
    mixed = (1 - gamma) * w + gamma / num_arms
    arm, deficit = track_deficit(jax.random.uniform(k_arm), state.deficit, mixed,
                                 least_sampled(counts), initial)
    return arm, AscentState(w=w, total=total, deficit=deficit)

  return Rule("gradient-ascent", init, select)
