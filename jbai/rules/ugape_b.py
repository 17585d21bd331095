"""UGapE-b, fixed budget (Gabillon, Ghavamzadeh & Lazaric 2012, Figure 1, m = 1, eps = 0).

"Best Arm Identification: A Unified Approach to Fixed Budget and Fixed
Confidence" (NeurIPS 2012). With a budget n, the confidence width of arm k is

  beta_k(t) = sqrt(a (n - K) / T_k(t)),

U = mu_hat + beta and L = mu_hat - beta, the gap index B_k(t) = max_{i != k} U_i
- L_k, the arm J(t) = argmin_k B_k(t) and its contender u_t = argmax_{j != J(t)}
U_j: pull whichever of J(t) and u_t has the larger beta (the fewer pulls; ties to
J(t)), after one pull of each arm. The rule recommends the arm J(s) of the time
s <= t at which B_{J(s)}(s) was smallest (the paper's output Omega(n) at t = n).

a is the rule's parameter, runtime. The width's a (n - K) is the paper's
exploration parameter, which its theory takes as (n - K) / (4 H_eps), H_eps its
complexity, for rewards in [0, 1]: the budget's part, n - K, is already in the
width (n comes from the run, `jbai.stops.budget`), so that a is tied to the budget
by construction and its theory value a = 1 / (4 H_eps) depends on the gaps alone,
which the rule cannot know (a user who knows H_eps gives a = 1 / (4 H_eps)). Ties
for J(t) and u_t go to the lowest index. The widths are Hoeffding's for bounded
rewards: the rule runs on Bernoulli and Gaussian arms (the sub-Gaussian families,
`jbai.stops.bounds.subgaussian_variance`) and refuses the others, as the
fixed-confidence UGapE does. It never stops by itself: it runs only to a budget
(`Rule.budget`).

Sources: the width, B, J, u and the choice between J and u as the implementation
in xuedong/BestArm.jl states them (src/fixed_budget/ugape_b.jl, `compute_beta`
and `compute_b_value` in src/utils.jl), whose recommendation at each time is the
current J(t) rather than the J of smallest B so far. The fixed-confidence UGapE
is `jbai.rules.ugape`. The paper's text itself was not available here.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.rules.base import Rule, empirical_best, hyper, least_sampled
from jbai.rules.successive_rejects import min_budget
from jbai.state import count_dtype
from jbai.stops import bounds as bounds_lib


class UgapebState(NamedTuple):
  a: jax.Array        # [] float, the exploration parameter a > 0 (a runtime value)
  budget: jax.Array   # [] count_dtype(), the budget n (a runtime value)
  best_gap: jax.Array  # [] float, the smallest B_{J(s)}(s) so far (+inf: none)
  best_arm: jax.Array  # [] int32, its J(s)


def gap_index(arm_stats, state: UgapebState):
  """(J(t), B_{J(t)}(t), u_t, beta): the gap leader, its index, its contender and
  the widths."""
  counts, mean = arm_stats.counts, arm_stats.mean
  num_arms = counts.shape[-1]
  room = jnp.maximum(state.budget - num_arms, 0).astype(mean.dtype)
  beta = jnp.sqrt(state.a * room / jnp.maximum(counts, 1).astype(mean.dtype))
  up, low = mean + beta, mean - beta
  eye = jnp.eye(num_arms, dtype=bool)
  gaps = jnp.max(jnp.where(eye, -jnp.inf, up[None, :]), axis=-1) - low  # [K]
  j = ties.argmin(gaps)
  u = ties.argmax(jnp.where(jnp.arange(num_arms) == j, -jnp.inf, up))
  return j, jnp.min(gaps), u, beta


def _best(arm_stats, state: UgapebState) -> UgapebState:
  """The state with the current J(t) kept where its B is the smallest so far
  (once every arm has a reward)."""
  j, gap, _, _ = gap_index(arm_stats, state)
  better = (jnp.min(arm_stats.counts) > 0) & (gap < state.best_gap)
  return state._replace(best_gap=jnp.where(better, gap, state.best_gap),
                        best_arm=jnp.where(better, j, state.best_arm))


def _select(key, family, arm_stats, state):
  del key
  bounds_lib.checked_variance(family, "ugape-b")  # bounded or sub-Gaussian rewards
  state = _best(arm_stats, state)
  j, _, u, beta = gap_index(arm_stats, state)
  arm = jnp.where(beta[u] > beta[j], u, j)
  counts = arm_stats.counts
  return jnp.where(jnp.min(counts) == 0, least_sampled(counts), arm).astype(jnp.int32), state


def _recommend(key, family, arm_stats, state):
  state = _best(arm_stats, state)
  return jnp.where(state.best_arm >= 0, state.best_arm,
                   empirical_best(key, family, arm_stats, state)).astype(jnp.int32)


def ugape_b(a: float = 1.0) -> Rule:
  """UGapE-b (Gabillon et al. 2012): the less explored of the gap leader and its contender; fixed budget.

  Args:
    a: the exploration parameter a > 0: widths sqrt(a (n - K) / T_k) (the
      paper's theory: a = 1 / (4 H_eps), H_eps its complexity).

  Returns:
    The rule (a fixed-budget rule: `jbai.budget` sets its budget).
  """
  if not (isinstance(a, (int, float)) and 0 < a < float("inf")):
    raise ValueError(f"a must be a number > 0, got {a!r}")

  def init(num_arms):
    return UgapebState(a=hyper(a), budget=jnp.asarray(num_arms + 1, count_dtype()),
                       best_gap=hyper(jnp.inf), best_arm=jnp.asarray(-1, jnp.int32))

  return Rule("ugape-b", init, _select, (("a", float(a)),), runtime=("a",),
              recommend=_recommend, budget=min_budget)
