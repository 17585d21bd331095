"""EB-TC_eps: empirical-best leader, TC_eps challenger, tracking (Jourdan, Degenne & Kaufmann 2023).

"An eps-best-arm identification algorithm for fixed-confidence and beyond"
(NeurIPS 2023), Algorithm 1 (EB-TC_eps0), for eps-good answers: an arm i with
mu_i >= max mu - eps. After one pull of each arm, at every step n:

  leader      B_n = argmax_i mu_{n,i}, the empirical best arm;
  challenger  C_n = argmin_{j != B_n} W^eps_n(B_n, j), the TC_eps challenger, with
              W^eps_n(i, j) = min_x N_i kl(mu_i, x) + N_j kl(mu_j, x + eps), the
              GLLR of "j beats i by eps" at the sample means (the cost of
              `jbai.eps_transport.eps_transport`): for Gaussian arms
              (mu_B - mu_j + eps)^2 / (2 sigma^2 (1/N_B + 1/N_j)), whose argmin is
              the paper's argmin of (mu_B - mu_j + eps) / sqrt(1/N_B + 1/N_j);
  proportion  beta_n(B_n, C_n) = beta (fixed), or by information-directed
              selection (IDS, You et al. 2023) N_C / (N_B + N_C) for Gaussian
              arms: the leader's share N_B kl(mu_B, x*) / W^eps_n(B_n, C_n) of the
              cost, x* its minimiser, which is the form used for other families;
  tracking    one tracker per (leader, challenger) pair (K per leader): with
              T_{n+1}(i, j) the steps whose pair was (i, j), this one included,
              N^i_{n,j} those of them that pulled j, and beta-bar the mean of
              beta_t over them, pull C_n if N^{B_n}_{n,C_n} <= (1 - beta-bar)
              T_{n+1}(B_n, C_n), else B_n.

There is no forced exploration: the slack eps > 0 makes every arm a challenger
often enough (the paper's point against EB-TC, `jbai.rules.ebtc`, which needs
it). Ties for the leader and the challenger are broken uniformly at random
(`jbai.ties.argmax_random`), as in the other top-two rules. The rule's own
stop is the eps-GLLR with the same eps (`jbai.stops.eps_good.eps_gllr`, against
the gk16 threshold), so that a run counts an error as an answer that is not
eps-good.

Sources and differences: the rule follows Algorithm 1 of the paper as recalled
here (the stored copies of the paper give only its abstract, e.g.
http://papers.nips.cc/paper_files/paper/2023/hash/358e4a39b8ace4744fbad77e84a7e757-Abstract-Conference.html,
and the authors' code was not found), with the sampling slack eps0 equal to the
stop's eps, as the paper does for fixed confidence. Where jbai differs: the
paper treats Gaussian arms; other families use the family's eps-shifted cost and
the general IDS proportion above (an extension). The paper's experiments stop
with their own threshold; jbai's default is gk16 (any GLLR threshold may be
given). The stop answers the lowest-index empirical best arm (`jnp.argmax`),
the rule's leader breaks ties at random: they differ only while the empirical
best is tied.
"""

from typing import NamedTuple, Union

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.builders import cached
from jbai.families.base import Family
from jbai.rules.base import Rule, hyper
from jbai.rules.top_two import check_beta, eb_leader
from jbai.state import ArmStats
from jbai.eps_transport import check_slack, eps_transport
from jbai.stops.eps_good import eps_gllr
from jbai.ties import argmax_random, first_max
from jbai.transport import Transport

IDS = "ids"


class EbtcEpsState(NamedTuple):
  eps_good: jax.Array          # [] float, the slack eps > 0 (its own stop reads it too)
  beta: jax.Array              # [] float, the fixed proportion beta (0, unread, with IDS)
  rounds: jax.Array            # [K, K] int32, T_n(i, j): steps with leader i, challenger j
  challenger_pulls: jax.Array  # [K, K] int32, N^i_{n,j}: those of them that pulled j
  beta_sum: jax.Array          # [K, K] float, sum of beta_t over them (IDS; 0 if fixed)


def tc_eps_costs(family: Family, arm_stats: ArmStats, lead: jax.Array,
                 eps: ArrayLike) -> Transport:
  """[K] W^eps_n(lead, j) with counts and sample means (+inf at the leader), and
  [K] the minimisers x*, the leader's mean in each closest alternative."""
  counts, mean = arm_stats.counts, arm_stats.mean
  is_lead = jnp.arange(counts.shape[-1]) == lead
  # Selecting with a mask rather than a gather: it vectorises under vmap.
  n_lead = jnp.sum(jnp.where(is_lead, counts, 0))
  m_lead = jnp.sum(jnp.where(is_lead, mean, 0))
  cost = eps_transport(family, n_lead, m_lead, counts, mean, eps)
  return Transport(jnp.where(is_lead, jnp.inf, cost.value), cost.x)


def ids_beta(family: Family, arm_stats: ArmStats, lead: jax.Array, chal: jax.Array,
             costs: Transport) -> jax.Array:
  """[] float, the IDS proportion of the pair: N_C / (N_B + N_C) for Gaussian arms,
  else N_B kl(mu_B, x*) / W^eps(B, C) (the Gaussian value where the cost is 0 or
  infinite)."""
  arms = jnp.arange(arm_stats.counts.shape[-1])
  dtype = arm_stats.mean.dtype
  n_lead, n_chal = (jnp.sum(jnp.where(arms == a, arm_stats.counts, 0)).astype(dtype)
                    for a in (lead, chal))
  gaussian = n_chal / (n_lead + n_chal)
  if family.name == "gaussian":
    return gaussian
  m_lead = jnp.sum(jnp.where(arms == lead, arm_stats.mean, 0))
  x, cost = (jnp.sum(jnp.where(arms == chal, v, 0)) for v in (costs.x, costs.value))
  usable = jnp.isfinite(cost) & (cost > 0)
  share = n_lead * family.kl(m_lead, x) / jnp.where(usable, cost, 1.0)
  return jnp.where(usable, jnp.clip(share, 0.0, 1.0), gaussian)


