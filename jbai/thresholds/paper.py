"""The stopping threshold of the paper's Theorem 1 (delta-PAC), in a computable form: `paper`.

Theorem 1 stops when Lambda_t(top, ch) > beta_t(delta) with

  beta_t(delta) = W_t(eps) + t eps_t + 2 ln(|Theta| / sqrt(2 pi)) + ln(t P / (2 delta)),

  W_t(eps) = max_i ln I_i(mu_t(i)) - 2 min_i W_t(eps, i),
  W_t(eps, i) = E[ln(1 - 2 Q(eps sqrt(V_t(i))))]   (an expectation over the
                rewards of arm i under mu_t(i); intractable),
  eps_t = max_i max{d(mu_t(i) || mu_t(i) - eps), d(mu_t(i) || mu_t(i) + eps)},

with P the pieces of the union bound (K - 1, the best arm's pairs, by default;
`init` takes pieces=P from the stop of another question: m (K - m) pairs for the
top m, K arms for thresholding, a one-arm deviation being at most a pair's, and
the bound's other terms reading every arm alike), mu_t the MLE, I_i the Fisher
information, V_t(i) the observed information and Q the standard normal tail. The computable form used here:

* Assumption 7 gives V_t(i) >= T_t(i) sigma^2 (sigma^2 = `family.curvature`) and
  ln(1 - 2 Q(y)) increases in y, so W_t(eps, i) is replaced by its lower bound
  ln(1 - 2 Q(eps sigma sqrt(T_t(i)))): the threshold only grows.
* Edges of Theta: the proof (Lemma "Taylor") integrates the prior over
  [mu - eps, mu + eps], which must lie in Theta. With mu near an edge the
  interval is clipped to [l, r] = [max(mu - eps, lo), min(mu + eps, hi)], and the
  same proof gives ln(Phi(b y) - Phi(-a y)) with a = mu - l, b = r - mu in place
  of ln(1 - 2 Q(eps y)), and max{d(mu || l), d(mu || r)} in eps_t. In the
  interior (a = b = eps) this is exactly the paper's formula.
* Unsampled arms: ln(1 - 2 Q(0)) = -inf, so beta = +inf until every arm has been
  sampled (Theorem 1 takes min over all arms).

The choice of eps (`best_eps`): in the proof (Lemma KL_UB) the martingale M_t(i)
does not depend on eps, so the bound on the GLLR holds for all eps at once, and
beta may use an eps chosen from the data at each t (docs/design/paper.md).
"""

import math
from typing import Optional

import jax
import jax.numpy as jnp
from jax.scipy.special import erf, erfc

from jbai.builders import cached
from jbai.families.base import Family
from jbai.thresholds.base import Threshold, check, log_ratio, pieces_of
from jbai.transport import golden_section

EPS_GRID = 25      # coarse log-spaced grid of eps, then golden section
EPS_ITERS = 28     # around the best grid point
EPS_REL_LO = 1e-12  # search for eps in [1e-12 |Theta|, |Theta|], log-scale


def log_gauss_mass(a: jax.Array, b: jax.Array, y: jax.Array) -> jax.Array:
  """ln(Phi(b y) - Phi(-a y)) for a, b, y >= 0, accurate near 0 and near 1.

  The standard normal mass of [-a y, b y]; with a = b = eps it is
  ln(1 - 2 Q(eps y)) = ln erf(eps y / sqrt 2). It is -inf when the interval is
  empty (y = 0: an arm never sampled).
  """
  u = a * y / math.sqrt(2)
  v = b * y / math.sqrt(2)
  mass = 0.5 * (erf(u) + erf(v))
  tail = 0.5 * (erfc(u) + erfc(v))  # 1 - mass
  small = mass < 0.5
  return jnp.where(small, jnp.log(jnp.where(small, mass, 1.0)),
                   jnp.log1p(-jnp.where(small, 0.0, tail)))


def eps_terms(family: Family, arm_stats, eps: jax.Array) -> jax.Array:
  """The eps-dependent part of the threshold, W-bar_t(eps) + t eps_t.

  Args:
    family: a family with `curvature`.
    arm_stats: ArmStats of the trial ([K] arrays).
    eps: [...] positive half-widths (broadcast against a trailing arm axis).

  Returns:
    [...] -2 min_i ln(Phi(b_i y_i) - Phi(-a_i y_i)) + t max_i eps_t terms
    (without the eps-free max_i ln I_i).
  """
  mu = arm_stats.mle
  dtype = mu.dtype
  eps = jnp.asarray(eps, dtype)[..., None]
  left = jnp.maximum(mu - eps, family.lo)   # [..., K] endpoints of the
  right = jnp.minimum(mu + eps, family.hi)  # integration interval, in Theta
  a = mu - left
  b = right - mu
  y = jnp.sqrt(arm_stats.counts.astype(dtype) * family.curvature)
  log_mass = log_gauss_mass(a, b, y)
  div = jnp.maximum(family.kl(mu, left), family.kl(mu, right))
  div = jnp.maximum(div, 0.0)
  t = arm_stats.t.astype(dtype)
  return -2 * jnp.min(log_mass, axis=-1) + t * jnp.max(div, axis=-1)


