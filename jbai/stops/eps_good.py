"""The eps-GLLR stop: eps-good answers for an additive eps >= 0.

An arm i is eps-good when mu_i >= max_j mu_j - eps. The leader î (the empirical
best) is answered once the GLLR against the instances where it is *not*
eps-good crosses the threshold beta_t(delta) (Garivier & Kaufmann 2021,
"Non-asymptotic sequential tests for overlapping hypotheses", the GLR test of
their Section 4 for eps-best-arm identification; Jourdan, Degenne & Kaufmann
2023, the GLR stopping rule of EB-TC_eps):

  Lambda^eps_t = min_{j != î} min_x  N_î kl(m_î, x) + N_j kl(m_j, x + eps),

the eps transport cost of `jbai.eps_transport` with the counts N and the MLEs m.
With eps = 0 the stop is the GLLR itself (`jbai.transport.pair_costs`, the
engine's computation), so that eps = 0 reproduces the exact GLLR's trials bit for
bit. An eps-good answer is what the run's error rate then counts
(`jbai.problems.is_eps_good`): a trial errs when mu_answer < max mu - eps.

Where it differs from `PGLRT` in the code of Garivier & Kaufmann 2021
(EmilieKaufmann/BAI_epsBAI_code EpsilonBAIalgos.jl): that code takes as
candidates all the tied empirical best arms and answers the one of largest
statistic; jbai takes the lowest-index empirical best (`jbai.ties.argmax`), which
differs only while the empirical best is tied. The
section of Garivier & Kaufmann 2021 and the stopping rule of Jourdan et al. 2023
were not checked against the papers' text (the stored copies here give only
their abstracts, e.g. https://hal.science/hal-02123833v2 and
http://papers.nips.cc/paper_files/paper/2023/hash/358e4a39b8ace4744fbad77e84a7e757-Abstract-Conference.html).
"""

from typing import Optional

import jax.numpy as jnp

from jbai import thresholds as thresholds_lib
from jbai import ties
from jbai.builders import cached
from jbai.eps_transport import check_slack, eps_costs
from jbai.families.base import Family
from jbai.stops.base import Stop

NAME = "eps-gllr"


def statistic(family: Family, arm_stats, eps):
  """(top, challenger, Lambda^eps_t) from the lane's statistics, that of the
  eps-good problem (`jbai.problems.eps_good`, through `jbai.problems.base.
  statistic`) computed alike for a runtime eps; eps = 0 (a number) gives the GLLR
  of the engine (`jbai.core.lane.stopping_statistic`)."""
  top = ties.argmax(arm_stats.mean)
  costs = eps_costs(family, arm_stats.counts, arm_stats.mle, top, eps)
  ch = ties.argmin(costs)
  return top, ch, costs[ch]


RULE_EPS = "eps_good"  # the rule-state field a stop with a runtime eps reads


@cached
def _test_fn(eps: Optional[float], threshold):
  """The test with a fixed eps, or (eps None) with the eps of the rule's state."""
  def test(params, family, arm_stats, rule_state):
    slack = getattr(rule_state, RULE_EPS) if eps is None else eps
    top, ch, glr = statistic(family, arm_stats, slack)
    beta = threshold.value(params, family, arm_stats, top, ch)
    return top, ch, jnp.broadcast_to(glr, beta.shape), beta
  return test


def eps_gllr(eps: float = 0.0, threshold="gk16", from_rule: bool = False) -> Stop:
  """The GLLR stop for eps-good answers, against a GLLR threshold.

  Args:
    eps: additive slack >= 0: the answer is eps-good, mu_answer >= max mu - eps.
    threshold: a `jbai.thresholds.Threshold` or its name.
    from_rule: read eps from the rule's state (its field `eps_good`, a runtime
      value, EB-TC_eps's) instead of the closure; `eps` is then the value the
      rule was built with, a runtime param of the stop (`Stop.program`).

  Returns:
    The stop (its `params` carry eps, which `eps_of` reads back).

  Raises:
    ValueError: for eps < 0 or not finite.

  Example:
    >>> from jbai import stops
    >>> stops.eps_gllr(0.05)
    eps-gllr(eps=0.05, threshold=gk16())
  """
  eps = check_slack(eps)
  if isinstance(threshold, str):
    threshold = thresholds_lib.get(threshold)
  return Stop(NAME, threshold.init, _test_fn(None if from_rule else eps, threshold),
              (("eps", eps), ("threshold", threshold)), runtime=("eps",) if from_rule else ())


EPS_STOPS = (NAME, "confidence")  # the stops whose params may carry an eps-good slack


def eps_of(stop) -> float:
  """The eps-good slack a stop answers with: the eps of an eps-GLLR stop, or of a
  confidence stop built with one (LUCB1's eps version, `jbai.rules.lucb1_eps`);
  0 for any other stop or threshold (exact answers)."""
  if isinstance(stop, Stop) and stop.name in EPS_STOPS:
    return float(dict(stop.params).get("eps", 0.0))
  return 0.0


def threshold_of(stop) -> Optional[object]:
  """The GLLR threshold inside an eps-GLLR stop, else None."""
  if isinstance(stop, Stop) and stop.name == NAME:
    return dict(stop.params)["threshold"]
  return None
