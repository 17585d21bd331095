"""Transport costs of Gaussian arms with per-arm variances: known (heteroscedastic),
plugged in (EV-GLR), and unknown (the GLR of the Gaussian model with unknown variance).

For a leader a and another arm b with m_a > m_b, weights (or counts) w and variances v:

* Known variances (and the EV-GLR, with the empirical variances plugged in):

    C(w; m, v) = inf_l  w_a (m_a - l)^2 / (2 v_a) + w_b (m_b - l)^2 / (2 v_b)
               = (m_a - m_b)^2 / (2 (v_a / w_a + v_b / w_b)),

  at l* = (p_a m_a + p_b m_b) / (p_a + p_b) with precisions p = w / v. With
  w = counts and v = sigma_hat^2 it is the EV-GLR of Jourdan, Degenne & Kaufmann
  (ALT 2023, arXiv 2210.00974), which plugs the empirical variances into the
  known-variance GLR.

* Unknown variances: the GLR of the Gaussian model whose variance is a free
  parameter. Profiling the variance out of the likelihood of n rewards under the
  mean l gives the per-arm term (n / 2) log(1 + (mu_hat - l)^2 / sigma_hat^2)
  (sigma_hat^2 the MLE), and for the model, KL_inf over the variance of the
  alternative, (1/2) log(1 + (mu - l)^2 / sigma^2). The pair cost is

    U(w; m, v) = inf_{l in [m_b, m_a]}  (w_a / 2) log(1 + (m_a - l)^2 / v_a)
                                        + (w_b / 2) log(1 + (m_b - l)^2 / v_b).

  The objective is not convex in l: log(1 + x^2) is concave for |x| > 1, and for
  two arms of equal weight and variance with m_a - m_b > 2 sigma the midpoint is
  a local maximum between two minima. Golden-section search may then stop at the
  worse minimum, so it is not used. Instead the stationary points are found
  exactly: with l = m_b + D s (D = m_a - m_b, s in [0, 1]) and v~ = v / D^2, the
  derivative of the objective has the sign of the cubic

    P(s) = (w_a + w_b) s^3 - (w_a + 2 w_b) s^2 + (w_b (v~_a + 1) + w_a v~_b) s - w_a v~_b,

  with P(0) < 0 < P(1). Between the roots of P' (a quadratic) P is monotone, so the
  local minima (where P crosses upwards) lie one in [0, s1] and one in [s2, 1]
  (s1 <= s2 the roots of P', clipped to [0, 1]; [0, 1] when P' has none). Each is
  found by bisection (`jbai.transport.bisect_root`, to the dtype's precision) and
  the smaller objective wins. Differentiable by the envelope theorem: the
  minimiser is held fixed (stop_gradient) and the objective differentiated there.

Arms without evidence (weight 0, or variance +inf: fewer than two rewards,
`jbai.variance.moments`) have precision 0 and every cost involving them is 0.
`pair_costs` returns the costs from a leader to every arm ([K], +inf at the
leader, as `jbai.transport.pair_costs`); `ev_glr` and `uv_glr` are the stopping
statistics of a trial's counts and statistics.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.families.base import tiny
from jbai.transport import bisect_root, entry
from jbai.variance.moments import moments, precision

MODELS = ("known", "ev", "uv")


class Cost(NamedTuple):
  value: jax.Array  # [...] float, the pair's cost (0 where m_a <= m_b)
  x: jax.Array      # [...] float, the minimiser l* (the common mean of the alternative)


def gaussian_cost(w_a: ArrayLike, m_a: ArrayLike, v_a: ArrayLike, w_b: ArrayLike,
                  m_b: ArrayLike, v_b: ArrayLike) -> Cost:
  """The known-variance pair cost (m_a - m_b)^2 / (2 (v_a / w_a + v_b / w_b)).

  Elementwise over broadcast inputs; 0 where m_a <= m_b or an arm has precision
  0; differentiable in every argument.

  Args:
    w_a: weight (or count) of the leader.
    m_a: mean of the leader.
    v_a: variance of the leader, in (0, +inf].
    w_b: weight (or count) of the other arm.
    m_b: mean of the other arm.
    v_b: variance of the other arm, in (0, +inf].

  Returns:
    Cost(value, x): the cost and the alternative's common mean.

  Example:
    >>> float(gaussian_cost(0.5, 1.0, 1.0, 0.5, 0.0, 1.0).value)
    0.125
  """
  p_a, p_b = precision(w_a, v_a), precision(w_b, v_b)
  m_a, m_b = jnp.asarray(m_a) * 1.0, jnp.asarray(m_b) * 1.0
  total = p_a + p_b
  safe = jnp.where(total > 0, total, 1.0)
  gap = m_a - m_b
  value = jnp.where((gap > 0) & (total > 0), 0.5 * gap * gap * p_a * p_b / safe, 0.0)
  x = jnp.where(total > 0, (p_a * m_a + p_b * m_b) / safe, 0.5 * (m_a + m_b))
  return Cost(value, x)


def _uv_objective(w_a, w_b, va, vb, s):
  """The unknown-variance objective at l = m_b + D s, with the variances va, vb
  in units of D^2 (so that (m_a - l)^2 / v_a = (1 - s)^2 / va)."""
  return 0.5 * (w_a * jnp.log1p((1 - s) ** 2 / va) + w_b * jnp.log1p(s * s / vb))


def _uv_minimiser(w_a, w_b, va, vb):
  """s* in [0, 1]: the global minimiser of `_uv_objective` (module docstring)."""
  c3 = w_a + w_b
  c2 = w_a + 2 * w_b
  c1 = w_b * (va + 1) + w_a * vb
  c0 = w_a * vb

  def cubic(s):
    return ((c3 * s - c2) * s + c1) * s - c0

  disc = c2 * c2 - 3 * c3 * c1
  root = jnp.sqrt(jnp.maximum(disc, 0.0))
  has = disc > 0
  s1 = jnp.where(has, jnp.clip((c2 - root) / (3 * c3), 0.0, 1.0), 1.0)
  s2 = jnp.where(has, jnp.clip((c2 + root) / (3 * c3), 0.0, 1.0), 1.0)
  left = bisect_root(cubic, jnp.zeros_like(s1), s1)
  right = bisect_root(cubic, s2, jnp.ones_like(s2))
  f_left = _uv_objective(w_a, w_b, va, vb, left)
  f_right = _uv_objective(w_a, w_b, va, vb, right)
  return jnp.where(f_left <= f_right, left, right)


def uv_cost(w_a: ArrayLike, m_a: ArrayLike, v_a: ArrayLike, w_b: ArrayLike,
            m_b: ArrayLike, v_b: ArrayLike) -> Cost:
  """The unknown-variance pair cost U(w; m, v) of the module docstring.

  Elementwise over broadcast inputs; 0 where m_a <= m_b or an arm has precision
  0 (weight 0 or variance +inf); differentiable in every argument (envelope
  theorem: the minimiser is held fixed).

  Args:
    w_a: weight (or count) of the leader.
    m_a: mean of the leader.
    v_a: variance of the leader, in (0, +inf].
    w_b: weight (or count) of the other arm.
    m_b: mean of the other arm.
    v_b: variance of the other arm, in (0, +inf].

  Returns:
    Cost(value, x): the cost and its minimiser l*.

  Example:
    >>> round(float(uv_cost(0.5, 1.0, 1.0, 0.5, 0.0, 1.0).value), 6)  # (1/2) log(1 + 1/4)
    0.111572
  """
  w_a, m_a, v_a, w_b, m_b, v_b = (jnp.asarray(v) * 1.0 for v in (w_a, m_a, v_a, w_b, m_b, v_b))
  w_a, m_a, v_a, w_b, m_b, v_b = jnp.broadcast_arrays(w_a, m_a, v_a, w_b, m_b, v_b)
  gap = m_a - m_b
  active = (gap > 0) & (precision(w_a, v_a) > 0) & (precision(w_b, v_b) > 0)
  d2 = jnp.where(active, gap * gap, 1.0)
  wa, wb = jnp.where(active, w_a, 1.0), jnp.where(active, w_b, 1.0)
  # Variances in units of D^2, floored at sqrt(tiny) so that their squares (in the
  # derivatives) stay normal numbers: a zero-variance arm then has finite gradients.
  va = jnp.maximum(jnp.where(active, v_a, 1.0) / d2, tiny(d2))
  vb = jnp.maximum(jnp.where(active, v_b, 1.0) / d2, tiny(d2))
  s = jax.lax.stop_gradient(_uv_minimiser(wa, wb, va, vb))
  value = jnp.where(active, _uv_objective(wa, wb, va, vb, s), 0.0)
  x = jnp.where(active, m_b + s * gap, 0.5 * (m_a + m_b))
  return Cost(value, x)


def cost(model: str, w_a, m_a, v_a, w_b, m_b, v_b) -> Cost:
  """The pair cost of a model: "known" or "ev" (`gaussian_cost`), "uv" (`uv_cost`)."""
  if model in ("known", "ev"):
    return gaussian_cost(w_a, m_a, v_a, w_b, m_b, v_b)
  if model == "uv":
    return uv_cost(w_a, m_a, v_a, w_b, m_b, v_b)
  raise ValueError(f"unknown variance model {model!r}; use one of {MODELS}")


def pair_costs(model: str, w: ArrayLike, means: ArrayLike, var: ArrayLike,
               leader: ArrayLike) -> jax.Array:
  """The costs from the leader to every arm.

  Args:
    model: "known", "ev" or "uv".
    w: [..., K] weights (an allocation, or counts for a GLR).
    means: [..., K] means.
    var: [..., K] variances in (0, +inf].
    leader: [...] integer index of the leader.

  Returns:
    [..., K] costs, +inf at the leader's own index.
  """
  w = jnp.asarray(w) * 1.0
  means = jnp.asarray(means) * 1.0
  var = jnp.broadcast_to(jnp.asarray(var) * 1.0, means.shape)
  leader = jnp.asarray(leader)
  is_leader = jnp.arange(means.shape[-1]) == leader[..., None]
  values = cost(model, entry(w, leader), entry(means, leader), entry(var, leader),
                w, means, var).value
  return jnp.where(is_leader, jnp.inf, values)


def _glr(model, counts, stats, var_floor):
  m = moments(counts, stats, var_floor)
  leader = jnp.argmax(m.mean, axis=-1)
  n = jnp.asarray(counts).astype(m.mean.dtype)
  return pair_costs(model, n, m.mean, m.var, leader), leader


def ev_glr(counts: ArrayLike, stats: ArrayLike, var_floor: ArrayLike = 0.0) -> tuple:
  """The EV-GLR of Jourdan et al. (2023) from a trial's counts and statistics.

  Z(a, b) = (mu_hat_a - mu_hat_b)^2 / (2 (sigma_hat_a^2 / n_a + sigma_hat_b^2 / n_b))
  for the empirical best arm a (first index among ties) and every b, with the
  moments and zero-variance policy of `jbai.variance.moments`.

  Args:
    counts: [..., K] counts.
    stats: [..., K, 2] summed (x, x^2).
    var_floor: the variance floor (>= 0).

  Returns:
    (z, leader): z [..., K] the pair statistics (+inf at the leader), leader [...].
  """
  return _glr("ev", counts, stats, var_floor)


def uv_glr(counts: ArrayLike, stats: ArrayLike, var_floor: ArrayLike = 0.0) -> tuple:
  """The GLR of the Gaussian model with unknown variances, from counts and statistics.

  Z(a, b) = inf_l (n_a / 2) log(1 + (mu_hat_a - l)^2 / sigma_hat_a^2)
            + (n_b / 2) log(1 + (mu_hat_b - l)^2 / sigma_hat_b^2)
  for the empirical best arm a and every b (Jourdan et al. 2023's GLR for the
  model with unknown variance), computed by `uv_cost`.

  Args:
    counts: [..., K] counts.
    stats: [..., K, 2] summed (x, x^2).
    var_floor: the variance floor (>= 0).

  Returns:
    (z, leader): z [..., K] the pair statistics (+inf at the leader), leader [...].
  """
  return _glr("uv", counts, stats, var_floor)


__all__ = ["Cost", "MODELS", "cost", "ev_glr", "gaussian_cost", "pair_costs", "uv_cost",
           "uv_glr"]
