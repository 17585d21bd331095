"""TTTS: Top-Two Thompson Sampling (Russo 2016).

Leader: L = argmax of one posterior draw. With probability beta pull L; else
pull the challenger J = argmax of a posterior draw theta conditioned on
argmax theta != L. Each arm is pulled once first; posterior sampling explores.

The challenger is drawn exactly, with no cap and no fallback, at a cost that
does not grow as P(U), U = {argmax theta != L}, falls (it is about
exp(-t Gamma) late in a trial, below delta at stopping). Each step uses one of
two exact rejection samplers, chosen from the arm statistics alone (so the
choice does not bias the law):

  * plain: draw theta from the posterior until argmax theta != L; acceptance
    P(U). Used early in a trial.
  * union (Karp, Luby & Madras 1989): U is the union of A_k = {theta_k > theta_L},
    k != L. With an envelope g_k >= pi_L pi_k on A_k of mass M_k, pick k with
    probability M_k / sum M, draw (theta_L, theta_k) from g_k restricted to A_k
    and the other arms from their posteriors, and accept with probability
    1 / sum_{j: theta_j > theta_L} g_j / (pi_L pi_j) (each term >= 1). Accepted
    draws have exactly the law of theta given U; the acceptance is
    P(U) / sum_k M_k. Used when sum_k M_k < 1, where it beats plain.

The envelopes come from each posterior's law in a comparison scale z where its
log-density l is strongly concave, -l'' >= kappa (jbai.posteriors): at a
tangent point x, l(z) <= l(x) + l'(x)(z - x) - kappa (z - x)^2 / 2, a Gaussian
in z. So g_k is a product of two Gaussians: its mass on A_k is a normal CDF
(log_ndtr, accurate however deep in the tail), and a draw from it restricted
to A_k is D = z_k - z_L from a truncated normal (jbai.samplers) and z_L given D
by Gaussian conditioning. For Gaussian posteriors the envelope is the posterior
itself (g_j / (pi_L pi_j) = 1). The tangent points are the two modes when k's
mode is above L's, else both at the maximiser of l_L + l_k (where the mass of
A_k concentrates), in closed form for each law.

Rounds. A round draws the posterior once and makes one proposal. The first
round is drawn for every lane; a lax.while_loop runs further rounds while a
lane that pulls its challenger has none accepted (under vmap its body runs
while any such lane remains). Per lane a round is accepted with probability
about 0.9-0.95 late in a trial, 0.6 at worst early, when several arms compete
(tests/test_top_two.py checks > 0.8 at P(U) = 1e-3). Measured in the engine
(32 lanes, float32): the loop body runs 1.1 times per engine step on Bernoulli
[0.8, 0.5, 0.3, 0.29, 0.06] at delta = 1e-8 (short trials, so many lanes are
early), 0.10 times on Bernoulli [0.5, 0.43, 0.3, 0.2] at delta = 0.1 with kk,
0.013 times on Gaussian [1.2, 1, 1, 1, 1] at delta = 1e-8; the largest round a
lane needed was 7 to 9.

The loop stops after MAX_ROUNDS = 1000 rounds, a guard against a
floating-point failure of the acceptance test, never reached at the acceptance
rates above (probability below 0.4^1000 per draw); a lane that reached it would
take the arm of largest envelope mass M_k.

Cost (benchmarks/rules.py, 2-core CPU): a step draws the posterior at least
twice (the leader, one round) plus the envelopes: 3.3 (Gaussian, K = 20) to 6.8
(Bernoulli, K = 5) times TCB's step cost, against 1.2 to 1.9 for T3C; the Beta
draws and the envelopes' log-densities dominate on Bernoulli instances, and the
loop's extra round on their short trials. A proposal takes its K + 3 uniforms
from one random call (on CPU each call is a kernel of its own).

Posterior draws in the comparison scale are not projected on Theta (the
leader's draws, from `Family.posterior_sample`, are); the two agree whenever the
posterior puts no mass outside Theta, as for the default Theta of every family.

A family whose `posterior_sample` carries no law (a plain function, as a user's
general family may have) gets plain re-sampling capped at `max_redraws` draws,
and the TC challenger argmin_j W_t(L, j) at the cap.
"""

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import log_ndtr

from jbai import samplers
from jbai.posteriors import Posterior
from jbai.rules.base import Rule
from jbai.rules.top_two import (check_beta, first_max, tc_challenger, top_two_rule,
                                ts_leader)

