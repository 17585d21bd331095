"""Stopping thresholds beta_t(delta) for the GLLR stopping rule (paper eq. stop).

A threshold is a NamedTuple of two pure functions:

  init(delta, num_arms) -> params      delta: [D] confidence levels; params: pytree
  value(params, family, arm_stats, top, ch) -> [D]   beta_t(delta) for each delta

`init` runs once per simulation (inside jit), so that work depending on delta
alone (a calibration function, say) is not repeated every step. The engine stops a
trial for level delta_d at the first t with Lambda_t(top, ch) > value[d].

Three thresholds are registered in `THRESHOLDS`:

  * `gk16`: log((1 + log t) / delta), the heuristic of Garivier & Kaufmann (2016).
  * `kk`: the delta-correct threshold of Kaufmann & Koolen (2021) for
    one-parameter exponential families, with the sharper Gaussian calibration of
    Jourdan et al. (2022) when the family is Gaussian.
  * `paper`: Theorem 1 (delta-PAC) of the paper, for general families that meet
    its Assumption 7, in a computable conservative form.

Whether a threshold is proven for a family is checked at the Python boundary by
`check(threshold, family)`, which raises ValueError when it is not.
"""

import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax.scipy.special import erf, erfc, zeta
from jax.typing import ArrayLike

from jbai.families.base import Family
from jbai.identity import same
from jbai.transport import golden_section


class Threshold(NamedTuple):
  name: str
  init: Callable[[jax.Array, int], Any]
  value: Callable[..., jax.Array]
  params: tuple = ()

  def __repr__(self):
    return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params)})"

  def __hash__(self):
    return hash((self.name, self.params))

  def __eq__(self, other):
    # Equal names and parameters, and functions that compute alike (as Family).
    return (isinstance(other, Threshold) and
            (self.name, self.params) == (other.name, other.params) and
            same((self.init, self.value), (other.init, other.value)))


def _float_delta(delta: ArrayLike) -> jax.Array:
  """delta as a float array (ints and Python floats promoted)."""
  delta = jnp.asarray(delta)
  if not jnp.issubdtype(delta.dtype, jnp.floating):
    delta = delta * 1.0
  return delta


def gk16() -> Threshold:
  """beta_t(delta) = log((1 + log t) / delta), the heuristic of Garivier & Kaufmann (2016).

  Used in most experiments of the literature (and the paper's); not proven
  delta-correct.
  """

  def init(delta, num_arms):
    del num_arms
    return {"log_inv_delta": -jnp.log(_float_delta(delta))}

  def value(params, family, arm_stats, top, ch):
    del family, top, ch
    t = jnp.maximum(arm_stats.t, 1).astype(params["log_inv_delta"].dtype)
    return jnp.log1p(jnp.log(t)) + params["log_inv_delta"]

  return Threshold("gk16", init, value)


# --------------------------------------------------------------------------
# Kaufmann & Koolen (2021) calibration T_KK.

_NEWTON_ITERS = 32
_LOG_2_ZETA_2 = math.log(2 * math.pi ** 2 / 6)  # ln(2 zeta(2))


def h_inverse(y: ArrayLike) -> jax.Array:
  """Inverse of h(u) = u - ln u on u >= 1 (so h_inverse(y) >= 1 for y >= 1).

  Equals -W_{-1}(-e^{-y}) with W_{-1} the lower real branch of Lambert's W.
  Newton's method on the convex increasing h, started at
  u0 = y + sqrt(2 (y - 1)) (which lies right of the root: the root is
  1 + sqrt(2 v) + 2v/3 + ... for small v = y - 1 and y + ln y + ... for large
  y), decreases monotonically to the root; a fixed number of steps so that it
  runs under vmap. Inputs below 1 are treated as 1.

  Args:
    y: values in [1, inf).

  Returns:
    u >= 1 with u - ln u = y, elementwise.
  """
  y = jnp.maximum(jnp.asarray(y) * 1.0, 1.0)
  u = y + jnp.sqrt(2 * (y - 1))

  def body(_, u):
    step = (u - jnp.log(u) - y) / (1 - 1 / u)
    return jnp.maximum(jnp.where(u > 1, u - step, u), 1.0)

  return jax.lax.fori_loop(0, _NEWTON_ITERS, body, u)


def _h_tilde(x: jax.Array, z: float = 1.5) -> jax.Array:
  """h~_z(x) of Kaufmann & Koolen (2021), for z in (1, e]:

    h~_z(x) = e^{1 / h^{-1}(x)} h^{-1}(x)   if x >= h(1 / ln z),
              z (x - ln ln z)               otherwise.

  The two branches meet with equal value and slope z at x = h(1 / ln z),
  where h^{-1}(x) = 1 / ln z.
  """
  switch = 1 / math.log(z) - math.log(1 / math.log(z))  # h(1 / ln z)
  u = h_inverse(jnp.maximum(x, switch))
  return jnp.where(x >= switch, jnp.exp(1 / u) * u, z * (x - math.log(math.log(z))))


