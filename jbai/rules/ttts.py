"""TTTS: Top-Two Thompson Sampling (Russo 2016), with the challenger drawn exactly.

Leader: L = argmax of one posterior draw. With probability beta pull L; else
pull the challenger J = argmax of a posterior draw theta conditioned on
U = {argmax theta != L}. Each arm is pulled once first; posterior sampling explores.

The challenger is drawn exactly, with no cap and no fallback, by one of two
rejection samplers chosen from the arm statistics alone (so the choice does not
bias the law):

  * plain: draw theta until argmax theta != L; acceptance P(U).
  * union (Karp, Luby & Madras 1989): U is the disjoint union of
    B_k = {argmax theta = k}, k != L, and B_k lies in A_k = {theta_k > theta_L}.
    With an envelope g_k >= pi_L pi_k on A_k of mass M_k, pick k with probability
    M_k / sum M, draw (theta_L, theta_k) from g_k on A_k and the other arms from
    their posteriors, and accept when theta is in B_k, with probability
    pi_L pi_k / g_k: an accepted draw has the law of theta given U. Acceptance
    P(U) / sum_k M_k; used where sum_k M_k < 1.

Envelopes: in a scale z where the posterior's log-density l is strongly concave,
-l'' >= kappa (jbai.random.posteriors), l(z) <= l(x) + l'(x)(z - x) - kappa (z - x)^2 / 2
at the tangent point x, the maximiser of l_L + l_k. So g_k is a product of two
Gaussians: its mass on A_k is a normal CDF (log_ndtr), and a draw is
D = z_k - z_L from a truncated normal (jbai.random.samplers) and z_L given D.

A round draws the posterior once and makes one proposal (the union sampler tries
FIT_TRIES candidate pairs, the first that fits goes on); a lax.while_loop draws
rounds while a lane that pulls its challenger has none accepted, up to the guard
MAX_ROUNDS. A family whose posterior carries no law gets plain re-sampling capped
at `max_redraws`, then the TC challenger. Acceptance rates, costs and the reasons
for these choices: docs/design/ttts.md.
"""

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import log_ndtr

from jbai.builders import cached
from jbai.random import samplers
from jbai.random.posteriors import Posterior
from jbai.rules.base import Rule
from jbai.rules.top_two import (check_beta, check_posterior, tc_challenger, top_two_rule,
                                ts_leader)
from jbai.ties import first_max

MAX_ROUNDS = 1000  # guard on the rounds of the loop (never reached in practice)
FIT_TRIES = 2  # candidate pairs per union proposal, the first that fits goes on
REDRAW_BATCH = 10  # posterior draws per pass of the capped loop (families without a law)


class Envelopes(NamedTuple):
  """The masses of the Gaussian envelopes g_k of the pairs (L, k), tangent at
  the maximiser of l_L + l_k (in the comparison scale z)."""

  law_lead: Any        # the law of L alone ([] parameters)
  log_mass: jax.Array  # [K] log M_k, -inf at L


class PairEnvelope(NamedTuple):
  """The envelope of one pair (L, k): g = exp(h_L + h_k) N(z_L; mu_L, var_L)
  N(z_k; mu_k, var_k) 2 pi sqrt(var_L var_k), h = l(x) + l'(x)^2 var / 2,
  mu = x + l'(x) var, with the common tangent point x (rank scale: meet).
  Every field has the shape of the laws' parameters."""

  meet: jax.Array
  grad_lead: jax.Array  # l_L'(x)
  grad_arm: jax.Array   # l_k'(x)
  log_lead: jax.Array   # L's log-kernel at x (log-density minus log_norm)
  log_arm: jax.Array    # k's log-kernel at x
  var_lead: jax.Array   # 1 / kappa_L
  var_arm: jax.Array    # 1 / kappa_k


def pair_envelope(law_lead, law_arm) -> PairEnvelope:
  """The envelope of the pairs (L, k) for the laws of L and of the k's."""
  meet = law_lead.pair_centre(law_arm)
  return PairEnvelope(meet, law_lead.grad(meet), law_arm.grad(meet), law_lead.log_kernel(meet),
                      law_arm.log_kernel(meet), 1 / law_lead.curvature(),
                      1 / law_arm.curvature())


def pick(mask: jax.Array, x: jax.Array) -> jax.Array:
  """x[i] for the one-hot mask of i (a masked sum: cheaper than a gather on CPU)."""
  return jnp.sum(jnp.where(mask, x, 0), axis=-1)