def best_eps(family: Family, arm_stats, dtype) -> jax.Array:
  """[] the eps that minimises `eps_terms` at this t (the same for every delta).

  The best of EPS_GRID log-spaced values over [EPS_REL_LO |Theta|, |Theta|], then
  EPS_ITERS golden-section steps on ln eps between its grid neighbours (the
  objective can have several local minima where the intervals meet the edges of
  Theta).
  """
  width = family.hi - family.lo

  def objective(log_e):
    return eps_terms(family, arm_stats, jnp.exp(log_e))

  grid = jnp.linspace(math.log(EPS_REL_LO * width), math.log(width), EPS_GRID, dtype=dtype)
  best = jnp.argmin(objective(grid))
  lo = grid[jnp.maximum(best - 1, 0)]
  hi = grid[jnp.minimum(best + 1, EPS_GRID - 1)]
  return jnp.exp(golden_section(objective, lo, hi, EPS_ITERS))


def free_terms(family: Family, arm_stats, dtype) -> jax.Array:
  """[] the eps- and delta-free part of the threshold,
  max_i ln I_i(mu_t(i)) + 2 ln(|Theta| / sqrt(2 pi)) + ln(t / 2)."""
  width = family.hi - family.lo
  log_fisher = jnp.max(jnp.log(family.fisher(arm_stats.mle).astype(dtype)))
  t = jnp.maximum(arm_stats.t, 1).astype(dtype)
  return log_fisher + 2 * math.log(width / math.sqrt(2 * math.pi)) + jnp.log(t / 2)


def _init(delta, num_arms, pieces=None):
  # delta: [D] levels or a LogDelta (jbai.thresholds.base); P pieces, K - 1 by default
  return {"log_k1_delta": log_ratio(pieces_of(num_arms, pieces), delta)}


def _check_eps(eps) -> Optional[float]:
  """eps as a float, or None; ValueError naming it when it is not positive and finite."""
  if eps is None:
    return None
  try:
    ok = math.isfinite(float(eps)) and float(eps) > 0
  except (TypeError, ValueError):
    ok = False
  if not ok:
    raise ValueError(f"eps must be None or a positive finite number, got {eps!r}")
  return float(eps)


def paper(eps: Optional[float] = None) -> Threshold:
  """The threshold of the paper's Theorem 1 (delta-PAC), in the computable form of
  the module docstring.

  Choice of eps. For a fixed eps, t eps_t grows linearly in t: the GLLR, about
  t Gamma(nu), crosses beta only if eps_t < Gamma(nu) (for Gaussian arms,
  eps < sigma sqrt(2 Gamma)), so no fixed default suits every instance. The
  default `eps=None` takes at each t the eps that minimises the eps-dependent
  part of beta (`best_eps`); beta is evaluated exactly at the eps found, so it
  stays valid even where the search is not exactly optimal. It then behaves like
  ln(t / delta) + O(1) + 2 ln |Theta|, with eps of order 1/sqrt(sigma^2 t). A
  float `eps` gives the theorem with that fixed eps (in units of the mean).

  Applies to families with `curvature` (Assumption 7); `check` raises
  ValueError for the others (Poisson and exponential: the support reaches 0).
  For Bernoulli with Theta = [0, 1] the Fisher information is infinite at 0
  and 1 (Assumption 6 fails there): while an MLE sits on an edge, ln I is that
  of the family's clipped Fisher information, large and dtype-dependent.

  Args:
    eps: None (optimise over eps at each t; default) or a fixed eps > 0.

  Returns:
    The Threshold.

  Raises:
    ValueError: naming eps when it is not a positive finite number.
  """
  return _build(_check_eps(eps))


@cached
def _build(eps: Optional[float]) -> Threshold:
  """The `paper` threshold for a checked eps (None: optimised at each t)."""

  def value(params, family, arm_stats, top, ch):
    del top, ch
    check(threshold, family)
    dtype = params["log_k1_delta"].dtype
    e = best_eps(family, arm_stats, dtype) if eps is None else jnp.asarray(eps, dtype)
    free = free_terms(family, arm_stats, dtype)
    return eps_terms(family, arm_stats, e) + free + params["log_k1_delta"]

  threshold = Threshold("paper", _init, value, (("eps", eps),), union=True)
  return threshold