def t_kk(x: ArrayLike) -> jax.Array:
  """The calibration function T of Kaufmann & Koolen (2021), elementwise.

    T(x) = 2 h~_{3/2}((h^{-1}(1 + x) + ln(2 zeta(2))) / 2),

  with h(u) = u - ln u (u >= 1) and h~ as in `_h_tilde`. For x >= 5 or so,
  T(x) is close to x + 4 ln(1 + x + sqrt(2 x)).

  Reference: E. Kaufmann and W. M. Koolen, "Mixture martingales revisited with
  applications to sequential tests and confidence intervals", JMLR 22(246),
  2021: the calibration function of their deviation inequalities for sums
  of N_a d(mu_hat_a, mu_a) over a subset of arms.

  Args:
    x: [...] non-negative reals.

  Returns:
    T(x), same shape.
  """
  x = jnp.asarray(x) * 1.0
  return 2 * _h_tilde((h_inverse(1 + x) + _LOG_2_ZETA_2) / 2)


# --------------------------------------------------------------------------
# Gaussian calibration C_G of Jourdan et al. (2022).

_LAMBDA_ITERS = 64


def _g_gaussian(lam: jax.Array) -> jax.Array:
  """g_G(lam) = 2 lam - 2 lam ln(4 lam) + ln zeta(2 lam) - ln(1 - lam) / 2."""
  return (2 * lam - 2 * lam * jnp.log(4 * lam) + jnp.log(zeta(2 * lam, 1.0))
          - 0.5 * jnp.log1p(-lam))


def c_gaussian(x: ArrayLike, return_lambda: bool = False):
  """The Gaussian calibration C_G(x) = min_{lam in (1/2, 1]} (g_G(lam) + x) / lam.

  g_G(lam) = 2 lam - 2 lam ln(4 lam) + ln zeta(2 lam) - (1/2) ln(1 - lam). The
  objective is +inf at both ends (zeta has its pole at 1, ln(1 - lam) at 1) and
  unimodal in between; golden-section search with 64 iterations brackets the
  minimiser to 0.5 * 0.618^64, far below float rounding.

  Reference: M. Jourdan, R. Degenne, D. Baudry, R. de Heide, E. Kaufmann, "Top
  two algorithms revisited", NeurIPS 2022 (stopping threshold for Gaussian arms,
  built on Kaufmann & Koolen 2021).

  Args:
    x: [...] non-negative reals.
    return_lambda: also return the minimising lam.

  Returns:
    C_G(x) (and lam), same shape as x.

  Example:
    >>> round(float(c_gaussian(0.5 * math.log(4 / 1e-8))), 3)
    11.855
  """
  x = jnp.asarray(x) * 1.0

  def objective(lam):
    return (_g_gaussian(lam) + x) / lam

  lam = golden_section(objective, jnp.full_like(x, 0.5), jnp.ones_like(x),
                       _LAMBDA_ITERS)
  value = objective(lam)
  return (value, lam) if return_lambda else value


def kk() -> Threshold:
  """Kaufmann & Koolen (2021) threshold, proven delta-correct for exponential families.

  For a one-parameter exponential family (Bernoulli, Poisson, exponential, ...):

    beta(t, delta) = 2 T_KK(ln((K - 1) / delta) / 2)
                     + 3 sum_{a in {top, ch}} ln(1 + ln N_a),

  with T_KK = `t_kk` and N_a = max(T_t(a), 1) the counts of the leader and the
  challenger (Kaufmann & Koolen 2021: their deviation inequality for a sum over
  a subset S of arms, P(exists t: sum_{a in S} N_a d(mu_hat_a, mu_a)
  - 3 sum_{a in S} ln(1 + ln N_a) > |S| T(x / |S|)) <= e^{-x}, with |S| = 2,
  x = ln((K - 1) / delta), and a union bound over the K - 1 alternatives). For the Gaussian family
  (`family.name == "gaussian"`, known variance) it uses instead the sharper
  Gaussian calibration of Jourdan et al. (2022):

    beta(t, delta) = 2 C_G(ln((K - 1) / delta) / 2) + 4 ln(4 + ln(t / 2)),

  with C_G = `c_gaussian` and t >= 1. The choice is made on the family's name
  when the value is traced. `check` rejects families whose `exponential` flag
  is False, for which neither bound is proven. A family exponential in a
  statistic T(x) other than x (Weibull with known shape k: T = x^k) is covered:
  its GLLR with the family's KL and MLE is that of the exponential family of
  T(x), to which the deviation inequality applies.

  Example: K = 5, delta = 1e-8, t = 1000, Gaussian: C_G(9.9035) = 11.855 (at
  lam = 0.968) and beta = 33.005.
  """

  def init(delta, num_arms):
    delta = _float_delta(delta)
    x = 0.5 * jnp.log((num_arms - 1) / delta)
    return {"kk": 2 * t_kk(x), "gaussian": 2 * c_gaussian(x)}

  def value(params, family, arm_stats, top, ch):
    dtype = params["kk"].dtype
    if family.name == "gaussian":
      t = jnp.maximum(arm_stats.t, 1).astype(dtype)
      return params["gaussian"] + 4 * jnp.log(4 + jnp.log(t / 2))
    n = jnp.maximum(arm_stats.counts[jnp.stack([top, ch])], 1).astype(dtype)
    return params["kk"] + 3 * jnp.sum(jnp.log1p(jnp.log(n)))

  return Threshold("kk", init, value)