def envelopes(law, lead: jax.Array) -> Envelopes:
  """The masses M_k of the envelopes g_k >= pi_L pi_k on {z_k > z_L} of every
  pair (L, k): exp(h_L + h_k) 2 pi sqrt(var_L var_k) times the normal CDF of
  (mu_k - mu_L) / sqrt(var_L + var_k), where the tangent point cancels.

  Only the masses leave this function: the proposal evaluates its one pair's
  envelope again (`pair_envelope` on scalars), which on CPU costs less than
  carrying the K pairs' fields to it (XLA:CPU then computes them again inside
  every kernel that reads them).
  """
  is_lead = jnp.arange(law.curvature().shape[-1]) == lead
  law_lead = jax.tree.map(lambda x: pick(is_lead, x), law)
  e = pair_envelope(law_lead, law)
  delta = ((e.grad_arm * e.var_arm - e.grad_lead * e.var_lead)
           / jnp.sqrt(e.var_lead + e.var_arm))
  if law.quadratic:  # the envelope is the posterior: its mass is P(z_k > z_L)
    log_mass = log_ndtr(delta)
  else:
    log_norm = law.log_norm()
    height = (e.log_lead + e.grad_lead**2 * e.var_lead / 2 + e.log_arm
              + e.grad_arm**2 * e.var_arm / 2 + log_norm + pick(is_lead, log_norm))
    log_mass = (height + math.log(2 * math.pi) + 0.5 * jnp.log(e.var_lead * e.var_arm)
                + log_ndtr(delta))
  return Envelopes(law_lead, jnp.where(is_lead, -jnp.inf, log_mass))


def union_proposal(key, others, lead, env: Envelopes, law):
  """One proposal of the union sampler: (k [] int32, accepted []).

  others: [K] a posterior draw of every arm (rank scale), independent of key,
  used for the arms other than L and the chosen k. When accepted, the proposal
  is a posterior draw given argmax != L, and k is its argmax.

  The pair (k, theta_L, theta_k) is the first of FIT_TRIES candidates that
  passes the envelope's fit test (u < pi_L pi_k / g_k): the first success of
  independent tries has the law of one success, so the proposal stays exact,
  and only when every candidate fails does the round fail on the fit. The
  candidates are vectorised ([FIT_TRIES] arrays); a quadratic law (its envelope
  is the posterior) makes one.
  """
  num_arms = env.log_mass.shape[-1]
  arms = jnp.arange(num_arms)
  dtype = env.log_mass.dtype
  tries = 1 if law.quadratic else FIT_TRIES
  # One uniform array for every candidate's K + 3 uniforms (one random call, not
  # four: on CPU each call is a kernel of its own).
  u = jax.random.uniform(key, (tries, num_arms + 3), dtype)
  u_k, u_t, u_n, u_a = u[:, :num_arms], u[:, num_arms], u[:, num_arms + 1], u[:, num_arms + 2]
  # k with probability M_k / sum M (Gumbel-max).
  gumbel = -jnp.log(-jnp.log(jnp.maximum(u_k, jnp.finfo(dtype).tiny)))
  k = jax.vmap(first_max)(env.log_mass + gumbel)
  law_k = jax.tree.map(lambda x: pick(arms == k[:, None], x), law)
  e = pair_envelope(env.law_lead, law_k)
  x = law_k.z(e.meet)  # the tangent point in the z scale
  mu_lead, mu_arm = x + e.grad_lead * e.var_lead, x + e.grad_arm * e.var_arm
  gap = mu_arm - mu_lead
  scale = jnp.sqrt(e.var_lead + e.var_arm)
  # D = z_k - z_L ~ N(gap, scale^2) given D > 0; z_L given D.
  t = samplers.truncated_normal_icdf(u_t, -gap / scale)
  z_lead = (mu_lead - t * e.var_lead / scale
            + jnp.sqrt(e.var_lead * e.var_arm) / scale * samplers.standard_normal(u_n))
  z_arm = z_lead + (gap + scale * t)
  r_arm = law_k.rank(z_arm)
  if law.quadratic:
    fits = jnp.ones(r_arm.shape, bool)
  else:
    # pi_L pi_k / g_k at the draw: l minus its quadratic bound, for L and k.
    d_lead, d_arm = z_lead - x, z_arm - x
    log_ratio = (env.law_lead.log_kernel(env.law_lead.rank(z_lead)) - e.log_lead
                 - e.grad_lead * d_lead + d_lead**2 / (2 * e.var_lead)
                 + law_k.log_kernel(r_arm) - e.log_arm - e.grad_arm * d_arm
                 + d_arm**2 / (2 * e.var_arm))
    fits = u_a < jnp.exp(log_ratio)
  first = jnp.arange(tries) == first_max(fits)  # the first candidate that fits
  arm, r_arm = pick(first, k), pick(first, r_arm)
  # theta in B_k: every arm other than L and k below theta_k (NaN outside the support rejects).
  rest = jnp.max(jnp.where((arms == lead) | (arms == arm), -jnp.inf, others))
  return arm.astype(jnp.int32), jnp.any(fits) & (rest < r_arm)


