"""The confidence-bound stop of the LUCB family.

Kalyanakrishnan et al. 2012 (LUCB1, stop when U(l_t) - L(h_t) < eps; eps = 0
unless the stop is built with one) and Kaufmann & Kalyanakrishnan 2013 (KL-LUCB,
eq. (3)): with h_t the empirical best arm, stop at the first t where its lower
confidence bound exceeds the upper bound of every other arm,

  L_{h_t}(t, delta) > max_{j != h_t} U_j(t, delta),

and answer h_t. Built with an eps > 0 (LUCB1's eps version,
`jbai.rules.lucb1_eps`) it stops at the first t where

  L_{h_t}(t, delta) > max_{j != h_t} U_j(t, delta) - eps,

and answers h_t, eps-good with probability >= 1 - delta
(`jbai.stops.eps_good.eps_of` reads the eps back). The bounds are
`jbai.stops.bounds.bounds` with the stop's index and exploration rate. This is
also UGapE's stop (Gabillon et al. 2012, B_J(t) < 0): an arm whose L exceeds
every other U is the empirical best. The statistic is 1 where the bounds
separate and 0 elsewhere, against level 1/2, one per delta; U_j < L_{h_t} (+ eps)
is decided without computing U_j (`jbai.stops.bounds.upper_below`), so that a
step costs one bisection per delta for the KL index.

For the top m (`confidence(..., m=m)`, the own stop of `jbai.rules.lucb_top_m`;
Kalyanakrishnan et al. 2012's LUCB for subset selection, Kaufmann &
Kalyanakrishnan 2013's KL-LUCB), with High_t the empirical top m it stops at the
first t where every arm of High_t has its lower bound above the upper bound of
every other arm,

  min_{i in High_t} L_i(t, delta) > max_{j not in High_t} U_j(t, delta),

and answers High_t (a [K] mask: the stop's `problem` is `top_m(m)`); m lower
bounds per delta, and U_j below their minimum decided as above.

Sources checked: the stop agrees with `KLLUCB` and `UGapE` in the authors' Julia
code (jsfunc/best-arm-identification BAIalgos.jl: stop when the leader's lower
bound is at least the contender's upper bound, resp. min_k B_k <= 0; the strict
inequality here differs only on exact ties) and with best-arm's
LUCBStoppingCondition, U_{l_t} - L_{h_t} < epsilon, whose default precision
epsilon = 0.02 is the eps here (jbai's default: eps = 0). eq. (3) of Kaufmann &
Kalyanakrishnan 2013 and the stopping conditions of the two other papers were
not checked against the papers' text (the stored copies here give only their
first page).
"""

from typing import Optional

import jax.numpy as jnp

from jbai.builders import cached
from jbai.eps_transport import check_slack
from jbai.problems.top_m import leaders, top_m
from jbai.stops import bounds as bounds_lib
from jbai.stops.base import Stop
from jbai.thresholds.base import log_inv_delta
from jbai.ties import select


def _init(delta, num_arms):
  del num_arms
  return log_inv_delta(delta)


@cached
def _test_fn(index: str, rate: str, eps: float = 0.0):
  def test(params, family, arm_stats, rule_state):
    del rule_state
    counts, mean = arm_stats.counts, arm_stats.mean
    num_arms = counts.shape[-1]
    log_inv = jnp.asarray(params, mean.dtype)
    beta = bounds_lib.rate(rate, arm_stats.t, log_inv, num_arms)  # [D]
    top = jnp.argmax(mean).astype(jnp.int32)
    is_top = jnp.arange(num_arms) == top
    # L of the leader alone (one bisection per delta), then U_j < L_top for the others
    # without computing U_j (`upper_below`).
    low, _ = bounds_lib.bounds(family, index, counts[top], mean[top], beta, ("lower",))
    bar = low + eps if eps else low  # eps = 0: the exact stop, bit for bit
    below = bounds_lib.upper_below(family, index, counts, mean, beta[:, None], bar[:, None])
    apart = jnp.all(below | is_top, axis=-1)  # [D]
    ch = jnp.argmax(jnp.where(is_top, -jnp.inf, mean)).astype(jnp.int32)
    stat = apart.astype(mean.dtype)
    return top, ch, stat, jnp.full_like(stat, 0.5)
  return test


@cached
def _test_top_m(index: str, rate: str, m: int):
  def test(params, family, arm_stats, rule_state):
    del rule_state
    counts, mean = arm_stats.counts, arm_stats.mean
    num_arms = counts.shape[-1]
    beta = bounds_lib.rate(rate, arm_stats.t, jnp.asarray(params, mean.dtype), num_arms)
    top, high = leaders(mean, m)                                                 # [m, K], [K]
    low = bounds_lib.one_side(family, index, select(top, counts), select(top, mean),
                              beta[:, None], False)                              # [D, m]
    bar = jnp.min(low, axis=-1)                                                  # [D]
    below = bounds_lib.upper_below(family, index, counts, mean, beta[:, None], bar[:, None])
    apart = jnp.all(below | high, axis=-1)
    ch = jnp.argmax(jnp.where(high, -jnp.inf, mean)).astype(jnp.int32)
    stat = apart.astype(mean.dtype)
    return high, ch, stat, jnp.full_like(stat, 0.5)
  return test


def confidence(index: str = "kl", rate: str = "kl-lucb", eps: float = 0.0,
               m: Optional[int] = None) -> Stop:
  """The LUCB stop: the leader's lower bound above every other arm's upper bound (less eps).

  Args:
    index: "kl" (the family's divergence) or "subgaussian" (Hoeffding).
    rate: the exploration rate beta(t, delta) (`jbai.stops.bounds.RATES`).
    eps: additive slack >= 0 of LUCB1's eps version: stop when L_{h_t} > U_j - eps
      for every j != h_t, answering an eps-good arm (0: the exact stop).
    m: the top m instead of the best arm (LUCB for subset selection): stop when
      every arm of the empirical top m has L above every other arm's U, and
      answer that set (eps 0).

  Returns:
    The stop (its params carry eps only where it is > 0, and m where given).

  Raises:
    ValueError: for eps < 0 or not finite, a bad m, or m with eps > 0.
  """
  index, rate = bounds_lib.check_index(index), bounds_lib.check_rate(rate)
  eps = check_slack(eps)
  if m is not None:
    problem = top_m(m)
    if eps > 0:
      raise ValueError(f"eps = {eps!r} is the slack of an eps-good best arm; the stop of "
                       f"the top {m} takes none")
    return Stop("confidence", _init, _test_top_m(index, rate, int(m)),
                (("index", index), ("rate", rate), ("problem", problem)), problem=problem)
  params = (("index", index), ("rate", rate)) + ((("eps", eps),) if eps > 0 else ())
  return Stop("confidence", _init, _test_fn(index, rate, eps), params)