# --------------------------------------------------------------------------
# The paper's Theorem 1.

_EPS_GRID = 25      # coarse log-spaced grid of eps, then golden section
_EPS_ITERS = 28     # around the best grid point
_EPS_REL_LO = 1e-12  # search for eps in [1e-12 |Theta|, |Theta|], log-scale


def _log_gauss_mass(a: jax.Array, b: jax.Array, y: jax.Array) -> jax.Array:
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


def _paper_eps_terms(family: Family, arm_stats, eps: jax.Array) -> jax.Array:
  """The eps-dependent part of the paper's threshold, W-bar_t(eps) + t eps_t.

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
  log_mass = _log_gauss_mass(a, b, y)
  div = jnp.maximum(family.kl(mu, left), family.kl(mu, right))
  div = jnp.maximum(div, 0.0)
  t = arm_stats.t.astype(dtype)
  return -2 * jnp.min(log_mass, axis=-1) + t * jnp.max(div, axis=-1)


def paper(eps: Optional[float] = None) -> Threshold:
  """The threshold of the paper's Theorem 1 (delta-PAC), in a computable form.

  Theorem 1 stops when Lambda_t(top, ch) > beta_t(delta) with

    beta_t(delta) = W_t(eps) + t eps_t + 2 ln(|Theta| / sqrt(2 pi))
                    + ln(t (K - 1) / (2 delta)),

    W_t(eps) = max_i ln I_i(mu_t(i)) - 2 min_i W_t(eps, i),
    W_t(eps, i) = E[ln(1 - 2 Q(eps sqrt(V_t(i))))]   (an expectation over the
                  rewards of arm i under mu_t(i); intractable),
    eps_t = max_i max{d(mu_t(i) || mu_t(i) - eps), d(mu_t(i) || mu_t(i) + eps)},

  with mu_t the MLE, I_i the Fisher information, V_t(i) the observed
  information and Q the standard normal tail. Computable form used here:

  * Assumption 7 gives V_t(i) >= T_t(i) sigma^2 (sigma^2 = `family.curvature`)
    and ln(1 - 2 Q(y)) increases in y, so W_t(eps, i) is replaced by its lower
    bound ln(1 - 2 Q(eps sigma sqrt(T_t(i)))): the threshold only grows.
  * Edges of Theta: the proof (Lemma "Taylor") integrates the prior over
    [mu - eps, mu + eps], which must lie in Theta. With mu near an edge the
    interval is clipped to [l, r] = [max(mu - eps, lo), min(mu + eps, hi)], and
    the same proof gives ln(Phi(b y) - Phi(-a y)) with a = mu - l, b = r - mu
    in place of ln(1 - 2 Q(eps y)), and max{d(mu || l), d(mu || r)} in eps_t.
    In the interior (a = b = eps) this is exactly the paper's formula.
  * Unsampled arms: ln(1 - 2 Q(0)) = -inf, so beta = +inf until every arm has
    been sampled (Theorem 1 takes min over all arms).

  Choice of eps. For a fixed eps, t eps_t grows linearly in t: the GLLR, about
  t Gamma(nu), crosses beta only if eps_t < Gamma(nu) (for Gaussian arms,
  eps < sigma sqrt(2 Gamma)), so no fixed default suits every instance. In the
  proof (Lemma KL_UB) the martingale M_t(i) does not depend on eps, so the
  bound on the GLLR holds for all eps at once, and beta may use an eps chosen
  from the data at each t. The default `eps=None` does so: at each t it takes
  the eps that minimises the eps-dependent part of beta (the same for every
  delta): the best of 25 log-spaced values over [1e-12 |Theta|, |Theta|], then
  28 golden-section steps on ln eps between its grid neighbours (the objective
  can have several local minima where intervals meet the edges of Theta). beta
  is evaluated exactly at the eps found, so it stays valid even where the
  search is not exactly optimal. It then behaves like
  ln(t / delta) + O(1) + 2 ln |Theta|, with eps of order 1/sqrt(sigma^2 t).
  A float `eps` gives the theorem with that fixed eps (in units of the mean).

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
  if eps is not None:
    try:
      ok = math.isfinite(float(eps)) and float(eps) > 0
    except (TypeError, ValueError):
      ok = False
    if not ok:
      raise ValueError(f"eps must be None or a positive finite number, got {eps!r}")
    eps = float(eps)

  def init(delta, num_arms):
    delta = _float_delta(delta)
    return {"log_k1_delta": jnp.log((num_arms - 1) / delta)}

  def value(params, family, arm_stats, top, ch):
    del top, ch
    check(threshold, family)
    dtype = params["log_k1_delta"].dtype
    width = family.hi - family.lo
    if eps is None:
      def objective(log_e):
        return _paper_eps_terms(family, arm_stats, jnp.exp(log_e))
      grid = jnp.linspace(math.log(_EPS_REL_LO * width), math.log(width),
                          _EPS_GRID, dtype=dtype)
      best = jnp.argmin(objective(grid))
      lo = grid[jnp.maximum(best - 1, 0)]
      hi = grid[jnp.minimum(best + 1, _EPS_GRID - 1)]
      e = jnp.exp(golden_section(objective, lo, hi, _EPS_ITERS))
    else:
      e = jnp.asarray(eps, dtype)
    log_fisher = jnp.max(jnp.log(family.fisher(arm_stats.mle).astype(dtype)))
    t = jnp.maximum(arm_stats.t, 1).astype(dtype)
    free = (log_fisher + 2 * math.log(width / math.sqrt(2 * math.pi))
            + jnp.log(t / 2))
    return _paper_eps_terms(family, arm_stats, e) + free + params["log_k1_delta"]

  threshold = Threshold("paper", init, value, (("eps", eps),))
  return threshold


