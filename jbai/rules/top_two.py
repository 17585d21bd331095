"""Leader and challenger plumbing shared by the top-two rules.

A top-two rule (Russo 2016) picks a leader and a challenger at every step and
pulls the leader with probability beta, else the challenger. jbai's top-two rules
differ only in the leader, the challenger, the source of beta and the forced
exploration, so each rule file is a single call of `top_two_rule`:

  rule        leader            challenger                       exploration
  t3c         Thompson sample   TC: argmin_j W_t(L, j)           posterior sampling
  ttts        Thompson sample   argmax of a posterior draw given  posterior sampling
                                that it is not L (exact)
  ebtc        empirical best    TC                               forced (U_t)
  ebtci       empirical best    TCI: argmin_j W_t(L, j) + log T_t(j)   TCI penalty
  tstci       Thompson sample   TCI                              posterior + penalty
  t3c-tuned   Thompson sample   TC, beta_t = w_top(nu_hat_t)     posterior sampling

A fixed beta is a runtime value: it lives in the rule's state (`TopTwoState`),
so that every beta of a sweep runs the same compiled program (see
jbai.rules.base).

W_t(L, j) is the transport cost (jbai.transport) with the counts as weights and
the projected sample means as means, 0 when mu_t(j) >= mu_t(L): the GLLR of
"L beats j" evaluated at the sample means. Every rule first pulls each arm once
(the least-sampled arm while some count is 0), as its paper does. Ties, in the
empirical best arm, the Thompson leader and the challenger's argmin, are broken
uniformly at random (`jbai.ties.argmax_random`).
"""

from typing import Callable, NamedTuple, Union

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.families.base import Family
from jbai.rules.base import Rule, hyper, no_state, under_explored
from jbai.state import ArmStats
from jbai.ties import argmax_random, first_max
from jbai.transport import pair_costs

Leader = Callable[[jax.Array, Family, ArmStats], jax.Array]
Challenger = Callable[[jax.Array, Family, ArmStats, jax.Array, jax.Array], jax.Array]
Pair = Callable[[jax.Array, jax.Array, Family, ArmStats, jax.Array], tuple]
Beta = Union[float, jax.Array, Callable[[Family, ArmStats], jax.Array]]


class TopTwoState(NamedTuple):
  beta: jax.Array   # [] float, probability of pulling the leader
  score: jax.Array  # [] float, sum over the coin flips so far of d/dbeta log P(flip)


def check_beta(beta: float) -> float:
  """Validates a fixed top-two parameter beta in (0, 1)."""
  if not 0.0 < beta < 1.0:
    raise ValueError(f"beta must be in (0, 1), got {beta!r}")
  return float(beta)


def check_posterior(family: Family, rule_name: str) -> None:
  """Raises ValueError when a Thompson-sampling rule meets a family without a posterior."""
  if family.posterior_sample is None:
    raise ValueError(
        f"rule {rule_name!r} samples the posterior, but family {family.name!r} has "
        "no posterior_sample; use an empirical-best rule (ebtc, ebtci) instead")


def eb_leader(key: jax.Array, family: Family, arm_stats: ArmStats) -> jax.Array:
  """EB leader: the empirical best arm (argmax of the projected sample means)."""
  del family
  return argmax_random(key, arm_stats.mean)


def ts_leader(key: jax.Array, family: Family, arm_stats: ArmStats) -> jax.Array:
  """TS leader: the argmax of one draw of the means from the posterior."""
  k_draw, k_tie = jax.random.split(key)
  theta = family.posterior_sample(k_draw, arm_stats.counts, arm_stats.stats)
  return argmax_random(k_tie, theta)


def transport_costs(family: Family, arm_stats: ArmStats, lead: jax.Array) -> jax.Array:
  """[K] W_t(lead, j) with counts as weights and sample means; +inf at the leader."""
  return pair_costs(family, arm_stats.counts, arm_stats.mean, lead, stats=arm_stats.stats)


def tc_challenger(key: jax.Array, family: Family, arm_stats: ArmStats,
                  lead: jax.Array, active: jax.Array) -> jax.Array:
  """TC challenger (Shang et al. 2020): argmin_{j != L} W_t(L, j)."""
  del active
  return argmax_random(key, -transport_costs(family, arm_stats, lead))


def tci_challenger(key: jax.Array, family: Family, arm_stats: ArmStats,
                   lead: jax.Array, active: jax.Array) -> jax.Array:
  """TCI challenger (Jourdan et al. 2022): argmin_{j != L} W_t(L, j) + log T_t(j)."""
  del active
  costs = transport_costs(family, arm_stats, lead)
  penalty = jnp.log(jnp.maximum(arm_stats.counts, 1).astype(costs.dtype))
  return argmax_random(key, -(costs + penalty))