def ebtc_eps_step(key: jax.Array, family: Family, arm_stats: ArmStats,
                  state: EbtcEpsState, *, ids: bool):
  """One step of EB-TC_eps: the arm to pull and the trackers after it.

  Args:
    key: the step's key.
    family: the reward family.
    arm_stats: statistics of the rewards so far.
    state: the trackers, the slack eps > 0 of the TC_eps challenger and the
      fixed beta.
    ids: beta by information-directed selection, else the state's fixed beta.

  Returns:
    ([] int32 arm, the new state); the least-sampled arm, the state unchanged,
    while some arm has no reward.
  """
  k_lead, k_chal = jax.random.split(key)
  counts = arm_stats.counts
  lead = eb_leader(k_lead, family, arm_stats)
  costs = tc_eps_costs(family, arm_stats, lead, state.eps_good)
  chal = argmax_random(k_chal, -costs.value)
  arms = jnp.arange(counts.shape[-1])
  pair = (arms[:, None] == lead) & (arms[None, :] == chal)  # [K, K] one-hot
  rounds = state.rounds + pair.astype(state.rounds.dtype)
  n_rounds = jnp.sum(jnp.where(pair, rounds, 0)).astype(state.beta_sum.dtype)
  pulled = jnp.sum(jnp.where(pair, state.challenger_pulls, 0))
  if ids:
    beta_sum = state.beta_sum + jnp.where(
        pair, ids_beta(family, arm_stats, lead, chal, costs).astype(state.beta_sum.dtype), 0)
    target = n_rounds - jnp.sum(jnp.where(pair, beta_sum, 0))  # (1 - beta-bar) T
  else:
    beta_sum = state.beta_sum
    target = (1 - state.beta) * n_rounds
  pull_chal = pulled <= target
  arm = jnp.where(pull_chal, chal, lead)
  explore = jnp.min(counts) == 0  # initialisation: each arm once
  new = state._replace(
      rounds=rounds,
      challenger_pulls=state.challenger_pulls + (pair & pull_chal).astype(rounds.dtype),
      beta_sum=beta_sum)
  new = jax.tree.map(lambda old, upd: jnp.where(explore, old, upd), state, new)
  return jnp.where(explore, first_max(-counts), arm).astype(jnp.int32), new


@cached
def _select(ids: bool):
  """The `select` of EB-TC_eps for one beta mode (every eps and fixed beta share it)."""

  def select(key, family, arm_stats, state):
    return ebtc_eps_step(key, family, arm_stats, state, ids=ids)

  return select


def ebtc_eps(eps_good: float = 0.1, beta: Union[float, str] = 0.5) -> Rule:
  """EB-TC_eps (Jourdan et al. 2023): empirical best, TC_eps challenger, tracking; stop: eps-GLLR.

  Args:
    eps_good: the slack eps > 0 of the challenger and of the stop: the answer is
      eps-good, mu_answer >= max mu - eps (a runtime value, as beta is: every
      eps shares one compiled program, and `jbai.rollout`'s params vmap over it).
    beta: the leader's proportion, in (0, 1) (a runtime value: every beta shares
      one compiled program), or "ids" for information-directed selection.

  Returns:
    The rule, with the eps-GLLR against gk16 as its own stop.

  Raises:
    ValueError: for eps_good <= 0 or not finite (eps = 0 is `jbai.rules.ebtc`),
      or beta outside (0, 1) and not "ids".

  Example:
    >>> from jbai import rules
    >>> rules.ebtc_eps(0.1)
    ebtc-eps(eps_good=0.1, beta=0.5)
    >>> rules.ebtc_eps(0.1, beta="ids").stop
    eps-gllr(eps=0.1, threshold=gk16())
  """
  eps = check_slack(eps_good, exact_rule="ebtc")
  ids = isinstance(beta, str) and beta.lower() == IDS
  if not ids:
    if isinstance(beta, str):
      raise ValueError(f"beta must be a number in (0, 1) or {IDS!r}, got {beta!r}")
    beta = check_beta(beta)

  def init(num_arms):
    zeros = jnp.zeros((num_arms, num_arms), jnp.int32)
    return EbtcEpsState(eps_good=hyper(eps), beta=hyper(0.0 if ids else beta), rounds=zeros,
                        challenger_pulls=zeros, beta_sum=hyper(jnp.zeros_like(zeros)))

  return Rule("ebtc-eps", init, _select(ids),
              (("eps_good", eps), ("beta", IDS if ids else beta)),
              runtime=("eps_good",) if ids else ("eps_good", "beta"),
              stop=eps_gllr(eps, "gk16", from_rule=True))


def ebtc_eps_ids(eps_good: float = 0.1) -> Rule:
  """EB-TC_eps with information-directed selection of beta (IDS); stop: eps-GLLR.

  `ebtc_eps(eps_good, beta="ids")`, under a name of its own for the command line.

  Args:
    eps_good: the slack eps > 0 of the challenger and of the stop.

  Returns:
    The rule.
  """
  return ebtc_eps(eps_good, beta=IDS)
