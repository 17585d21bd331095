"""Stopping thresholds for the EV-GLR and the unknown-variance GLR, proven delta-correct.

SOURCE. Jourdan, Degenne & Kaufmann (ALT 2023, arXiv 2210.00974) calibrate both
stops with time-uniform concentration inequalities of their own. The paper's text
could not be read in the sitting that wrote this module; the slides of its ALT 2023
talk could (github.com/marcjourdan/marcjourdan,
content/publication/BAIUV/altpresentation.pdf). They define the two statistics as
`jbai.variance.costs` does (MLE variances, divided by N), and show four threshold
families for the GLR (Student: per-arm t quantiles; Box: per-arm confidence regions
on the mean and the variance; KL: pairwise, +inf while min N is below about
2 log(1/delta) / log log(1/delta), then about log(1/delta) + sum log log N; BoB: the
best of Box and KL, a small maximisation), and a time-uniform bound on the
empirical variance, sigma_hat^2 / sigma^2 >= x with x the lower root of
x - log x = 1 + 2 g / (n - 1), g about log(1/delta) + log log n (peeling,
Howard et al. 2020). Their exact constants are not on the slides.

The thresholds below are therefore derived here, with the proof in this
docstring. `variance_lower_bound` is the slides' variance bound with a union over n
in place of peeling (g = log(1/delta) + 2 log(n - 1) + log zeta(2), a little looser);
`uv_threshold` is a Box threshold (per-arm bounds on the means, through the
known-variance pair bound, and on the variances), spread over the pair by water
filling, as BoB's maximisation spreads its budget; `ev_threshold` plugs the same
bounds into the EV-GLR. Neither is asymptotically tight at a fixed count
(L_n -> 0 as delta -> 0), as the slides' Theorem [Plugin] requires of the EV-GLR:
with any asymptotically tight threshold times a constant, EB-EVTCI with the EV-GLR
stop is not delta-correct. The paper's KL and BoB thresholds, once their constants
are checked, are sharper for the GLR and replace `init` and `value` only.

The proof. Let a* be the best arm and a != a* the empirical best arm at a stop.
The truth (mu_a < mu_a*) lies in the alternative of the pair (a, a*), so each GLR
is at most its value at the true means:

  Z_uv(a, a*) <= sum_{i in {a, a*}} (n_i / 2) log(1 + (mu_hat_i - mu_i)^2 / sigma_hat_i^2)
              <= Z-bound_ev := sum_i n_i (mu_hat_i - mu_i)^2 / (2 sigma_hat_i^2)   (log(1+z) <= z),
  Z_ev(a, a*) <= the same sum.

Write K_i = n_i (mu_hat_i - mu_i)^2 / (2 sigma_i^2) (the known-variance statistic)
and rho_i = sigma_hat_i^2 / sigma_i^2. Two events, each of probability <= delta / 2:

* E1 (means): for some t and some pair (a*, b), K_a* + K_b > B(t) with
  B(t) = 2 C_G(log(P / (delta / 2)) / 2) + 4 log(4 + log(t / 2)), the Gaussian
  bound of Jourdan et al. (NeurIPS 2022) that jbai's `kk` threshold uses
  (`jbai.thresholds.c_gaussian`, P = K - 1 pairs). It holds for known per-arm
  variances: each arm's term is normalised by its own sigma_i.
* E2 (variances): for some arm and some n >= 2, rho_n < L_n. n rho_n ~ chi^2_{n-1}
  and Chernoff's bound gives P(chi^2_k <= k x) <= exp(-(k / 2)(x - 1 - log x)) for
  x < 1; with k = n - 1, delta_n = (delta / 2) / K * 6 / (pi^2 (n - 1)^2) (a union
  over the K arms and over n, since sum_{k>=1} 6 / (pi^2 k^2) = 1), and x_n < 1 the
  root of (k / 2)(x - 1 - log x) = log(1 / delta_n),

    L_n = (n - 1) x_n / n.

Off E1 and E2, for the pair (a, a*): K_a + K_a* <= B(t) and rho_i >= L_{n_i}, so

  Z_ev <= sum_i K_i / rho_i <= B(t) / min_i L_{n_i}                =: c_ev,
  Z_uv <= sum_i (n_i / 2) log(1 + 2 K_i / (n_i L_{n_i}))
       <= max_{k_a + k_b <= B} sum_i (n_i / 2) log(1 + 2 k_i / (n_i L_i)) =: c_uv.

The last maximum is concave with one constraint, solved in closed form by water
filling: with u_i = L_i + 2 k_i / n_i the optimum has a common level mu over the
arms with u_i > L_i, sum_i n_i (mu - L_i)_+ = 2 B, and
c_uv = sum_i (n_i / 2) log(max(mu, L_i) / L_i). Hence P(error) <= delta for both
stops with their thresholds, for every sampling rule. c_uv <= c_ev always.

What they need: two rewards of each arm of the pair (L_n = 0 for n < 2, and the
threshold is +inf), and more in practice: L_2 is about delta^2 small (one
degree of freedom), so early stops need many rewards of both arms; the union
over n costs log((n - 1)^2) in delta_n (a peeled bound would cost log log n).

Both are `jbai.thresholds.Threshold`s with `union = True` (init takes the pieces P
of the question, as `kk` does); `value(params, family, arm_stats, top, ch)` reads
the counts of the pair and t.
"""

