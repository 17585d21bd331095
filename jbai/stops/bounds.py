"""Confidence bounds of the LUCB family: exploration rates and indexes.

An index turns an arm's projected sample mean m, its count N and an exploration
rate beta into an upper bound U and a lower bound L on its mean:

  * `kl` (Kaufmann & Kalyanakrishnan 2013, KL-LUCB, eq. (2)):
      U = max{q >= m : N kl(m, q) <= beta},  L = min{q <= m : N kl(m, q) <= beta},
    by bisection on the family's divergence over Theta (a fixed number of
    iterations, down to the float dtype's resolution, so that it ends under vmap), in closed form for the Gaussian
    family (m +- sigma sqrt(2 beta / N));
  * `subgaussian` (Hoeffding; Kalyanakrishnan et al. 2012, LUCB1):
      U, L = m +- sqrt(2 s^2 beta / N), s^2 the family's variance proxy
    (`subgaussian_variance`: (hi - lo)^2 / 4 for a bounded family, so
    sqrt(beta / (2N)) for rewards in [0, 1], as in LUCB1; sigma^2 for Gaussian).

An arm never pulled has L = lo and U = hi. The rates beta(t, delta), with t the
number of rewards so far (best-arm's convention; the papers count rounds of two
pulls, which gives a smaller t and a smaller beta), K arms and log(1/delta):

  lucb1    log(5 K t^4 / (4 delta))          Kalyanakrishnan et al. 2012, Thm 1
  kl-lucb  log(405.5 K t^1.1 / delta)        Kaufmann & Kalyanakrishnan 2013, Thm 3
                                             (alpha = 1.1, k1 = 405.5, their experiments)
  ugape    log(4 K t^3 / delta)              Gabillon et al. 2012, Thm 1 (c = 1/2 b^2)
  gk16     log((log t + 1) / delta)          Garivier & Kaufmann 2016, Section 6

Sources checked: "lucb1" agrees with best-arm (algorithms/lucb1.py: k1 = 5/4,
t = the number of rewards); "gk16" agrees with the rate of the authors'
experiments code, explo(t, n, delta) = log((log(t) + 1) / delta) with t the
number of rewards (jsfunc/best-arm-identification mainBAI.jl, Garivier &
Kaufmann 2016). The theorem and section numbers in the table, the constants of
"kl-lucb" and "ugape", and the papers' count of t in rounds were not checked
against the papers' text (the stored copies here give only their first page).
"""

import math
from typing import Optional

import jax
import jax.numpy as jnp

from jbai.families.base import Family

MAX_BISECTION_STEPS = 60
INDEXES = ("kl", "subgaussian")


def _lucb1(t, log_inv, k):
  return math.log(1.25 * k) + 4.0 * jnp.log(t) + log_inv


def _kl_lucb(t, log_inv, k):
  return math.log(405.5 * k) + 1.1 * jnp.log(t) + log_inv


def _ugape(t, log_inv, k):
  return math.log(4.0 * k) + 3.0 * jnp.log(t) + log_inv


def _gk16(t, log_inv, k):
  del k
  return jnp.log(jnp.log(t) + 1.0) + log_inv


RATES = {"lucb1": _lucb1, "kl-lucb": _kl_lucb, "ugape": _ugape, "gk16": _gk16}


def check_rate(rate: str) -> str:
  if rate not in RATES:
    raise ValueError(f"unknown exploration rate {rate!r}; choose from {sorted(RATES)}")
  return rate


def check_index(index: str) -> str:
  if index not in INDEXES:
    raise ValueError(f"unknown confidence index {index!r}; choose from {list(INDEXES)}")
  return index


def rate(name: str, t, log_inv, num_arms: int) -> jax.Array:
  """beta(t, delta) of the named rate, t >= 1 rewards (broadcasts over log_inv)."""
  t = jnp.maximum(jnp.asarray(t, jnp.asarray(log_inv).dtype), 1.0)
  return RATES[name](t, log_inv, num_arms)


def checked_variance(family: Family, rule_name: str) -> float:
  """`subgaussian_variance`, or ValueError naming the rule and the family."""
  s2 = subgaussian_variance(family)
  if s2 is None:
    raise ValueError(f"rule {rule_name!r} needs sub-Gaussian rewards (a Bernoulli or "
                     f"Gaussian family), not {family.name!r}")
  return s2


def subgaussian_variance(family: Family) -> Optional[float]:
  """The family's sub-Gaussian variance proxy: sigma^2 for the Gaussian family,
  (hi - lo)^2 / 4 for a family with bounded rewards (Bernoulli), else None."""
  params = dict(family.params)
  if family.name == "gaussian" and "sigma" in params:
    return float(params["sigma"]) ** 2
  if family.name == "bernoulli":
    return (family.hi - family.lo) ** 2 / 4.0
  return None


def bisection_steps(family: Family, dtype) -> int:
  """Halvings of Theta = [lo, hi] down to the dtype's resolution (float32, [0, 1]:
  24; float64: 53), at most MAX_BISECTION_STEPS."""
  width = max(family.hi - family.lo, 1.0)
  return min(MAX_BISECTION_STEPS,
             int(math.ceil(math.log2(width / float(jnp.finfo(dtype).eps)))) + 1)


