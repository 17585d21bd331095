"""The eps transport cost: the cheapest alternative where another arm is eps above the leader.

An arm i is eps-good when mu_i >= max_j mu_j - eps. With leader a, counts (or
weights) n and means m, the alternative "arm b has lambda_b >= lambda_a + eps"
costs

  min_x  n_a kl(m_a, x) + n_b kl(m_b, x + eps),

the inner minimum over x in [m_b - eps, m_a] (the boundary lambda_b = lambda_a +
eps, where the infimum of the two convex costs lies), intersected with [lo, hi -
eps] so that both means stay in Theta (an empty interval, eps > hi - lo, means
every arm is eps-good: the cost is +inf). It is the eps version of
`jbai.transport.pair_costs` (eps = 0 gives the GLLR's pair costs, bit for bit),
and what the eps-GLLR stop (`jbai.stops.eps_gllr`), the eps-good problem
(`jbai.problems.eps_good`), the eps oracle (`jbai.oracle.eps_solve`) and the
eps rules take.

For the Gaussian family it is (m_a - m_b + eps)^2 / (2 sigma^2 (1/n_a + 1/n_b))
(`gaussian_eps_cost`). Other families find the minimiser by bisection on the
derivative of the objective (`eps_minimiser`, `jbai.transport.bisect_root`),

  g(x) = n_a d/dx kl(m_a, x) + n_b d/dx kl(m_b, x + eps),

which changes sign once on the bracket, from g <= 0 at its lower end to g >= 0 at
its upper one where m_a - m_b + eps > 0 (the objective is unimodal there, as
golden section also needs; convex for Bernoulli and Poisson arms). The slope of
kl is (x - m) I(x) for an exponential family in the reward (Bernoulli, Poisson,
exponential, Gaussian), else forward-mode autodiff of the family's kl in its
second argument (Weibull, logcosh, general families). Bisection evaluates g at
midpoints only, never at the ends of the bracket, which may be ends of Theta
where the slope is infinite (Bernoulli means 0 and 1). A fixed number of
halvings, nmant + 3 of the dtype (26 in float32, 55 in float64), leaves a
bracket (hi - lo) 2^-(nmant + 3) wide. Golden section (`jbai.transport.
golden_section`, method "golden", kept by name) compares values of the
objective, which is flat to second order at its minimiser, so that it places
the minimiser to about the square root of the dtype's precision; both give the
cost to the rounding of the objective (the test against SciPy's bounded
minimiser: 1e-9 relative in float64). Their times: benchmarks/eps_transport.py
and docs/performance.md.

The slack itself is checked here once (`check_slack`): a finite number >= 0 (> 0
for a rule built for eps-good answers) and, with a family, below the width of
Theta.

Sources checked: the cost agrees with `PGLRT` in the code of Garivier &
Kaufmann 2021 (EmilieKaufmann/BAI_epsBAI_code EpsilonBAIalgos.jl): min_{b != a}
min_lambda N_a d(mu_a, lambda) + N_b d(mu_b, lambda + eps), the minimiser
searched in [max(mu_b - eps, 0), min(mu_a, 1 - eps)] for Bernoulli arms, in
closed form for Gaussian arms.
"""

from typing import Optional

import jax
import jax.numpy as jnp

from jbai.families.base import Family, weighted_mean
from jbai.transport import (GOLDEN_ITERS, Transport, bisect_iters, bisect_root, entry,
                            golden_section, pair_costs)


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


def check_slack(eps, family: Optional[Family] = None, exact_rule: Optional[str] = None
                ) -> float:
  """eps as a float, once it is a finite number >= 0 and, with `family`, below the
  width hi - lo of Theta (at or beyond it every arm is eps-good and T*_eps = 0:
  nothing is to be identified). The one check of an eps-good slack: the problem
  `eps_good(eps)`, the eps-GLLR and confidence stops, the eps oracle, a run and a
  study call it.

  Args:
    eps: the slack.
    family: the reward family, whose Theta bounds eps; None: not checked.
    exact_rule: for a rule built for eps-good answers (ebtc-eps, lucb1-eps,
      tas-d-eps), the rule that answers eps = 0: eps must then be > 0 and is
      named eps_good, as the rule's argument.

  Raises:
    ValueError: naming a bad eps.
  """
  name, low = ("eps", ">= 0") if exact_rule is None else ("eps_good", "> 0")
  try:
    value = float(eps)
  except (TypeError, ValueError):
    raise ValueError(f"{name} must be a number {low}, got {eps!r}") from None
  if exact_rule is not None and not 0 < value < float("inf"):
    raise ValueError(f"eps_good must be a finite number > 0, got {eps!r} "
                     f"(for eps = 0 use rule {exact_rule!r})")
  if not (value >= 0 and value < float("inf")):
    raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
  if family is not None and value >= family.hi - family.lo:
    raise ValueError(
        f"eps = {value!r} is at least the width of Theta = [{family.lo}, {family.hi}] of the "
        f"{family.name} family: every arm is eps-good (T*_eps = 0)")
  return value
