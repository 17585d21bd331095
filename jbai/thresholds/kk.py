"""The threshold of Kaufmann & Koolen (2021) for exponential families, `kk`.

For a one-parameter exponential family the threshold is

  beta(t, delta) = 2 T_KK(ln(P / delta) / 2) + 3 sum_{a in {top, ch}} ln(1 + ln N_a)

with T_KK the calibration function of Kaufmann & Koolen (2021) (`t_kk`, built on
the inverse `h_inverse` of h(u) = u - ln u) and P the pieces of the union bound
(K - 1 for the best arm; m (K - m) for the top m and K for thresholding, handed
over by the question's stop: `jbai.thresholds.base`), and for Gaussian arms of
known variance the sharper

  beta(t, delta) = 2 C_G(ln(P / delta) / 2) + 4 ln(4 + ln(t / 2))

with the Gaussian calibration C_G of Jourdan et al. (2022) (`c_gaussian`).

References: E. Kaufmann and W. M. Koolen, "Mixture martingales revisited with
applications to sequential tests and confidence intervals", JMLR 22(246), 2021;
M. Jourdan, R. Degenne, D. Baudry, R. de Heide, E. Kaufmann, "Top two algorithms
revisited", NeurIPS 2022.
"""

import math

import jax
import jax.numpy as jnp
from jax.scipy.special import zeta
from jax.typing import ArrayLike

from jbai.builders import cached
from jbai.thresholds.base import GAUSSIAN_KNOWN, Threshold, log_ratio, pieces_of
from jbai.transport import golden_section

_NEWTON_ITERS = 32
_LOG_2_ZETA_2 = math.log(2 * math.pi ** 2 / 6)  # ln(2 zeta(2))
_LAMBDA_ITERS = 64  # golden-section steps of `c_gaussian`


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


def _init(delta, num_arms, pieces=None):
  x = 0.5 * log_ratio(pieces_of(num_arms, pieces), delta)  # delta: [D] levels or a LogDelta
  return {"kk": 2 * t_kk(x), "gaussian": 2 * c_gaussian(x)}


def _value(params, family, arm_stats, top, ch):
  dtype = params["kk"].dtype
  if family.name in GAUSSIAN_KNOWN:  # known sigma, one or one per arm
    t = jnp.maximum(arm_stats.t, 1).astype(dtype)
    return params["gaussian"] + 4 * jnp.log(4 + jnp.log(t / 2))
  n = jnp.maximum(arm_stats.counts[jnp.stack([top, ch])], 1).astype(dtype)
  return params["kk"] + 3 * jnp.sum(jnp.log1p(jnp.log(n)))


@cached
def kk() -> Threshold:
  """Kaufmann & Koolen (2021) threshold, proven delta-correct for exponential families.

  For a one-parameter exponential family (Bernoulli, Poisson, exponential, ...):

    beta(t, delta) = 2 T_KK(ln(P / delta) / 2)
                     + 3 sum_{a in {top, ch}} ln(1 + ln N_a),

  with T_KK = `t_kk` and N_a = max(T_t(a), 1) the counts of the leader and the
  challenger (Kaufmann & Koolen 2021: their deviation inequality for a sum over
  a subset S of arms, P(exists t: sum_{a in S} N_a d(mu_hat_a, mu_a)
  - 3 sum_{a in S} ln(1 + ln N_a) > |S| T(x / |S|)) <= e^{-x}, with |S| = 2,
  x = ln(P / delta), and a union bound over the P pieces: the K - 1 pairs of the
  best arm, by default; `init` takes pieces=P, as the stop of a question gives
  it). A thresholding piece is one arm, handed over as top = ch: the pair bound
  then exceeds the one-arm bound T(x) + 3 ln(1 + ln N_a), since 2 T(x / 2) >=
  T(x) (and 2 C_G(x / 2) >= C_G(x) for the Gaussian form). For the Gaussian family
  (`family.name == "gaussian"`, known variance) it uses instead the sharper
  Gaussian calibration of Jourdan et al. (2022):

    beta(t, delta) = 2 C_G(ln(P / delta) / 2) + 4 ln(4 + ln(t / 2)),

  with C_G = `c_gaussian` and t >= 1. The choice is made on the family's name
  when the value is traced. `check` rejects families whose `exponential` flag
  is False, for which neither bound is proven. A family exponential in a
  statistic T(x) other than x (Weibull with known shape k: T = x^k) is covered:
  its GLLR with the family's KL and MLE is that of the exponential family of
  T(x), to which the deviation inequality applies.

  Example: K = 5, delta = 1e-8, t = 1000, Gaussian: C_G(9.9035) = 11.855 (at
  lam = 0.968) and beta = 33.005.
  """
  return Threshold("kk", _init, _value, union=True)