def _bisect(family: Family, m, bound, level):
  """The q between m and `bound` where N kl(m, q) = beta (level = beta / N),
  the end nearest m at which kl stays <= level."""
  def body(_, ends):
    inside, outside = ends
    mid = 0.5 * (inside + outside)
    ok = family.kl(m, mid) <= level
    return jnp.where(ok, mid, inside), jnp.where(ok, outside, mid)

  inside, outside = jax.lax.fori_loop(
      0, bisection_steps(family, m.dtype), body, (m, jnp.broadcast_to(bound, m.shape)))
  whole = family.kl(m, jnp.broadcast_to(bound, m.shape)) <= level
  return jnp.where(whole, bound, inside)


def kl_bound(family: Family, mean, level, upper: bool):
  """The KL confidence bound max (upper) or min (lower) {x in Theta : d(mean, x) <= level}
  (KL-UCB's index): m +- sqrt(2 sigma^2 level) for the Gaussian family, else by
  bisection between the mean and the end of Theta (`bisection_steps` halvings)."""
  mean = jnp.asarray(mean)
  level = jnp.maximum(jnp.asarray(level, mean.dtype), 0.0)
  shape = jnp.broadcast_shapes(mean.shape, level.shape)
  sigma2 = _kl_index(family, "kl")
  if sigma2 is not None:
    width = jnp.sqrt(2.0 * sigma2 * level)
    return jnp.broadcast_to(mean + width if upper else mean - width, shape)
  end = jnp.asarray(family.hi if upper else family.lo, mean.dtype)
  return _bisect(family, jnp.broadcast_to(mean, shape), end, jnp.broadcast_to(level, shape))


def _kl_index(family: Family, index: str) -> Optional[float]:
  """The variance s^2 when the bounds are m +- sqrt(2 s^2 beta / N) (the sub-Gaussian
  index, or the KL index of the Gaussian family, the same); None: bisection."""
  sigma2 = subgaussian_variance(family)
  if index == "subgaussian" and sigma2 is None:
    raise ValueError(f"the sub-Gaussian index needs a Bernoulli or Gaussian family, not "
                     f"{family.name!r}; use the kl index")
  if index == "subgaussian" or family.name == "gaussian":
    return sigma2
  return None


def bounds(family: Family, index: str, counts, mean, beta, sides=("lower", "upper")):
  """(L, U): lower and upper confidence bounds, [..., K] with beta [..., 1] or [].

  Args:
    family: the reward family.
    index: "kl" or "subgaussian".
    counts: [K] int, pulls per arm.
    mean: [K] float, projected sample means.
    beta: exploration rate, broadcasting against [K] (e.g. [D, 1]).
    sides: the bounds to compute ("lower", "upper"); one left out is returned as
      the edge of Theta (no bisection for it).
  """
  shape = jnp.broadcast_shapes(jnp.shape(beta), jnp.shape(mean))
  side = lambda name, upper, edge: (one_side(family, index, counts, mean, beta, upper)
                                    if name in sides else jnp.full(shape, edge, mean.dtype))
  return side("lower", False, family.lo), side("upper", True, family.hi)


def one_side(family: Family, index: str, counts, mean, beta, upper):
  """Each arm's upper confidence bound where `upper` (a bool, or [K] bool) holds and
  its lower bound elsewhere, broadcast with beta as in `bounds`: one bisection
  per arm for the KL index (closed form for the sub-Gaussian index and the
  Gaussian family); an arm never pulled has the edge of Theta."""
  beta = jnp.asarray(beta, mean.dtype)
  n = jnp.maximum(counts, 1).astype(mean.dtype)
  shape = jnp.broadcast_shapes(beta.shape, jnp.shape(mean), jnp.shape(upper))
  m = jnp.broadcast_to(mean, shape)
  end = jnp.where(upper, family.hi, family.lo).astype(mean.dtype)
  sigma2 = _kl_index(family, index)
  if sigma2 is not None:
    width = jnp.sqrt(2.0 * sigma2 * jnp.maximum(beta, 0.0) / n)
    bound = jnp.where(upper, m + width, m - width)
  else:
    bound = _bisect(family, m, end, jnp.broadcast_to(jnp.maximum(beta, 0.0) / n, shape))
  return jnp.where(counts > 0, bound, end).astype(mean.dtype)


def upper_below(family: Family, index: str, counts, mean, beta, x):
  """U < x elementwise, without computing U: for the KL index, U < x exactly
  when m < x and N kl(m, x) > beta (kl(m, .) increases above m); an arm never
  pulled has U = hi."""
  beta = jnp.asarray(beta, mean.dtype)
  n = jnp.maximum(counts, 1).astype(mean.dtype)
  sigma2 = _kl_index(family, index)
  if sigma2 is not None:
    below = mean + jnp.sqrt(2.0 * sigma2 * jnp.maximum(beta, 0.0) / n) < x
  else:
    safe = jnp.clip(x, family.lo, family.hi)
    below = (mean < x) & ((x > family.hi) | (n * family.kl(mean, safe) > beta))
  return jnp.where(counts > 0, below, family.hi < x)


def rule_bounds(family: Family, index: str, rate_name: str, arm_stats, log_inv,
                sides=("lower", "upper")):
  """(L, U) [K] of a delta-dependent rule at its single level log(1/delta) []."""
  num_arms = arm_stats.counts.shape[-1]
  beta = rate(rate_name, arm_stats.t, log_inv, num_arms)
  return bounds(family, index, arm_stats.counts, arm_stats.mean, beta, sides)
