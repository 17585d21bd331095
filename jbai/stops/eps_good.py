"""The eps-GLLR stop: eps-good answers for an additive eps >= 0.

An arm i is eps-good when mu_i >= max_j mu_j - eps. The leader (the empirical
best) is answered once the GLLR against the instances where it is *not*
eps-good crosses the threshold beta_t(delta) (Garivier & Kaufmann 2021,
"Non-asymptotic sequential tests for overlapping hypotheses", the GLR test of
their Section 4 for eps-best-arm identification; Jourdan, Degenne & Kaufmann
2023, the GLR stopping rule of EB-TC_eps). With î the leader, N the counts and
m the MLEs, the alternative "some j has lambda_j >= lambda_î + eps" costs

  Lambda^eps_t = min_{j != î} min_x  N_î kl(m_î, x) + N_j kl(m_j, x + eps),

the inner minimum over x in [m_j - eps, m_î] (the boundary lambda_j = lambda_î +
eps, where the infimum of the two convex costs lies), intersected with
[lo, hi - eps] so that both means stay in Theta (an empty interval, eps > hi -
lo, means every arm is eps-good: the cost is +inf). For the Gaussian family it
is (m_î - m_j + eps)^2 / (2 sigma^2 (1/N_î + 1/N_j)) (`gaussian_eps_cost`).
Other families find the minimiser by bisection on the derivative of the
objective (`eps_minimiser`, `jbai.transport.bisect_root`),

  g(x) = N_î d/dx kl(m_î, x) + N_j d/dx kl(m_j, x + eps),

which changes sign once on the bracket, from g <= 0 at its lower end to g >= 0 at
its upper one where m_î - m_j + eps > 0 (the objective is unimodal there, as
golden section also needs; convex for Bernoulli and Poisson arms). The slope of kl is
(x - m) I(x) for an exponential family in the reward (Bernoulli, Poisson,
exponential, Gaussian), else forward-mode autodiff of the family's kl in its
second argument (Weibull, logcosh, general families). Bisection evaluates g at
midpoints only, never at the ends of the bracket, which may be ends of Theta
where the slope is infinite (Bernoulli means 0 and 1). A fixed number of
halvings, nmant + 3 of the dtype (26 in float32, 55 in float64), leaves a
bracket (hi - lo) 2^-(nmant + 3) wide. Golden section (`jbai.transport.
golden_section`, method "golden", kept by name) compares values of the
objective, which is flat to second order at its minimiser, so that it places
the minimiser to about the square root of the dtype's precision, in 64 steps
that each evaluate kl; both give the cost to the rounding of the objective (the
test against SciPy's bounded minimiser: 1e-9 relative in float64), and
bisection takes an eighth to a fifth of the time on [4096] pairs
(benchmarks/eps_transport.py). With eps = 0 the stop is the
GLLR itself (`jbai.transport.pair_costs`, the engine's computation), so that
eps = 0 reproduces the exact GLLR's trials bit for bit.

An eps-good answer is what the run's error rate then counts (`is_eps_good`): a
trial errs when mu_answer < max mu - eps.

Sources checked: the statistic agrees with `PGLRT` in the code of Garivier &
Kaufmann 2021 (EmilieKaufmann/BAI_epsBAI_code EpsilonBAIalgos.jl): for a
candidate a, min_{b != a} min_lambda N_a d(mu_a, lambda) + N_b d(mu_b, lambda + eps),
the minimiser searched in [max(mu_b - eps, 0), min(mu_a, 1 - eps)] for
Bernoulli arms, in closed form for Gaussian arms, compared with the rate at t
(their `TrackAndStopD`/`TrackAndStopC`). Where it differs: that code takes as
candidates all the tied empirical best arms and answers the one of largest
statistic; jbai takes the lowest-index empirical best (`jnp.argmax`), which
differs only while the empirical best is tied. The section of Garivier &
Kaufmann 2021 and the stopping rule of Jourdan et al. 2023 were not checked
against the papers' text (the stored copies here give only their abstracts,
e.g. https://hal.science/hal-02123833v2 and
http://papers.nips.cc/paper_files/paper/2023/hash/358e4a39b8ace4744fbad77e84a7e757-Abstract-Conference.html).
"""

