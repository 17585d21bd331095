"""The pieces of the game rules: best responses, AdaHedge, tracking (their KL
confidence bounds are `jbai.stops.bounds.kl_bound`).

The saddle-point rules (`dkm`, `gradient-ascent`, `optimistic-tas`) see best-arm
identification as the game max_{w in simplex} min_{lambda in Alt(i)}
sum_k w_k d(mu_k, lambda_k) (Degenne, Koolen & Menard 2019; Garivier & Kaufmann
2016, Lemma 1). For the answer i (the empirical best arm) the
lambda-player's best response to w is the closest alternative: with j the
challenger minimising the transport cost C_j(w) (jbai.transport), lambda equals mu
except lambda_i = lambda_j = x_j, the transport minimiser. Its gradient in w is
(d(mu_k, lambda_k))_k: kl(mu_i, x_j) at i, kl(mu_j, x_j) at j, 0 elsewhere (the
envelope theorem; the same vector as `jbai.rules.fws.fw_direction`'s a_j, b_j).

AdaHedge (de Rooij, van Erven, Grunwald & Koolen 2014) is the w-player of
Degenne et al.'s Algorithm 1, written as in Koolen's code (tidnabbil, regret.jl):
weights softmax(-eta L), eta = log K / Delta, Delta (initially 0.01) grows by the
mixability gap of each round. The losses are kept shifted so that min L = 0:
AdaHedge is invariant to such shifts and float32 keeps its precision.

Cumulative tracking (C-tracking without projection, as Degenne et al. 2019 track;
tidnabbil's CTracking): pull argmax_k sum_{s <= t} w_k(s) - T_t(k); the rules keep
the deficit sum_s w(s) - T_t, like jbai.rules.tas.

Sources checked: AdaHedge's Delta = 0.01 at the start and eta = log K / Delta,
and the tracking argmin_k T_t(k) - sum_s w_k(s), agree with best-arm
(algorithms/adahedge.py). Koolen's regret.jl and tracking.jl (tidnabbil; the
copy of its purex_games_paper code found here, in
rctzeng/NeurIPS2021-Fast-Pure-Exploration-via-Frank-Wolfe, lacks both), the
algorithm number of Degenne et al. and de Rooij et al.'s AdaHedge were not
checked against their text or code.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.families.base import Family
from jbai.ties import argmax_random_ties, argmax_ties
from jbai.transport import transport_cost


class Hedge(NamedTuple):
  """AdaHedge's state, one learner per row (one per answer in `dkm`)."""

  loss: jax.Array   # [M, K] float, cumulative losses minus their row minimum
  delta: jax.Array  # [M] float, Delta, the cumulative mixability gap (plus 0.01)


def hedge_init(num_learners: int, num_arms: int, dtype=None) -> Hedge:
  dtype = dtype or jnp.result_type(float)
  return Hedge(loss=jnp.zeros((num_learners, num_arms), dtype),
               delta=jnp.full(num_learners, 0.01, dtype))


def hedge_weights(loss: jax.Array, delta: jax.Array) -> jax.Array:
  """AdaHedge's weights softmax(-eta L), eta = log K / Delta, for one learner."""
  eta = jnp.log(loss.shape[-1]) / delta
  return jax.nn.softmax(-eta * (loss - jnp.min(loss)))


def hedge_update(hedge: Hedge, row: jax.Array, loss: jax.Array) -> Hedge:
  """Learner `row` incurs the loss vector `loss` [K]: L += loss, Delta += u.loss - m,
  with m = M(L + loss) - M(L) the mix loss, M(L) = -log(mean exp(-eta L)) / eta."""
  num_arms = loss.shape[-1]
  mine = jnp.arange(hedge.delta.shape[0]) == row
  cum = jnp.sum(jnp.where(mine[:, None], hedge.loss, 0.0), axis=0)
  delta = jnp.sum(jnp.where(mine, hedge.delta, 0.0))
  eta = jnp.log(num_arms) / delta
  u = hedge_weights(cum, delta)

  def mix(values):
    low = jnp.min(values)
    return low - jnp.log(jnp.mean(jnp.exp(-eta * (values - low)))) / eta

  new = cum + loss
  gap = jnp.maximum(jnp.dot(u, loss) - (mix(new) - mix(cum)), 0.0)
  return Hedge(loss=jnp.where(mine[:, None], new - jnp.min(new), hedge.loss),
               delta=jnp.where(mine, delta + gap, hedge.delta))


class Response(NamedTuple):
  challenger: jax.Array  # [] int32, the arm j of the closest alternative
  alt: jax.Array         # [K] float, lambda: the closest alternative's means
  gradient: jax.Array    # [K] float, (d(mu_k, lambda_k))_k


def best_response(key: jax.Array, family: Family, w: jax.Array, mean: jax.Array,
                  top: jax.Array) -> Response:
  """The lambda-player's best response to w in Alt(top) (module docstring).

  Args:
    key: breaks ties between challengers of equal cost.
    family: the reward family.
    w: [K] the allocation (or counts).
    mean: [K] the means.
    top: [] int, the answer whose alternatives are searched.

  Returns:
    A `Response`.
  """
  num_arms = mean.shape[-1]
  is_top = jnp.arange(num_arms) == top
  cost = transport_cost(family, w[top], mean[top], w, mean)
  j = argmax_random_ties(key, jnp.where(is_top, -jnp.inf, -cost.value)).astype(jnp.int32)
  moved = is_top | (jnp.arange(num_arms) == j)
  alt = jnp.where(moved, cost.x[j], mean)
  gradient = jnp.maximum(family.kl(mean, alt), 0.0)  # KL rounds to < 0 near ties
  return Response(challenger=j, alt=alt, gradient=jnp.where(moved, gradient, 0.0))


def track_deficit(u: jax.Array, deficit: jax.Array, w: jax.Array,
                  forced_arm: jax.Array, forced: jax.Array):
  """Cumulative tracking: (arm, deficit) after adding w to sum_s w(s) - T_t.

  Where `forced` (the first pulls), `forced_arm` is pulled and w is not added
  (the sum starts at the counts of the first pulls, as tidnabbil's CTracking(N)).
  `u` is a uniform that breaks ties.
  """
  deficit = jnp.where(forced, deficit, deficit + w)
  arm = jnp.where(forced, forced_arm, argmax_ties(u, deficit)).astype(jnp.int32)
  pulled = (jnp.arange(w.shape[-1]) == arm) & ~forced
  return arm, deficit - pulled.astype(deficit.dtype)
