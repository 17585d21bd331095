"""lil'UCB (Jamieson, Malloy, Nowak & Bubeck 2014, Algorithm 1).

After one pull of every arm, pull

  argmax_i mean_i + (1 + beta)(1 + sqrt(eps)) sqrt(2 s^2 (1 + eps) log(log((1 + eps) T_i) / delta') / T_i),

s^2 the family's sub-Gaussian variance proxy (1/4 for Bernoulli, sigma^2 for
Gaussian; `jbai.stops.bounds.subgaussian_variance`). The "theory" setting:
eps = 0.01, beta = 1 and the stop's lambda = ((2 + beta) / beta)^2 = 9 (own
stop: `jbai.stops.lil`). The algorithm's delta' follows from the target
confidence delta as delta' = (sqrt(1 + delta) - 1)^2 / (4 c_eps), with

  c_eps = ((2 + eps) / eps) (1 / log(1 + eps))^(1 + eps)

(`log_inv_delta_prime`: Theorem 2's guarantee, 1 - 4 sqrt(c_eps delta') -
4 c_eps delta' >= 1 - delta, solved for delta'; c_eps is the constant of the
finite-time LIL bound, Lemma 3: P(exists t: the sum of t centred rewards exceeds
(1 + sqrt(eps)) sqrt(2 s^2 (1 + eps) t log(log((1 + eps) t) / delta'))) <=
((2 + eps) / eps) (delta' / log(1 + eps))^(1 + eps) <= c_eps delta'; Lemma 3
and Theorem 2 as recalled, the paper's text is not stored here). Ties in
the index go to the lowest index. The initial pull of every arm counts in tau.

Against best-arm 0.1.1 (algorithms/lil_ucb.py, mode "theory", with its
`LilUCBStoppingCondition`): the index, its constants (eps = 0.01, beta = 1,
s^2 = 1/4 for Bernoulli), the initial pulls, the tie-break, the stopping
condition (lambda = 9) and the count of tau agree line by line but for one
factor: best-arm raises the whole product to the power 1 + eps,
c_eps = ((2 + eps) / eps * 1 / log(1 + eps))^(1 + eps), where jbai (and Lemma
3) raises only 1 / log(1 + eps). Best-arm's c_eps is larger by
((2 + eps) / eps)^eps (about 5% at eps = 0.01), its log(1/delta') by about
0.053, so it samples slightly longer. tests/test_lil_ucb_peer.py runs
best-arm's loop on jbai's reward streams: with Lemma 3's c_eps it stops at
jbai's tau, trial for trial.
"""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.builders import cached
from jbai.rules.base import Rule, hyper, least_sampled
from jbai.stops import bounds as bounds_lib
from jbai.stops.lil import lil


class LilState(NamedTuple):
  log_inv_delta: jax.Array  # [] float, log(1/delta) of the run's level


def log_inv_delta_prime(log_inv, eps: float) -> jax.Array:
  """log(1/delta') for the target level delta = exp(-log_inv)."""
  c_eps = ((2.0 + eps) / eps) * (1.0 / math.log1p(eps)) ** (1.0 + eps)
  delta = jnp.exp(-log_inv)
  half = jnp.expm1(0.5 * jnp.log1p(delta))  # sqrt(1 + delta) - 1, exact for tiny delta
  return math.log(4.0 * c_eps) - 2.0 * jnp.log(half)


@cached
def _select_fn(eps: float, beta: float):
  def select(key, family, arm_stats, state):
    del key
    counts = arm_stats.counts
    s2 = bounds_lib.checked_variance(family, "lil-ucb")
    n = jnp.maximum(counts, 1).astype(arm_stats.mean.dtype)
    inner = jnp.log((1.0 + eps) * n)
    log_term = jnp.log(inner) + log_inv_delta_prime(state.log_inv_delta, eps)
    bonus = (1.0 + beta) * (1.0 + math.sqrt(eps)) * jnp.sqrt(
        2.0 * s2 * (1.0 + eps) * jnp.maximum(log_term, 0.0) / n)
    arm = ties.argmax(arm_stats.mean + bonus)
    arm = jnp.where(jnp.min(counts) == 0, least_sampled(counts), arm)
    return arm.astype(jnp.int32), state
  return select


def lil_ucb(eps: float = 0.01, beta: float = 1.0) -> Rule:
  """lil'UCB (Jamieson et al. 2014): UCB with a law-of-the-iterated-logarithm bonus; stop: lil.

  Args:
    eps: eps in (0, 1).
    beta: beta > 0; the own stop's lambda is ((2 + beta) / beta)^2.

  Returns:
    The rule; its sampling depends on delta (one level per run). Families:
    those with a sub-Gaussian variance proxy (Bernoulli, Gaussian).
  """
  if not 0.0 < eps < 1.0:
    raise ValueError(f"eps must be in (0, 1), got {eps!r}")
  if not beta > 0:
    raise ValueError(f"beta must be > 0, got {beta!r}")
  lam = ((2.0 + beta) / beta) ** 2
  return Rule("lil-ucb", lambda num_arms: LilState(hyper(jnp.nan)),
              _select_fn(float(eps), float(beta)),
              (("eps", float(eps)), ("beta", float(beta))), stop=lil(lam))