THRESHOLDS = {"gk16": gk16, "kk": kk, "paper": paper}


def get(name: str, **params) -> Threshold:
  """Builds a threshold by name; raises ValueError naming an unknown one."""
  if name not in THRESHOLDS:
    raise ValueError(f"unknown threshold {name!r}; choose from {sorted(THRESHOLDS)}")
  return THRESHOLDS[name](**params)


# Thresholds in the order they are suggested when one does not apply: proven
# ones first, the heuristic last.
PREFERRED = ("kk", "paper", "gk16")


def refusal(threshold: Threshold, family: Family) -> Optional[str]:
  """Why a threshold does not apply to a family, or None when it does.

  * `paper` needs the family's Assumption 7 constant (`family.curvature`;
    Poisson, exponential and, by default, Weibull rewards have none) and a
    bounded Theta.
  * `kk` is proven for one-parameter exponential families in some sufficient
    statistic (`family.exponential`: every family built with
    `jbai.families.exponential_family`, and `weibull`, exponential in x^k).
  * `gk16` (a heuristic) and thresholds unknown to this module apply to every
    family.

  Args:
    threshold: the stopping threshold.
    family: the reward family.

  Returns:
    A one-line reason naming the threshold and the family, or None.
  """
  if threshold.name == "paper":
    curvature = family.curvature
    if curvature is None or not curvature > 0:
      return (f"threshold 'paper' does not apply to the {family.name!r} family: it "
              "needs Assumption 7 (-d^2/dm^2 log pi(x|m) >= sigma^2 > 0), and the "
              f"family's curvature is {curvature!r}")
    if not math.isfinite(family.hi - family.lo):
      return (f"threshold 'paper' needs a bounded Theta; the {family.name!r} family "
              f"has Theta = [{family.lo}, {family.hi}]")
  elif threshold.name == "kk" and not family.exponential:
    return (f"threshold 'kk' is proven for one-parameter exponential families, and "
            f"the {family.name!r} family is not one (family.exponential is False)")
  return None


def check(threshold: Threshold, family: Family) -> None:
  """Checks at the Python boundary that a threshold applies to a family.

  See `refusal` for the conditions.

  Args:
    threshold: the stopping threshold.
    family: the reward family.

  Returns:
    None.

  Raises:
    ValueError: naming the threshold, the family and the thresholds that apply
      to it, when this one does not.
  """
  reason = refusal(threshold, family)
  if reason is not None:
    usable = [name for name in PREFERRED if refusal(get(name), family) is None]
    raise ValueError(f"{reason}; use threshold {' or '.join(map(repr, usable))}")


check_family = check