from typing import Optional

import jax
import jax.numpy as jnp

from jbai import thresholds as thresholds_lib
from jbai import ties
from jbai.builders import cached
from jbai.families.base import Family, weighted_mean
from jbai.stops.base import Stop
from jbai.transport import (GOLDEN_ITERS, Transport, bisect_iters, bisect_root, entry,
                            golden_section, pair_costs)

NAME = "eps-gllr"


def gaussian_eps_cost(sigma: float, n_a, m_a, n_b, m_b, eps):
  """(m_a - m_b + eps)^2 / (2 sigma^2 (1/n_a + 1/n_b)) where m_a - m_b + eps > 0, else 0."""
  gap = jnp.maximum(m_a - m_b + eps, 0.0)
  return gap * gap / (2.0 * sigma * sigma * (1.0 / n_a + 1.0 / n_b))


def eps_bracket(family: Family, m_a, m_b, eps):
  """(lo, hi) = (max(m_b - eps, lo_Theta), min(m_a, hi_Theta - eps)): the leader's
  mean x in the closest alternative, with x and x + eps in Theta (empty, lo > hi,
  where no pair of means in Theta is eps apart)."""
  return jnp.maximum(m_b - eps, family.lo), jnp.minimum(m_a, family.hi - eps)


def kl_slope(family: Family):
  """slope(m, x) = d/dx kl(m, x), elementwise: (x - m) I(x) for an exponential
  family in the reward (the closed form behind its weighted-mean transport,
  `jbai.families.base.weighted_mean`), else forward-mode autodiff of `family.kl`
  in its second argument (under jit the primal, kl itself, is dropped)."""
  if family.transport_x is weighted_mean:
    return lambda m, x: (x - m) * family.fisher(x)
  return lambda m, x: jax.jvp(lambda q: family.kl(m, q), (x,), (jnp.ones_like(x),))[1]


def eps_slope(family: Family, n_a, m_a, n_b, m_b, eps):
  """g(x) = d/dx [n_a kl(m_a, x) + n_b kl(m_b, x + eps)], which changes sign once,
  from <= 0 to >= 0, on `eps_bracket` (the objective is unimodal there); a term of
  weight 0 counts 0 (also where its slope is infinite)."""
  slope = kl_slope(family)

  def g(x):
    ga = jnp.where(n_a > 0, n_a * slope(m_a, x), 0.0)
    gb = jnp.where(n_b > 0, n_b * slope(m_b, x + eps), 0.0)
    return ga + gb
  return g


def eps_minimiser(family: Family, n_a, m_a, n_b, m_b, eps, iters=None):
  """The minimiser of n_a kl(m_a, x) + n_b kl(m_b, x + eps) on `eps_bracket`, by
  bisection on its derivative `eps_slope` (`jbai.transport.bisect_root`).

  Args:
    family: the reward family.
    n_a, m_a, n_b, m_b, eps: as `eps_transport`, broadcast together.
    iters: bisection steps; default and at most `jbai.transport.bisect_iters` of
      the dtype (more no longer shrink the bracket).

  Returns:
    x, elementwise: the root of the slope where m_a - m_b + eps > 0 (g <= 0 at
    lo, >= 0 at hi), an end of the bracket where the minimum lies there (hi =
    hi_Theta - eps where the slope at hi_Theta is finite), lo where the bracket
    is empty. Its derivatives are those of that end, and none at an interior
    root (the cost's derivatives need none there: envelope theorem).
  """
  n_a, m_a, n_b, m_b = (jnp.asarray(v) * 1.0 for v in (n_a, m_a, n_b, m_b))
  eps = jnp.asarray(eps, jnp.result_type(m_a, m_b))
  n_a, m_a, n_b, m_b, eps = jnp.broadcast_arrays(n_a, m_a, n_b, m_b, eps)
  lo, hi = eps_bracket(family, m_a, m_b, eps)
  cap = bisect_iters(lo.dtype)
  iters = cap if iters is None else min(int(iters), cap)
  frozen = [jax.lax.stop_gradient(v) for v in (n_a, m_a, n_b, m_b, eps, lo, hi)]
  *args, lo0, hi0 = frozen
  x = bisect_root(eps_slope(family, *args), lo0, jnp.maximum(lo0, hi0), iters)
  return jnp.where(x == lo0, lo, jnp.where(x == hi0, hi, x))


