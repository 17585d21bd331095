"""LUCB for top-m: the subset-selection rule of Kalyanakrishnan, Tewari, Auer & Stone
2012 (LUCB1) and Kaufmann & Kalyanakrishnan 2013 (KL-LUCB), with their confidence
bounds (`jbai.stops.bounds`).

For the m best arms (`jbai.problems.top_m`), with High_t the empirical top m (the
m largest projected sample means, `top_m(m).answer`) and L, U the lower and upper
confidence bounds at the rule's index and exploration rate, each round pulls the
two arms most likely to be misplaced:

  h_t = argmin_{i in High_t} L_i(t, delta),   l_t = argmax_{j not in High_t} U_j(t, delta),

the lowest index among equal bounds. After one pull of every arm, a round is two
steps of the engine (`jbai.rules.lucb.lucb_round`). Its own stop is the papers'
(with eps = 0): L_{h_t} > U_{l_t}, every arm of High_t above every other arm
(`jbai.stops.confidence(index, rate, m=m)`). With a GLLR threshold instead
(`--stop gllr`, `threshold="gk16"`) it stops with the top-m GLLR
(`jbai.stops.answer_gllr`), as Reda, Kaufmann & Delahaye-Duriez 2021 pair LUCB's
sampling with the GLR stop. At m = 1 the round is LUCB1's or KL-LUCB's
(`jbai.rules.lucb`) but for ties of the leader (here the lowest index, there
uniform), and so is the stop: the trials are the same, bit for bit, only where
no two arms tie for the largest projected sample mean while the leader is
chosen (continuous rewards; integer rewards tie often, and there the two may
part).

The defaults are KL-LUCB's (index "kl", rate "kl-lucb"), which serve every
family; index "subgaussian" with rate "lucb1" is LUCB1's Hoeffding version for
Bernoulli and Gaussian rewards. The sampling depends on delta: log(1/delta) is a
runtime value in the state, set from the run's level (one delta per run). The
algorithms' text was not checked here (the stored copies give only the papers'
first pages); the rule is what the paragraphs above say.
"""

import jax.numpy as jnp

from jbai import ties
from jbai.builders import cached
from jbai.problems.top_m import top_m
from jbai.rules.base import Rule
from jbai.rules.lucb import lucb_init, lucb_round
from jbai.stops import bounds as bounds_lib
from jbai.stops.confidence import confidence


@cached
def _select(m: int, index: str, rate: str):
  problem = top_m(m)

  def select(key, family, arm_stats, state):
    del key
    counts, mean = arm_stats.counts, arm_stats.mean
    beta = bounds_lib.rate(rate, arm_stats.t, state.log_inv_delta, counts.shape[-1])
    high = problem.answer(mean)
    bound = bounds_lib.one_side(family, index, counts, mean, beta, ~high)  # L in, U out
    weakest = ties.argmin(jnp.where(high, bound, jnp.inf))
    strongest = ties.argmax(jnp.where(high, -jnp.inf, bound))
    return lucb_round(counts, state, weakest, strongest)

  return select


def lucb_top_m(m: int, index: str = "kl", rate: str = "kl-lucb") -> Rule:
  """LUCB for top-m (Kalyanakrishnan et al. 2012): the weakest of the top m and the strongest of the rest.

  Args:
    m: the size of the answer (the run's `top_m(m)`).
    index: confidence index, "kl" (KL-LUCB's) or "subgaussian" (LUCB1's Hoeffding).
    rate: exploration rate (`jbai.stops.bounds.RATES`): "kl-lucb", "lucb1", ...

  Returns:
    The rule, with its own stop (`jbai.stops.confidence` for the top m); its
    sampling depends on delta (one level per run).

  Example:
    >>> import jbai
    >>> jbai.rules.lucb_top_m(2)
    lucb-top-m(m=2, index=kl, rate=kl-lucb)
  """
  top_m(m)  # checks m
  index, rate = bounds_lib.check_index(index), bounds_lib.check_rate(rate)
  return Rule("lucb-top-m", lucb_init, _select(int(m), index, rate),
              (("m", int(m)), ("index", index), ("rate", rate)), answers=("top-m",),
              stop=confidence(index, rate, m=int(m)))