MAX_ROUNDS = 1000  # guard on the rounds of the loop (never reached in practice)
REDRAW_BATCH = 10  # posterior draws per pass of the capped loop (families without a law)


class Envelopes(NamedTuple):
  """The Gaussian envelopes g_k of the pairs (L, k), in the comparison scale."""

  law_lead: Any         # the law of L alone ([] parameters)
  x_lead: jax.Array     # [K] tangent point of L's coordinate, per pair
  x_arm: jax.Array      # [K] tangent point of k's coordinate
  grad_lead: jax.Array  # [K] l_L'(x_lead)
  grad_arm: jax.Array   # [K] l_k'(x_arm)
  log_lead: jax.Array   # [K] L's log-kernel at x_lead (log-density minus log_norm)
  log_arm: jax.Array    # [K] k's log-kernel at x_arm
  mu_lead: jax.Array    # [K] centre of L's envelope Gaussian, x_lead + l_L'(x_lead) / kappa_L
  mu_arm: jax.Array     # [K] centre of k's, x_arm + l_k'(x_arm) / kappa_k
  var_lead: jax.Array   # [] 1 / kappa_L
  var_arm: jax.Array    # [K] 1 / kappa_k
  log_mass: jax.Array   # [K] log M_k, -inf at L
  # The fields of the tangent construction are None for a quadratic law.


def pick(mask: jax.Array, x: jax.Array) -> jax.Array:
  """x[i] for the one-hot mask of i (a masked sum: cheaper than a gather on CPU)."""
  return jnp.sum(jnp.where(mask, x, 0), axis=-1)


def envelopes(law, lead: jax.Array) -> Envelopes:
  """The envelopes g_k >= pi_L pi_k on {z_k > z_L} of every pair (L, k)."""
  centre = law.centre()
  is_lead = jnp.arange(centre.shape[-1]) == lead
  law_lead = jax.tree.map(lambda x: pick(is_lead, x), law)
  var_lead, var_arm = 1 / law_lead.curvature(), 1 / law.curvature()
  if law.quadratic:  # the envelope is the posterior: its mass is P(z_k > z_L)
    mu_lead, mu_arm = law_lead.centre() + 0 * centre, centre
    x_lead = x_arm = grad_lead = grad_arm = log_lead = log_arm = None
    log_mass = log_ndtr((mu_arm - mu_lead) / jnp.sqrt(var_lead + var_arm))
  else:
    centre_lead = law_lead.centre()
    meet = law_lead.pair_centre(law)
    below = centre < centre_lead
    x_lead = jnp.where(below, meet, centre_lead)
    x_arm = jnp.where(below, meet, centre)
    grad_lead, grad_arm = law_lead.grad(x_lead), law.grad(x_arm)
    log_lead, log_arm = law_lead.log_kernel(x_lead), law.log_kernel(x_arm)
    mu_lead = x_lead + grad_lead * var_lead
    mu_arm = x_arm + grad_arm * var_arm
    # g_k = exp(h_L + h_k) N(z_L; mu_L, var_L) N(z_k; mu_k, var_k) 2 pi sqrt(var_L var_k),
    # h = l(x) + l'(x)^2 / (2 kappa); its mass on {z_k > z_L} has the normal CDF.
    log_norm = law.log_norm()
    height = (log_lead + grad_lead**2 * var_lead / 2 + log_arm + grad_arm**2 * var_arm / 2
              + log_norm + pick(is_lead, log_norm))
    delta = (mu_arm - mu_lead) / jnp.sqrt(var_lead + var_arm)
    log_mass = (height + math.log(2 * math.pi) + 0.5 * jnp.log(var_lead * var_arm)
                + log_ndtr(delta))
  log_mass = jnp.where(is_lead, -jnp.inf, log_mass)
  return Envelopes(law_lead, x_lead, x_arm, grad_lead, grad_arm, log_lead, log_arm, mu_lead,
                   mu_arm, var_lead, var_arm, log_mass)