def eps_transport(family: Family, n_a, m_a, n_b, m_b, eps,
                  method: str = "auto", iters: Optional[int] = None) -> Transport:
  """The cost of the alternative lambda_b >= lambda_a + eps, and its minimiser.

  Args:
    family: the reward family.
    n_a, m_a: count (or weight) and mean of the leader.
    n_b, m_b: count and mean of the other arm.
    eps: the slack, >= 0.
    method: "closed" (Gaussian only), "bisect" (bisection on the objective's
      derivative, `eps_minimiser`), "golden" (golden-section search on its
      values), or "auto": closed for Gaussian, else bisect.
    iters: steps of the search: golden section (default GOLDEN_ITERS; the
      bracket shrinks by 0.618 each, fewer suffice where only the order of the
      costs matters, a sampling rule's), bisection (the bracket halves each;
      default and at most `jbai.transport.bisect_iters`, 26 in float32 and 55 in
      float64, beyond which it no longer shrinks).

  Returns:
    Transport(value, x), elementwise: value = min over x of n_a kl(m_a, x) +
    n_b kl(m_b, x + eps) (0 where m_b >= m_a + eps, +inf where no pair of means
    in Theta is eps apart; at least 0 from the searches, where the rounding of
    kl(m, x) for x within a few ulps of m may go below) and x its minimiser, the
    leader's mean in the closest alternative (the Gaussian one
    (n_a m_a + n_b (m_b - eps)) / (n_a + n_b)).
  """
  n_a, m_a, n_b, m_b = (jnp.asarray(v) * 1.0 for v in (n_a, m_a, n_b, m_b))
  sigma = dict(family.params).get("sigma") if family.name == "gaussian" else None
  if method == "auto":
    method = "closed" if sigma is not None else "bisect"
  if method == "closed":
    if sigma is None:
      raise ValueError(f"family {family.name!r} has no closed-form eps cost; use bisect")
    value = gaussian_eps_cost(sigma, n_a, m_a, n_b, m_b, eps)
    x = (n_a * m_a + n_b * (m_b - eps)) / (n_a + n_b)
  elif method in ("bisect", "golden"):
    def objective(x):
      return n_a * family.kl(m_a, x) + n_b * family.kl(m_b, x + eps)

    lo, hi = eps_bracket(family, m_a, m_b, eps)
    if method == "bisect":
      x = eps_minimiser(family, n_a, m_a, n_b, m_b, eps, iters)
    else:
      x = golden_section(objective, lo, jnp.maximum(lo, hi), iters or GOLDEN_ITERS)
    value = jnp.where(lo > hi, jnp.inf, jnp.maximum(objective(x), 0.0))
  else:
    raise ValueError(f"unknown method {method!r}; use closed, bisect, golden or auto")
  return Transport(jnp.where(m_a - m_b + eps > 0, value, 0.0), x)


def eps_cost(family: Family, n_a, m_a, n_b, m_b, eps, method: str = "auto"):
  """The cost of the alternative lambda_b >= lambda_a + eps, elementwise: the
  value of `eps_transport` (same arguments)."""
  return eps_transport(family, n_a, m_a, n_b, m_b, eps, method).value