@cached
def leader_and_challenger(leader_fn: Leader, challenger_fn: Challenger) -> Pair:
  """The pair function of a leader and a challenger drawn apart."""

  def pair(k_lead, k_chal, family, arm_stats, active):
    lead = leader_fn(k_lead, family, arm_stats)
    return lead, challenger_fn(k_chal, family, arm_stats, lead, active)

  return pair


def top_two_step(key: jax.Array, family: Family, arm_stats: ArmStats, *, pair_fn: Pair,
                 beta: Beta, forced_exploration: bool):
  """One top-two step: the arm to pull and the score of its coin flip.

  Args:
    key: the step's key.
    family: the reward family.
    arm_stats: statistics of the rewards so far.
    pair_fn: pair(key_lead, key_chal, family, arm_stats, active) -> (leader,
      challenger), the challenger an arm other than the leader; `active` is True
      when the challenger is pulled this step, so that a costly challenger
      (TTTS) may skip its work otherwise (`leader_and_challenger` builds it from
      a leader and a challenger function).
    beta: probability of pulling the leader: a number, a [] array (the rule's
      state) or a function beta(family, arm_stats) -> [] (T3C with beta tuning).
    forced_exploration: pull the least-sampled arm while some arm has
      T_t(i) <= ceil(sqrt(t/K)) (the set U_t of jbai.rules.base.under_explored).

  Returns:
    ([] int32 arm, [] float d/dbeta log P(flip)): 1/beta when the coin picks the
    leader, -1/(1 - beta) when it picks the challenger, 0 when the step explores
    (the flip then does not change the arm).
  """
  k_lead, k_coin, k_chal = jax.random.split(key, 3)
  counts = arm_stats.counts
  if forced_exploration:
    explore = under_explored(counts, arm_stats.t)
  else:
    explore = jnp.min(counts) == 0  # initialisation: each arm once
  b = beta(family, arm_stats) if callable(beta) else beta
  u = jax.random.uniform(k_coin, dtype=arm_stats.mean.dtype)
  b = jnp.asarray(b, u.dtype)
  pull_leader = u < b
  lead, chal = pair_fn(k_lead, k_chal, family, arm_stats, ~pull_leader & ~explore)
  arm = jnp.where(pull_leader, lead, chal)
  score = jnp.where(explore, 0.0, jnp.where(pull_leader, 1 / b, -1 / (1 - b)))
  return jnp.where(explore, first_max(-counts), arm).astype(jnp.int32), score


def top_two_arm(key: jax.Array, family: Family, arm_stats: ArmStats, **kwargs) -> jax.Array:
  """The arm of `top_two_step` (same arguments)."""
  return top_two_step(key, family, arm_stats, **kwargs)[0]


def top_two_rule(name: str, params: tuple, *, beta: Beta, leader_fn: Leader = None,
                 challenger_fn: Challenger = None, pair_fn: Pair = None,
                 forced_exploration: bool = False) -> Rule:
  """Builds a top-two `Rule` from its leader and challenger functions, or from
  one function that draws both (`pair_fn`, as TTTS does), and its beta.

  A fixed beta (a number, validated by the caller) is the rule's state,
  `TopTwoState(beta, score)`, and a runtime parameter: rules that differ in beta
  alone share one compiled program; the state also accumulates the policy score
  of beta (`Rule.score`), for likelihood-ratio gradients in beta. A beta
  function is part of the program (the state is then empty).

  A rule whose leader is `ts_leader` checks, when first traced, that the family
  has a posterior (ValueError otherwise).
  """
  if pair_fn is None:
    pair_fn = leader_and_challenger(leader_fn, challenger_fn)
  needs_posterior = leader_fn is ts_leader
  if callable(beta):
    return Rule(name, no_state, _select(name, pair_fn, beta, forced_exploration,
                                        needs_posterior), params)

  def init(num_arms):
    del num_arms
    return TopTwoState(beta=hyper(beta), score=hyper(0.0))

  return Rule(name, init, _select(name, pair_fn, None, forced_exploration, needs_posterior),
              params, runtime=("beta",), score=beta_score)


def beta_score(state: TopTwoState) -> dict:
  """The policy score of a fixed beta, accumulated in the state (`Rule.score`)."""
  return {"beta": state.score}


@cached
def _select(name: str, pair_fn: Pair, beta_fn, forced_exploration: bool,
            needs_posterior: bool):
  """The `select` of a top-two rule: one function for every fixed beta (read from
  the state), or for the beta function `beta_fn`."""
  tuned = beta_fn is not None

  def select(key, family, arm_stats, state):
    if needs_posterior:
      check_posterior(family, name)
    arm, score = top_two_step(key, family, arm_stats, pair_fn=pair_fn,
                              beta=beta_fn if tuned else state.beta,
                              forced_exploration=forced_exploration)
    return arm, state if tuned else state._replace(score=state.score + score)

  return select