import math

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.thresholds.base import Threshold, log_ratio
from jbai.thresholds.kk import c_gaussian
from jbai.transport import bisect_root

_LOG_ZETA_2 = math.log(math.pi ** 2 / 6)


def chi2_lower_root(y: jax.Array) -> jax.Array:
  """x in (0, 1] with x - log x = y (y >= 1), elementwise: the lower branch,
  -W_0(-e^{-y}) with W_0 the principal branch of Lambert's W.

  Bisection on v = log x in [-y, 0], where y + v - e^v increases from
  -e^{-y} < 0 to y - 1 >= 0, to the dtype's precision.

  Args:
    y: [...] values >= 1 (below 1 read as 1).

  Returns:
    [...] x, with x = 1 at y = 1 and x ~ e^{-y} for large y.
  """
  y = jnp.maximum(jnp.asarray(y) * 1.0, 1.0)
  v = bisect_root(lambda v: y + v - jnp.exp(v), -y, jnp.zeros_like(y))
  return jnp.exp(v)


def variance_lower_bound(n: jax.Array, log_inv: jax.Array) -> jax.Array:
  """L_n of the module docstring: sigma_hat_n^2 / sigma^2 >= L_n for all n >= 2
  and the arms of the union, off an event of probability exp(-log_inv).

  Args:
    n: [...] counts (0 where n < 2).
    log_inv: [...] log(K / delta2) + log(pi^2 / 6), the per-arm level before the
      union over n.

  Returns:
    [...] L_n in [0, 1).
  """
  n = jnp.asarray(n) * 1.0
  k = jnp.maximum(n - 1, 1.0)
  y = 1 + 2 * (log_inv + 2 * jnp.log(k)) / k
  return jnp.where(n >= 2, k / n * chi2_lower_root(y), 0.0)


def _init(delta, num_arms, pieces=None):
  pieces = num_arms - 1 if pieces is None else pieces
  means = 2 * c_gaussian(0.5 * log_ratio(2 * pieces, delta))  # delta / 2 for the means
  variances = log_ratio(2 * num_arms, delta) + _LOG_ZETA_2    # delta / 2 for the variances
  return {"means": means, "variances": variances}


def _parts(params, arm_stats, top, ch):
  """(B [D], n [2], L [D, 2]) of the pair (top, ch)."""
  dtype = params["means"].dtype
  t = jnp.maximum(arm_stats.t, 1).astype(dtype)
  b = params["means"] + 4 * jnp.log(4 + jnp.log(jnp.maximum(t / 2, 1.0)))
  n = arm_stats.counts[jnp.stack([top, ch])].astype(dtype)
  lower = variance_lower_bound(n[None, :], params["variances"][:, None])
  return b, n, lower


def _ev_value(params, family, arm_stats, top, ch):
  del family  # the rewards' law is N(mu_i, sigma_i^2); sigma_i unknown to the stop
  b, _, lower = _parts(params, arm_stats, top, ch)
  low = jnp.min(lower, axis=-1)
  return jnp.where(low > 0, b / jnp.where(low > 0, low, 1.0), jnp.inf)


def water_level(b: jax.Array, n: jax.Array, lower: jax.Array) -> jax.Array:
  """c_uv of the module docstring: max of sum_i (n_i / 2) log(u_i / L_i) over
  u_i >= L_i with sum_i n_i (u_i - L_i) = 2 b, for two arms.

  Args:
    b: [D] the budget B.
    n: [2] counts (>= 2 where L > 0).
    lower: [D, 2] L_i > 0.

  Returns:
    [D] the maximum.
  """
  order = jnp.argsort(lower, axis=-1)
  lo = jnp.take_along_axis(lower, order, -1)
  nn = jnp.broadcast_to(n, lower.shape)
  nn = jnp.take_along_axis(nn, order, -1)
  one = lo[:, 0] + 2 * b / nn[:, 0]  # only the arm of the lower L is filled
  both = (2 * b + jnp.sum(nn * lo, -1)) / jnp.sum(nn, -1)
  level = jnp.where(one <= lo[:, 1], one, both)
  return jnp.sum(0.5 * nn * jnp.log(jnp.maximum(level[:, None], lo) / lo), -1)


def _uv_value(params, family, arm_stats, top, ch):
  del family
  b, n, lower = _parts(params, arm_stats, top, ch)
  ok = jnp.min(lower, axis=-1) > 0
  value = water_level(b, n, jnp.where(ok[:, None], lower, 1.0))
  return jnp.where(ok, value, jnp.inf)


@cached
def ev_threshold() -> Threshold:
  """The threshold c_ev of the module docstring, for the EV-GLR stop
  (`jbai.variance.costs.ev_glr`): B(t) / min(L_{n_a}, L_{n_b})."""
  return Threshold("ev", _init, _ev_value, union=True)


@cached
def uv_threshold() -> Threshold:
  """The threshold c_uv of the module docstring, for the unknown-variance GLR stop
  (`jbai.variance.costs.uv_glr`): B(t) spread over the pair by water filling."""
  return Threshold("uv", _init, _uv_value, union=True)


__all__ = ["chi2_lower_root", "ev_threshold", "uv_threshold", "variance_lower_bound",
           "water_level"]