def union_proposal(key, z, lead, env: Envelopes, law):
  """One proposal of the union sampler: (z [K], accepted []).

  z: a posterior draw of every arm (comparison scale), independent of key, kept
  for the arms other than L and the chosen k. The proposal's argmax is not L
  whenever it is accepted.
  """
  num_arms = env.log_mass.shape[-1]
  arms = jnp.arange(num_arms)
  dtype = env.mu_arm.dtype
  # One uniform array for the proposal's K + 3 uniforms (one random call, not
  # four: on CPU each call is a kernel of its own).
  u = jax.random.uniform(key, (num_arms + 3,), dtype)
  # k with probability M_k / sum M (Gumbel-max).
  gumbel = -jnp.log(-jnp.log(jnp.maximum(u[:num_arms], jnp.finfo(dtype).tiny)))
  is_k = arms == first_max(env.log_mass + gumbel)
  var_arm, mu_lead, mu_arm = pick(is_k, jnp.stack([env.var_arm, env.mu_lead, env.mu_arm]))
  var_lead = env.var_lead
  gap = mu_arm - mu_lead
  scale = jnp.sqrt(var_lead + var_arm)
  # D = z_k - z_L ~ N(gap, scale^2) given D > 0; z_L given D.
  t = samplers.truncated_normal_icdf(u[num_arms], -gap / scale)
  z_lead = (mu_lead - t * var_lead / scale
            + jnp.sqrt(var_lead * var_arm) / scale * samplers.standard_normal(u[num_arms + 1]))
  # z_k = z_L + D > z_L; kept strictly above in floating point, where a D far
  # below z_L's spacing would otherwise round z_k onto z_L.
  z_arm = jnp.maximum(z_lead + (gap + scale * t), jnp.nextafter(z_lead, jnp.inf))
  z = jnp.where(arms == lead, z_lead, jnp.where(is_k, z_arm, z))
  above = (arms != lead) & (z > z_lead)
  if law.quadratic:  # g_j = pi_L pi_j: every ratio is 1
    total = jnp.sum(above.astype(dtype))
  else:
    # g_j / (pi_L pi_j) >= 1 at z for every j above L: both quadratic bounds minus l
    # (an infinite ratio, outside the support, rejects).
    d_lead, d_arm = z_lead - env.x_lead, z - env.x_arm
    log_ratio = (env.log_lead + env.grad_lead * d_lead - d_lead**2 / (2 * var_lead)
                 - env.law_lead.log_kernel(z_lead)
                 + env.log_arm + env.grad_arm * d_arm - d_arm**2 / (2 * env.var_arm)
                 - law.log_kernel(z))
    total = jnp.sum(jnp.where(above, jnp.exp(log_ratio), 0))
  accepted = u[num_arms + 2] * total < 1
  return z, accepted


def first_max_rows(x: jax.Array) -> jax.Array:
  """first_max of every row of x [R, K]: [R] int32."""
  num = x.shape[-1]
  index = jnp.arange(num, dtype=jnp.int32)
  return jnp.min(jnp.where(x >= jnp.max(x, axis=-1, keepdims=True), index, num), axis=-1)


def exact_challenger(key, family, arm_stats, lead, active):
  """TTTS's challenger: argmax of a posterior draw given argmax != L, exactly.

  Every round draws the posterior once and makes one proposal with the sampler
  of this step (union where sum_k M_k < 1, else plain). The first round is
  drawn for every lane; a lax.while_loop draws further rounds while a lane that
  pulls its challenger has none accepted.
  """
  law = family.posterior_sample.law(arm_stats.counts, arm_stats.stats)
  env = envelopes(law, lead)
  use_union = jnp.sum(jnp.exp(env.log_mass)) < 1

  def propose(k):
    z = law.sample(jax.random.fold_in(k, 0))
    z_union, accepted = union_proposal(jax.random.fold_in(k, 1), z, lead, env, law)
    arm = first_max(jnp.where(use_union, z_union, z))
    ok = jnp.where(use_union, accepted, True) & (arm != lead)
    return jnp.where(ok, arm, -1)

  def cond(carry):
    r, arm = carry
    return active & (arm < 0) & (r < MAX_ROUNDS)

  def body(carry):
    r, arm = carry
    return r + 1, propose(jax.random.fold_in(key, r))

  arm = propose(jax.random.fold_in(key, 0))
  _, arm = jax.lax.while_loop(cond, body, (jnp.asarray(1, jnp.int32), arm))
  # The guard: the arm of largest envelope mass, the likeliest challenger.
  return jnp.where(arm < 0, first_max(env.log_mass), arm).astype(jnp.int32)


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
  capped = resampling_challenger(max_redraws)

  def challenger(key, family, arm_stats, lead, active):
    if isinstance(family.posterior_sample, Posterior):
      return exact_challenger(key, family, arm_stats, lead, active)
    return capped(key, family, arm_stats, lead, active)

  return top_two_rule("ttts", (("beta", beta), ("max_redraws", max_redraws)),
                      leader_fn=ts_leader, challenger_fn=challenger, beta=beta)
