"""TCB: Transportation Cost Balancing (the paper's eq. sampling rule, Algorithm 1).

With the sample means projected on Theta, the leader a_t^top (empirical top arm) and
the empirical transport costs C_i(w) = min_{x in I_t,i} w_top d_U(P_t,top, x) +
w_i d_L(P_t,i, x) (Gamma_t(w) = min_i C_i(w), eq. Gamma_t):

  1. forced exploration: if some arm has T_t(i) <= ceil(sqrt(t/K)) (the set U_t),
     pull the least-sampled arm (lowest index among ties);
  2. else compare the look-ahead allocation w'_t, which moves r_t of mass to the
     leader and takes r_t/(K-1) from every other arm (eq. look ahead), with T_t/t:
     pull the leader if Gamma_t(w'_t) >= Gamma_t(T_t/t), else a_t^min, the arm
     attaining the minimum in Gamma_t(T_t/t) (eq. a_t^K).

r_t = eps / t (the paper's appendix, Lemma con_alloc_3), capped so that w'_t stays
on the simplex. Gamma_t is 1-homogeneous in w, so the comparison is made in counts:
Gamma_t(t w'_t) >= Gamma_t(T_t), with t w'_t = T_t + eps on the leader and
T_t - eps/(K-1) elsewhere. The counts are exact in floating point, so the costs
that the step compares come from exact weights (no division by t to round). The argmin for a_t^min runs over [K] minus {top} (the algorithm
box and eq. Gamma_t; eq. a_t^K writes another set, see docs/design/paper.md). Ties
between equal means for the leader, and between equal costs for a_t^min, are
broken uniformly at random with the step's key; the equality case
Gamma_t(w') = Gamma_t(T/t), which eq. (sampling rule) leaves open, pulls the leader
as the appendix's proof does.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.rules.base import Rule, hyper, least_sampled, under_explored
from jbai.ties import argmax_ties
from jbai.transport import pair_costs


class BalanceState(NamedTuple):
  """The state of TCB and ITCB: their look-ahead step, a runtime value."""

  eps: jax.Array  # [] float, r_t = eps / t


def look_ahead(w: jax.Array, top: jax.Array, r: jax.Array) -> jax.Array:
  """w'_t of eq. (look ahead): r more on the leader, r/(K-1) less on the others
  (w and r may be scaled alike: counts T_t and eps give t w'_t).

  r is capped at (K-1) min_{i != top} w_i so that w' stays on the simplex.
  """
  num_arms = w.shape[-1]
  is_top = jnp.arange(num_arms) == top
  r = jnp.minimum(r, (num_arms - 1) * jnp.min(jnp.where(is_top, jnp.inf, w)))
  return jnp.where(is_top, w + r, w - r / (num_arms - 1))


def balance(key, family, arm_stats, eps, penalty):
  """The shared step of TCB (penalty=False) and ITCB (penalty=True), in counts:
  t C_i(w) = C_i(t w) and t Phi_t's terms C_i(w) + log(t w_i) / t are
  C_i(t w) + log(t w_i), with t w = T_t now and t w'_t ahead."""
  u_top, u_min = jax.random.uniform(key, (2,))
  counts, t = arm_stats.counts, arm_stats.t
  top = argmax_ties(u_top, arm_stats.mean)
  n_now = counts.astype(arm_stats.mean.dtype)
  n_ahead = look_ahead(n_now, top, eps)

  def cost(n):
    costs = pair_costs(family, n, arm_stats.mean, top, stats=arm_stats.stats)
    if penalty:  # Phi_t, times t: + log(t w_i)
      costs = costs + jnp.log(jnp.maximum(n, 1e-30))
    return costs

  costs_now = cost(n_now)
  challenger = argmax_ties(u_min, -costs_now)
  pull_top = jnp.min(cost(n_ahead)) >= jnp.min(costs_now)
  arm = jnp.where(pull_top, top, challenger)
  return jnp.where(under_explored(counts, t), least_sampled(counts), arm).astype(jnp.int32)


def tcb(eps: float = 1.0) -> Rule:
  """TCB, transportation cost balancing (Mukherjee & Tajer), beta-free and asymptotically optimal.

  Args:
    eps: look-ahead step r_t = eps / t.

  Returns:
    The rule.
  """
  return balancing_rule("tcb", eps, _select)


def balancing_rule(name: str, eps: float, select) -> Rule:
  """A rule of the TCB kind: `select` with the look-ahead step eps > 0, a runtime
  value that lives in the state."""
  if not eps > 0:
    raise ValueError(f"eps must be > 0, got {eps!r}")
  return Rule(name, lambda num_arms: BalanceState(hyper(eps)), select,
              (("eps", float(eps)),), runtime=("eps",))


def _select(key, family, arm_stats, state):
  return balance(key, family, arm_stats, state.eps, penalty=False), state
