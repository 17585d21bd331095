"""TCB on the linear model: the challenger's transport cost raised by the arm that raises it most.

TCB (`jbai.rules.tcb`) balances two transport costs: with independent arms, the
cost C_j of the cheapest alternative (the challenger j against the leader) grows
only with the leader's count and j's, and TCB's look-ahead chooses which of the
two to pull. On the linear model (`jbai.linear.linear_family`) every arm's pull
informs theta, and C_j(N) = (y^T theta_hat)_+^2 / (2 ||y||^2_{V(N)^-1}), y =
x_lead - x_j, V(N) = lambda I + sum_a N_a x_a x_a^T / sigma^2, grows with every arm
whose features have a component along V^-1 y. Run unchanged, TCB pulls only the
leader and the challenger and never the arm that carries the information (on
Soare et al.'s instance, the third arm e_2 where w* puts 95% of the pulls):
docs/guide/linear.md measures it at 8 to 65 times T* log(1/delta).

This rule keeps TCB's leader (the empirical best arm), its challenger (the arm of
least transport cost from the leader, eq. a_t^K, here the linear cost of the
`Family.pair_costs` hook) and its forced exploration (an arm with T_t(i) <=
ceil(sqrt(t / K)) is pulled first, least-sampled arm, lowest index), and replaces
the choice between leader and challenger by the choice, among all K arms, of the
one whose next pull raises C_j(N) most: with theta_hat held,

  argmax_a C_j(N + e_a) = argmax_a (x_a^T V^-1 y)^2 / (sigma^2 + x_a^T V^-1 x_a)

(Sherman-Morrison). With independent arms (X = I, lambda -> 0) the candidates
are the leader and the challenger again, and the arm taken is the one whose
weight, against its share of the pair's variance, is smaller: the balance of
the two costs that TCB's look-ahead reaches. Ties at random with the step's key.

Departures: the selection is the greedy step of LinGapE (Xu, Honda & Sugiyama
2018, eq. (9)) on TCB's challenger, which has no confidence bonus, so the rule
takes no delta; no optimality proof for the linear model is claimed (the
paper's is for independent arms), and its stopping times are measured against
T* in docs/guide/linear.md. Linear model only: any other family is refused in
one line.
"""

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.linear.family import design_inverse, direction_gain, spec_of
from jbai.rules.base import Rule, least_sampled, no_state, under_explored
from jbai.ties import argmax_random_ties
from jbai.transport import pair_costs

NAME = "tcb-linear"


def _select(key, family, arm_stats, state):
  spec = spec_of(family, f"rule {NAME!r}")
  dtype = arm_stats.mean.dtype
  x, v_inv = design_inverse(family, arm_stats.counts, dtype)
  k_lead, k_ch, k_arm = jax.random.split(key, 3)
  lead = argmax_random_ties(k_lead, arm_stats.mean)
  costs = pair_costs(family, arm_stats.counts.astype(dtype), arm_stats.mean, lead)
  challenger = argmax_random_ties(k_ch, -costs)
  y = x[lead] - x[challenger]                                   # the challenger's direction
  arm = argmax_random_ties(k_arm, direction_gain(x, v_inv, y, spec.sigma))
  forced = under_explored(arm_stats.counts, arm_stats.t)
  return jnp.where(forced, least_sampled(arm_stats.counts), arm).astype(jnp.int32), state


@cached
def tcb_linear() -> Rule:
  """TCB on the linear model: the leader's cheapest alternative, raised by the arm
  whose pull raises its transport cost most (forced exploration as TCB's).
  Linear model only.

  Returns:
    The rule.
  """
  return Rule(NAME, no_state, _select)


__all__ = ["NAME", "tcb_linear"]
