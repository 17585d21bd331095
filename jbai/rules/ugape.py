"""UGapE, fixed confidence (Gabillon, Ghavamzadeh & Lazaric 2012, Figure 2, m = 1, eps = 0).

With U, L the confidence bounds of the index and rate (Hoeffding and
beta(t, delta) = log(4 K t^3 / delta), their Theorem 1 with c = 1/2 for rewards in
[0, 1]; `jbai.stops.bounds`), the gap index B_k(t) = max_{i != k} U_i - L_k, the
arm J(t) = argmin_k B_k(t) and its contender u_t = argmax_{j != J(t)} U_j: pull
whichever of J(t) and u_t has the wider interval U - L (the larger beta_i, i.e.
the fewer pulls; ties to J(t)). Every arm is pulled once first. Own stop:
`jbai.stops.confidence` (B_{J(t)}(t) < 0 is L_J above every other U).

Sources checked: Figure 2, Theorem 1 and the rate were not checked against the
paper's text (the stored copy here, the NeurIPS metadata with its full text,
https://papers.nips.cc/paper_files/paper/2012/file/8b0d268963dd0cfb808aac48a549829f-Metadata.json,
could be read only up to its abstract). The authors of Garivier & Kaufmann 2016
ran UGapE (`UGapE` in jsfunc/best-arm-identification BAIalgos.jl) with KL
bounds (index="kl" here) and their rate at t; it pulls the less-pulled of J(t)
and u_t, ties to u_t, with J(t) and u_t the lowest index among ties. jbai pulls
the wider interval, ties to J(t). With the sub-Gaussian index and one rate for
all arms the wider interval is the less-pulled arm, so only ties differ; with
index="kl" the width also depends on the mean, and the two rules differ.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.builders import cached
from jbai.rules.base import Rule, hyper, least_sampled
from jbai.stops import bounds as bounds_lib
from jbai.stops.confidence import confidence


class UgapeState(NamedTuple):
  log_inv_delta: jax.Array  # [] float, log(1/delta) of the run's level


@cached
def _select_fn(index: str, rate: str):
  def select(key, family, arm_stats, state):
    del key
    counts = arm_stats.counts
    low, up = bounds_lib.rule_bounds(family, index, rate, arm_stats, state.log_inv_delta)
    eye = jnp.eye(counts.shape[-1], dtype=bool)
    best_other = jnp.max(jnp.where(eye, -jnp.inf, up[None, :]), axis=-1)  # [K]
    j = ties.argmin(best_other - low)
    u = ties.argmax(jnp.where(jnp.arange(counts.shape[-1]) == j, -jnp.inf, up))
    width = up - low
    arm = jnp.where(width[u] > width[j], u, j)
    arm = jnp.where(jnp.min(counts) == 0, least_sampled(counts), arm)
    return arm.astype(jnp.int32), state
  return select


def ugape(index: str = "subgaussian", rate: str = "ugape") -> Rule:
  """UGapE (Gabillon et al. 2012): pulls the less explored of the gap leader and its contender; stop: confidence.

  Args:
    index: confidence index, "subgaussian" (the paper's) or "kl".
    rate: exploration rate (`jbai.stops.bounds.RATES`).

  Returns:
    The rule; its sampling depends on delta (one level per run).
  """
  index, rate = bounds_lib.check_index(index), bounds_lib.check_rate(rate)
  return Rule("ugape", lambda num_arms: UgapeState(hyper(jnp.nan)), _select_fn(index, rate),
              (("index", index), ("rate", rate)), stop=confidence(index, rate))
