"""The oracle of an answer whose alternatives are a union of pair pieces.

For an answer (the best arm, the top m arms) the set of instances with another
answer is a union of pieces, one per pair (a, b) of an arm a in the answer and an
arm b outside it, and the cost of moving the instance into piece k with weights w
is the pair transport cost

  c_k(w) = min_x w_a kl(mu_a, x) + w_b kl(mu_b, x),

concave, nondecreasing and 1-homogeneous in w (an infimum of functions linear in
w). The characteristic time is

  T*(nu)^{-1} = Gamma(nu) = max_{w in simplex} min_k c_k(w),

and w*(nu) its maximiser (Garivier & Kaufmann 2016, Lemma 1; for top-m, Kaufmann
& Kalyanakrishnan 2013 and Reda, Kaufmann & Delahaye-Duriez 2021; for a union
of pieces in general, Degenne & Koolen 2019, "Pure exploration with multiple
correct answers", Section 2).

By homogeneity the problem is the convex program

  T*(nu) = min { sum_a v_a : c_k(v) >= 1 for every piece k },  w* = v* / T*,

which `pairs_solve` solves by a log-barrier method (Boyd & Vandenberghe 2004,
Chapter 11): Newton's method on F_s(v) = sum_a v_a - s sum_k log(c_k(v) - 1),
for s shrinking by a factor 10 from t_low to t_low 10^-(STAGES - 1), where
t_low = 1 / min_k c_k(1) <= T* <= K t_low (the stages are relative to T*: at the
minimiser of F_s the slacks c_k - 1 are about s / T*, which float32 must still
resolve whatever the scale of T*). The minimiser of F_s is within P s of T*
(P pieces: the barrier's duality gap), so within P 10^-(STAGES - 1) relative.
Each Newton step solves a K x K system, and a backtracking line search keeps
every c_k(v) > 1.
Every loop has a fixed number of iterations, so the solver ends under vmap and
jit.

The pieces' derivatives in the weights are in closed form (`_pair_terms`). With x
the minimiser and kl' and kl'' the derivatives of kl(m, x) in x, the envelope
theorem gives the gradient (kl(mu_a, x), kl(mu_b, x)); x moves with the weights
by dx/dw_a = -kl'(mu_a, x) / D, D = w_a kl''(mu_a, x) + w_b kl''(mu_b, x), so the
Hessian is -(1/D) g g^T with g = (kl'(mu_a, x), kl'(mu_b, x)) (rank one, as a
1-homogeneous function's is). For an exponential family whose sufficient
statistic is the reward, kl'(m, x) = (x - m) I(x) and kl'' = I(x) + (x - m) I'(x),
I the Fisher information (`Family.fisher`, whose one forward-mode derivative is
cheaper than two through the divergence); for the others, two forward-mode
derivatives of kl. The minimiser is the family's closed form
(`Family.transport_x`), else golden section's with one Newton step on the
objective's derivative, whose derivatives in the means are then those of the true
minimiser (the implicit function theorem).

Differentiation in the means: implicit. At the returned v, grad_v F_s(v, mu) = 0;
the Newton step -H^{-1} grad_v F_s(v, mu) with H held fixed (stop_gradient) has
the derivative dv/dmu = -H^{-1} d^2 F_s / dv dmu of the implicit function
theorem, and the solver adds it to v with its value taken off (the value stays
v), so that `jax.grad` and `jax.jacobian` of T* and w* work without
differentiating the loops.
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jbai.families.base import Family, weighted_mean
from jbai.transport import golden_section
from jbai.ties import select

STAGES = 12       # barrier stages in float64: s / t_low = 10^0, ..., 10^-(STAGES - 1)
STAGES_32 = 7     # in float32, whose slacks c_k - 1 (about s / T*) lose their digits beyond
NEWTON_STEPS = 8  # Newton steps per stage
HALVINGS = 40     # backtracking: step sizes 1, 1/2, ..., 2^-(HALVINGS - 1)
WARM_STEPS = 1    # `pairs_warm`: Newton steps per call,
WARM_GAP = 1e-3   # the smallest relative gap of the barrier,
WARM_FACTOR = 3.0  # the factor that moves the gap,
WARM_NEAR = 1.0   # and the Newton decrements below which it shrinks
WARM_FAR = 4.0    # and above which, times sqrt(P), it grows
WARM_LINE = 2     # Newton steps of the line search on the pieces' models


class PiecesSolution(NamedTuple):
  """What `pairs_solve` returns."""

  w: jax.Array       # [K] float, w*(nu) on the simplex
  t_star: jax.Array  # [] float, T*(nu) = 1 / Gamma(nu)
  gap: jax.Array     # [] float, the barrier's bound on (T(w) - T*) / T*, P s / T


def _minimiser(family: Family, w_a, m_a, w_b, m_b):
  """The transport minimiser x, differentiable in the means and weights (closed form,
  or golden section and one Newton step: see the module's docstring)."""
  if family.transport_x is not None:
    return family.transport_x(w_a, m_a, w_b, m_b)

  def objective(x):
    return w_a * family.kl(m_a, x) + w_b * family.kl(m_b, x)

  x0 = jax.lax.stop_gradient(golden_section(objective, jnp.minimum(m_a, m_b),
                                            jnp.maximum(m_a, m_b)))
  slope = lambda x: jax.jvp(objective, (x,), (jnp.ones_like(x),))[1]
  g, dg = jax.jvp(slope, (x0,), (jnp.ones_like(x0),))
  return x0 - g / jax.lax.stop_gradient(jnp.where(dg > 0, dg, 1.0))


def pair_cost(family: Family, w_a, m_a, w_b, m_b):
  """min_x w_a kl(m_a, x) + w_b kl(m_b, x) over x in [m_b, m_a] (0 where m_a <= m_b),
  elementwise, with derivatives in the means and weights."""
  w_a, m_a, w_b, m_b = jnp.broadcast_arrays(*(jnp.asarray(v) * 1.0 for v in (w_a, m_a, w_b, m_b)))
  x = _minimiser(family, w_a, m_a, w_b, m_b)
  return jnp.where(m_a > m_b, w_a * family.kl(m_a, x) + w_b * family.kl(m_b, x), 0.0)


def _pair_terms(family: Family, w_a, m_a, w_b, m_b):
  """(c, grad [P, 2], slopes g [P, 2], D [P]) of the pieces at weights (w_a, w_b):
  the Hessian of c is -(1/D) g g^T (see the module's docstring)."""
  x = _minimiser(family, w_a, m_a, w_b, m_b)
  ones = jnp.ones_like(x)
  if family.transport_x is weighted_mean:  # the reward sufficient: kl' = (x - m) I(x)
    info, slope = jax.jvp(lambda y: jnp.broadcast_to(family.fisher(y), y.shape).astype(y.dtype),
                          (x,), (ones,))

    def derivatives(m):
      return family.kl(m, x), (x - m) * info, info + (x - m) * slope
  else:
    def derivatives(m):
      first = lambda q: jax.jvp(lambda y: family.kl(m, y), (q,), (ones,))
      (kl, d1), (_, d2) = jax.jvp(first, (x,), (ones,))
      return kl, d1, d2

  ka, da, dda = derivatives(m_a)
  kb, db, ddb = derivatives(m_b)
  c = w_a * ka + w_b * kb
  return c, jnp.stack([ka, kb], -1), jnp.stack([da, db], -1), w_a * dda + w_b * ddb


def _costs(family: Family, v, means, a, b):
  return pair_cost(family, v[a], means[a], v[b], means[b])


def _barrier_value(total, slack, s):
  """F_s = sum v - s sum_k log(c_k - 1) from sum v and the pieces' slacks c_k - 1
  (+inf outside the domain, where some slack is not positive)."""
  value = total - s * jnp.sum(jnp.log(jnp.where(slack > 0, slack, 1.0)))
  return jnp.where(jnp.all(slack > 0), value, jnp.inf)


def _barrier(family: Family, v, means, a, b, s):
  """F_s(v) = sum v - s sum_k log(c_k(v) - 1) (+inf outside c_k(v) > 1)."""
  return _barrier_value(jnp.sum(v), _costs(family, v, means, a, b) - 1.0, s)


def _gradient(family: Family, v, means, a, b, s):
  """grad_v F_s and its Hessian [K, K], from the pieces' closed-form derivatives."""
  c, grad, slope, curv = _pair_terms(family, v[a], means[a], v[b], means[b])
  onehot = lambda idx: jax.nn.one_hot(idx, v.shape[-1], dtype=v.dtype)  # [P, K]
  e_a, e_b = onehot(a), onehot(b)
  u = e_a * grad[:, :1] + e_b * grad[:, 1:]    # [P, K] grad c_k
  r = e_a * slope[:, :1] + e_b * slope[:, 1:]  # [P, K], Hessian of c_k = -r r^T / D
  slack = c - 1.0
  g = 1.0 - s * jnp.sum(u / slack[:, None], axis=0)
  h = (jnp.einsum("pk,p,pl->kl", u, s / slack ** 2, u)
       + jnp.einsum("pk,p,pl->kl", r, s / (curv * slack), r))
  return g, h


def _newton(family: Family, v, means, a, b, s):
  """One damped Newton step on F_s from a point inside the domain."""
  g, h = _gradient(family, v, means, a, b, s)
  step = -jnp.linalg.solve(h, g)
  step = jnp.where(jnp.all(jnp.isfinite(step)), step, 0.0)
  value = _barrier(family, v, means, a, b, s)
  sizes = 0.5 ** jnp.arange(HALVINGS, dtype=v.dtype)
  trial = jax.vmap(lambda t: _barrier(family, v + t * step, means, a, b, s))(sizes)
  ok = trial <= value + 0.25 * sizes * jnp.dot(g, step)
  first = jnp.argmax(ok)
  return jnp.where(ok[first], v + sizes[first] * step, v)


def pairs_solve(family: Family, means, a, b, stages: Optional[int] = None) -> PiecesSolution:
  """max_{w in simplex} min_k c_k(w) over the pair pieces (a_k, b_k), one instance.

  Args:
    family: the reward family.
    means: [K] means, with means[a_k] > means[b_k] for every piece (differentiable).
    a: [P] int, the first arm of each piece (every arm in some piece).
    b: [P] int, its second arm.
    stages: barrier stages (s = t_low 10^-(stages - 1) at the last); default
      STAGES in float64, STAGES_32 in float32 (a relative gap of at most P 1e-6).

  Returns:
    A `PiecesSolution`; its w and t_star are differentiable in `means`
    (implicitly, see the module's docstring).
  """
  means = jnp.asarray(means) * 1.0
  if stages is None:
    stages = STAGES if jnp.finfo(means.dtype).bits >= 64 else STAGES_32
  frozen = jax.lax.stop_gradient(means)
  ones = jnp.ones_like(frozen)
  t_low = 1.0 / jnp.min(_costs(family, ones, frozen, a, b))  # T* in [t_low, K t_low]
  v0 = ones * (2.0 * t_low)  # c_k(v0) >= 2

  def stage(v, i):
    s = t_low * jnp.asarray(10.0, v.dtype) ** -i
    newton = lambda _, u: _newton(family, u, frozen, a, b, s)
    return jax.lax.fori_loop(0, NEWTON_STEPS, newton, v), None

  v, _ = jax.lax.scan(stage, v0, jnp.arange(stages, dtype=v0.dtype))
  s = t_low * jnp.asarray(10.0, v.dtype) ** -(stages - 1)
  v = jax.lax.stop_gradient(v)
  _, hess = _gradient(family, v, frozen, a, b, s)
  grad, _ = _gradient(family, v, means, a, b, s)
  step = -jnp.linalg.solve(jax.lax.stop_gradient(hess), grad)
  v = v + (step - jax.lax.stop_gradient(step))  # the value of the loop, implicit derivatives
  t_star = jnp.sum(v)
  return PiecesSolution(w=v / t_star, t_star=t_star,
                        gap=jax.lax.stop_gradient(a.shape[-1] * s / t_star))


def _grid(v_in, m_in, v_out, m_out):
  """The (w_a, m_a, w_b, m_b) of every pair (i, j) of an arm i [m] and an arm j
  [R], each [m, R]: the arguments of `pair_cost` and `_pair_terms`."""
  return jnp.broadcast_arrays(v_in[:, None], m_in[:, None], v_out[None, :], m_out[None, :])


def _spd_solve(a, r):
  """a^{-1} r for a small symmetric positive definite a [n, n]: Gauss-Jordan
  elimination without pivoting, unrolled (elementwise work that XLA fuses; a
  LAPACK call per lane is slow under vmap on a CPU)."""
  n = a.shape[-1]
  for k in range(n):
    f = jnp.where(jnp.arange(n) == k, 0.0, a[:, k] / a[k, k])
    a = a - f[:, None] * a[k][None, :]
    r = r - f * r[k]
  return r / jnp.diagonal(a)


def _sum_rows(x):
  """The sum of x [n, ...] over its first axis, for a grid's few rows (up to 8)
  as n - 1 additions, which XLA:CPU fuses with their operands: under vmap it runs
  a reduction over [lanes, n, R] as a library call of its own, which costs more."""
  return sum(x[1:], start=x[0]) if x.shape[0] <= 8 else jnp.sum(x, axis=0)


def _grid_newton(terms, v_in, v_out, live, s):
  """One Newton step on F_s over the grid of pairs, sized by a line search on the
  pieces' second-order models, and its Newton decrement.

  The grid pairs each arm inside [m] with R column arms, of which the `live`
  ones [R] are outside (a column inside is a pair that is no piece: it enters
  with no gradient, slope or curvature, slack 1, so that it adds nothing). Each
  pair's gradient and Hessian touch its two arms only, so the Hessian is
  [[diag(h_in), B], [B^T, diag(h_out)]] with B [m, R] (the columns not live
  unused): the step x solves the m x m Schur complement
  diag(h_in) - B diag(h_out)^{-1} B^T, then the columns' part in closed form
  (0 where not live).

  Along x, a piece's slack is c_k(v + t x) - 1 = q_k(t) + O(t^3) with
  q_k(t) = c_k - 1 + t a_k - t^2 b_k / 2, a_k = grad c_k . x and b_k = (r_k . x)^2 / D_k
  (its Hessian is rank one: the module's docstring). Near the edge of the domain,
  where the barrier's own line search cut most steps, q_k gives the edge to a few
  digits; so the step's size minimises sum(v + t x) - s sum_k log q_k(t) by
  WARM_LINE safeguarded Newton steps from t = 0 (each inside half the way to the
  first zero of some q_k), capped at 1. That costs no evaluation of the pieces
  (a backtracking line search costs one per halving, and under vmap the pool
  halves while any lane does). The decrement, sqrt(-grad F_s . x / s), measures
  the distance to the barrier point in the barrier's own metric. `terms` are
  `_pair_terms` at (v_in, v_out), each [m, R]."""
  c, grad, slope, curv = terms
  outside, live = live, live[None, :]
  slack = jnp.where(live, c - 1.0, 1.0)
  grad, slope = jnp.where(live[..., None], grad, 0.0), jnp.where(live[..., None], slope, 0.0)
  curv = jnp.where(live, curv, 1.0)
  alpha, beta = s / slack ** 2, s / (curv * slack)
  (k_in, k_out), (d_in, d_out) = jnp.moveaxis(grad, -1, 0), jnp.moveaxis(slope, -1, 0)
  # One reduction for both sums over the columns (each is a library call).
  k_sum, h_in = jnp.sum(jnp.stack([k_in / slack, alpha * k_in ** 2 + beta * d_in ** 2]), axis=-1)
  g_in = 1.0 - s * k_sum
  g_out = jnp.where(outside, 1.0 - s * _sum_rows(k_out / slack), 0.0)
  h_out = jnp.where(outside, _sum_rows(alpha * k_out ** 2 + beta * d_out ** 2), 1.0)
  cross = alpha * k_in * k_out + beta * d_in * d_out  # [m, R]
  scaled = cross / h_out
  # B diag(h_out)^-1 B^T and B diag(h_out)^-1 g_out in one reduction: [m, m + 1].
  both = jnp.sum(scaled[:, None, :] * jnp.concatenate([cross, g_out[None, :]])[None], axis=-1)
  x_in = _spd_solve(jnp.diag(h_in) - both[:, :-1], -g_in + both[:, -1])
  x_out = (-g_out - _sum_rows(cross * x_in[:, None])) / h_out
  finite = jnp.all(jnp.isfinite(x_in)) & jnp.all(jnp.isfinite(x_out))
  x_in, x_out = jnp.where(finite, x_in, 0.0), jnp.where(finite, x_out, 0.0)

  a = k_in * x_in[:, None] + k_out * x_out[None, :]                    # [m, R]
  b = (d_in * x_in[:, None] + d_out * x_out[None, :]) ** 2 / curv      # [m, R], >= 0
  edge = jnp.minimum(  # the first zero of some q_k, or of some weight
      jnp.min(2.0 * slack / (jnp.sqrt(a * a + 2.0 * b * slack) - a)),
      jnp.minimum(jnp.min(jnp.where(x_in < 0, -v_in / x_in, jnp.inf)),
                  jnp.min(jnp.where(x_out < 0, -v_out / x_out, jnp.inf))))
  total = jnp.sum(x_in) + jnp.sum(x_out)
  t = jnp.zeros((), v_in.dtype)
  for _ in range(WARM_LINE):
    q, dq = slack + t * a - 0.5 * t * t * b, a - t * b
    first, second = jnp.sum(jnp.stack([dq / q, (dq * dq + b * q) / (q * q)]), axis=(1, 2))
    first, second = total - s * first, s * second
    t = jnp.where(second > 0, jnp.clip(t - first / second, 0.5 * t, 0.5 * (t + edge)), t)
  size = jnp.minimum(t, 1.0)
  decrement = jnp.sqrt(jnp.maximum(-(jnp.dot(g_in, x_in) + jnp.dot(g_out, x_out)) / s, 0.0))
  return v_in + size * x_in, v_out + size * x_out, decrement


def pairs_warm(family: Family, means, grid, v, gap, steps: int = WARM_STEPS):
  """Newton steps towards the barrier point of T*(nu) with relative gap `gap`,
  from a previous point, and the gap of the next call: the warm start of a rule
  that tracks w*(nu_hat_t) as the means move (`jbai.rules.tas_top_m`). The
  pieces are every pair (i, j) of an arm i of the answer and an arm j outside it
  (top-m's, the best arm's at m = 1), P of them. One instance, no derivatives.

  With s = gap sum(v) / P (the barrier's gap P s / T: `gap` relative), a piece's
  slack at the barrier point is s / mu_k, mu_k its dual weight, and the weights
  sum to about T: a piece that binds alone has slack gap / P. Where
  min_k c_k(v) - 1 is below a tenth of that (the means moved v out of the
  domain, or near its edge), v [K] > 0 is first scaled to make it gap / P (the
  pieces are 1-homogeneous, so the scaled point is inside the domain whatever
  the means). Then `steps` Newton steps on F_s over the grid of the answer's
  arms against the column arms (the pairs of two arms of the answer masked),
  each solving an m x m system and sized by a line search on the pieces' models (`_grid_newton`). The gap follows
  the barrier's path as the solver's stages do: where the last step's Newton
  decrement is below WARM_NEAR (the point is near the barrier point: for a
  self-concordant barrier, a full step stays inside the domain) it is divided by
  WARM_FACTOR, down to WARM_GAP; above WARM_FAR sqrt(P) (the means moved, or the
  answer changed, too far for this gap; a shrink alone moves the decrement to
  about (WARM_FACTOR - 1) sqrt(P), P being the barrier's parameter) it is
  multiplied by WARM_FACTOR, up to 1. From v = 1, gap = 1 (a cold start), with
  one step a call, w is within about 1e-3 of w*(nu) from the 20th call on at
  fixed means (K = 4 to 20), and within 1e-2 along slowly moving ones (tests).

  Args:
    family: the reward family.
    means: [K] means, each arm inside with a mean >= each arm outside.
    grid: the pairs, a `jbai.problems.top_m.Grid`: one-hot rows of the
      answer's arms [m, K], of the column arms [R, K] (None: every arm), and
      which columns are outside the answer [R]. P = m (K - m) pieces.
    v: [K] the previous point (ones for a cold start).
    gap: [] the previous call's returned gap (1 for a cold start).
    steps: Newton steps, at least 1.

  Returns:
    (v, gap): the new point [K] (w = v / sum(v); NaN at a tie across the
    answer's edge, read off the means: no w* exists, and the tied pair's cost is
    0 or a rounding error as the weighted mean of two equal means rounds, so
    the Newton step's output there would turn on how a program rounds) and the
    next call's gap [].
  """
  if steps < 1:
    raise ValueError(f"pairs_warm takes at least one Newton step, got steps={steps!r}")
  pieces = grid.rows.shape[0] * (means.shape[-1] - grid.rows.shape[0])
  m_in, v_in = select(grid.rows, means), select(grid.rows, v)
  m_out, v_out = grid.pick(means), grid.pick(v)
  c, grad, slope, curv = _pair_terms(family, *_grid(v_in, m_in, v_out, m_out))
  low = jnp.min(jnp.where(grid.live, c, jnp.inf))
  alone = gap / pieces  # the slack of a piece alone at the barrier point
  scale = jnp.where(low < 1.0 + 0.1 * alone, (1.0 + alone) / low, 1.0)
  v_in, v_out = v_in * scale, v_out * scale
  terms = (c * scale, grad, slope, curv * scale)  # x, and so grad and slope, do not move
  s = gap * (jnp.sum(v_in) + jnp.sum(jnp.where(grid.live, v_out, 0.0))) / pieces
  for i in range(steps):
    if i:
      terms = _pair_terms(family, *_grid(v_in, m_in, v_out, m_out))
    v_in, v_out, decrement = _grid_newton(terms, v_in, v_out, grid.live, s)
  far = WARM_FAR * pieces ** 0.5
  gap = jnp.where(decrement < WARM_NEAR, jnp.maximum(gap / WARM_FACTOR, WARM_GAP),
                  jnp.where(decrement > far, jnp.minimum(gap * WARM_FACTOR, 1.0), gap))
  back = lambda rows, x: _sum_rows(jnp.where(rows, x[:, None], 0.0))
  v_out = jnp.where(grid.live, v_out, 0.0)
  v = back(grid.rows, v_in) + (v_out if grid.columns is None else back(grid.columns, v_out))
  tied = jnp.min(m_in) <= jnp.max(jnp.where(grid.live, m_out, -jnp.inf))
  return jnp.where(tied, jnp.nan, v), gap