def eps_costs(family: Family, w, means, leader, eps):
  """[K] the eps-GLLR's pieces with weights w at `means`: arm j's cost of the
  alternative lambda_j >= lambda_leader + eps (`eps_cost`), +inf at the leader;
  for eps the number 0, the GLLR's pair costs (`jbai.transport.pair_costs`, the
  engine's computation). eps may be a runtime value."""
  if isinstance(eps, (int, float)) and eps == 0:
    return pair_costs(family, w, means, leader)
  is_top = jnp.arange(jnp.shape(means)[-1]) == leader
  n_a, m_a = entry(w, leader)[..., 0], entry(means, leader)[..., 0]
  return jnp.where(is_top, jnp.inf, eps_cost(family, n_a, m_a, w, means, eps))


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


def check_slack(eps) -> float:
  """eps as a float, once it is a finite number >= 0.

  Raises:
    ValueError: naming a bad eps.
  """
  try:
    eps = float(eps)
  except (TypeError, ValueError):
    raise ValueError(f"eps must be a number >= 0, got {eps!r}") from None
  if not (eps >= 0 and eps < float("inf")):
    raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
  return eps


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


def is_eps_good(xp, means, answer, eps: float):
  """Whether each answer is eps-good for its instance: means[..., answer] >=
  max(means) - eps (answer -1, a trial at the cap, is not).

  Args:
    xp: numpy or jax.numpy.
    means: [N, K] the true means of each trial's instance.
    answer: [N, D] answers.
    eps: slack >= 0.
  """
  safe = xp.maximum(answer, 0)
  picked = xp.take_along_axis(means, safe, axis=-1)  # [N, D]
  good = picked >= xp.max(means, axis=-1, keepdims=True) - eps
  return good & (answer >= 0)


def rule_for_eps(rule, eps_good: Optional[float]):
  """A rule given by name, built for the run's eps where its factory takes
  eps_good (ebtc-eps, lucb1-eps, tas-d-eps: `simulate(..., "ebtc-eps",
  eps_good=0.05)`); any other rule unchanged."""
  if not (isinstance(rule, str) and eps_good is not None):
    return rule
  from jbai import rules  # the rules import this module
  return rules.get(rule, eps_good=eps_good) if rule in rules.RULES else rule


def with_eps(rule, threshold, eps_good: Optional[float]):
  """The stop a run with `eps_good` uses: the eps-GLLR against `threshold` (a GLLR
  threshold or its name; None: gk16). Without eps_good, `threshold` unchanged.

  A rule built for eps-good answers (its own stop carries an eps > 0: ebtc-eps,
  lucb1-eps) keeps its own stop where `threshold` is None, and must have been
  built with the run's eps.

  Raises:
    ValueError: eps_good with a stop other than the GLLR (the rule's own, or one
      named), where eps-good answers are not defined, or with a rule built for
      another eps; the message says what to run.
  """
  own = getattr(rule, "stop", None)
  name = getattr(rule, "name", "?")
  own_eps = eps_of(own)
  if eps_good is None:
    return threshold
  if own_eps > 0 and float(eps_good) != own_eps:
    raise ValueError(
        f"rule {name!r} was built for eps-good answers with eps_good={own_eps}, but the "
        f"run asks eps_good={eps_good}: build the rule with eps_good={eps_good}")
  if isinstance(threshold, Stop) and threshold.name != NAME:
    raise ValueError(
        f"eps_good is defined for the GLLR stop, not for stop {threshold.name!r}: pass "
        "threshold='gk16' (or another GLLR threshold) with eps_good")
  if isinstance(threshold, Stop):
    threshold = threshold_of(threshold)
  if threshold is None:
    if own_eps > 0:
      return own
    if own is not None:
      hint = ("use a GLLR rule, e.g. rule 'tcb' or 'tas-d'" if own.name == "elimination"
              else f"pass threshold='gk16' to run {name!r} with the GLLR stop")
      raise ValueError(
          f"rule {name!r} stops with its own stop {own.name!r}, where eps-good answers "
          f"are not defined: {hint}")
    threshold = "gk16"
  return eps_gllr(eps_good, threshold)