def propose(key, law, lead, env: Envelopes):
  """One round: the challenger of one posterior draw, by the sampler of this
  step (union where sum_k M_k < 1, else plain), or -1 where it is rejected."""
  use_union = jnp.sum(jnp.exp(env.log_mass)) < 1
  others = law.sample(jax.random.fold_in(key, 0))
  arm_union, accepted = union_proposal(jax.random.fold_in(key, 1), others, lead, env, law)
  arm_plain = first_max(others)
  arm = jnp.where(use_union, arm_union, arm_plain)
  ok = jnp.where(use_union, accepted, arm_plain != lead)
  return jnp.where(ok, arm, -1)


def exact_challenger(key, law, lead, active):
  """TTTS's challenger given the leader L and every arm's posterior law, drawn
  exactly: [] int32.

  Every round draws the posterior once and makes one proposal with the sampler
  of this step (union where sum_k M_k < 1, else plain); the first round is
  drawn for every lane, and a lax.while_loop draws further rounds while a lane
  that pulls its challenger (`active`) has none accepted.
  """
  env = envelopes(law, lead)

  def round_arm(r):
    """Round r's challenger, or -1 where its proposal is rejected."""
    return propose(jax.random.fold_in(key, r), law, lead, env)

  def cond(carry):
    r, arm = carry
    return active & (arm < 0) & (r < MAX_ROUNDS)

  def body(carry):
    r, _ = carry
    return r + 1, round_arm(r)

  _, arm = jax.lax.while_loop(cond, body, (jnp.asarray(1, jnp.int32), round_arm(0)))
  # The guard: the arm of largest envelope mass, the likeliest challenger.
  return jnp.where(arm < 0, first_max(env.log_mass), arm).astype(jnp.int32)


def exact_pair(k_lead, k_chal, family, arm_stats, active):
  """TTTS's leader, the argmax of one posterior draw (rank scale, not projected
  on Theta), and its exact challenger: ([] L, [] J)."""
  law = family.posterior_sample.law(arm_stats.counts, arm_stats.stats)
  lead = first_max(law.sample(k_lead))
  return lead, exact_challenger(k_chal, law, lead, active)


@cached
def resampling_challenger(max_redraws: int):
  """Plain re-sampling with a cap, then the TC challenger (families without a law).

  The draws are made REDRAW_BATCH at a time (one pass of a lax.while_loop), and
  the challenger is the argmax of the first draw, in draw order, whose argmax is
  not the leader: the same law as drawing one at a time, with fewer passes.
  """
  n_passes = -(-max_redraws // REDRAW_BATCH)

  def challenger(key, family, arm_stats, lead, active):
    k_fallback, k_draws = jax.random.split(key)
    draw_argmax = jax.vmap(lambda k: ts_leader(k, family, arm_stats))

    def cond(carry):
      i, found, _ = carry
      return active & ~found & (i < n_passes)

    def body(carry):
      i, _, _ = carry
      arms = draw_argmax(jax.random.split(jax.random.fold_in(k_draws, i), REDRAW_BATCH))
      index = i * REDRAW_BATCH + jnp.arange(REDRAW_BATCH)
      hit = (arms != lead) & (index < max_redraws)
      return i + 1, jnp.any(hit), arms[first_max(hit)]

    init = (jnp.zeros((), jnp.int32), jnp.zeros((), bool), lead)
    _, found, arm = jax.lax.while_loop(cond, body, init)
    fallback = tc_challenger(k_fallback, family, arm_stats, lead, active)
    return jnp.where(found, arm, fallback)

  return challenger


def ttts(beta: float = 0.5, max_redraws: int = 100) -> Rule:
  """TTTS, top-two Thompson sampling with an exactly re-sampled challenger (Russo 2016).

  Args:
    beta: probability of pulling the leader, in (0, 1).
    max_redraws: for a family whose posterior carries no law (a user's family),
      the cap on the plain re-draws, after which the TC challenger is used. The
      built-in families draw the challenger exactly and ignore it.

  Returns:
    The rule.

  Raises:
    ValueError: for beta outside (0, 1) or max_redraws < 1; when first used with
      a family that has no posterior_sample.
  """
  beta = check_beta(beta)
  if int(max_redraws) != max_redraws or max_redraws < 1:
    raise ValueError(f"max_redraws must be an integer >= 1, got {max_redraws!r}")
  max_redraws = int(max_redraws)
  return top_two_rule("ttts", (("beta", beta), ("max_redraws", max_redraws)),
                      pair_fn=_pair(max_redraws), beta=beta)


@cached
def _pair(max_redraws: int):
  """TTTS's pair function: the exact challenger for a family whose posterior has a
  law, else plain re-sampling capped at `max_redraws` draws."""
  capped = resampling_challenger(max_redraws)

  def pair(k_lead, k_chal, family, arm_stats, active):
    check_posterior(family, "ttts")
    if isinstance(family.posterior_sample, Posterior):
      return exact_pair(k_lead, k_chal, family, arm_stats, active)
    lead = ts_leader(k_lead, family, arm_stats)
    return lead, capped(k_chal, family, arm_stats, lead, active)

  return pair
