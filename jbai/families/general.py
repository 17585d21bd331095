"""General reward families: any family parameterised by its mean (paper, Section 2).

The paper's second contribution is that TCB, ITCB and its stopping threshold need
only a family {P_m : m in Theta} parameterised by its mean that meets its
Assumptions 1-8, not an exponential family. `general_family` builds a
`jbai.families.Family` from what such a family offers:

  * log pi(x | m) and an exact sampler (required);
  * KL(m, m2): in closed form when known, otherwise by numerical quadrature,
    KL(m, m2) = E_m[log pi(X | m) - log pi(X | m2)], with a fixed rule from
    `gauss_hermite` or `gauss_legendre` (optionally tabulated once for a
    location family, `location=True`);
  * the Fisher information I(m) = E_m[-d^2/dm^2 log pi(X | m)]: given, or by
    quadrature, or as d^2/dm2^2 KL(m, m2) at m2 = m (by autodiff);
  * the MLE over the compact Theta (paper eq. MLE): from fixed-size sufficient
    statistics where the family has them (`stat`, `stat_dim`, `mle`), otherwise
    from the log-likelihood accumulated on a grid over Theta (`grid_mle`);
  * the transport minimiser: given, or safeguarded Newton on the derivative of
    the KL (`newton_transport`, transport_x=None).

Every function is elementwise, pure, and jit/vmap/grad friendly; every inner
solver runs a fixed number of iterations.

Accuracy of the numerical parts (float64, measured in tests/test_general_families.py):
  * `gauss_hermite`: the error falls like exp(-c sqrt(n)) for densities whose
    ratio to the Gaussian is analytic in a strip. logcosh KL against adaptive
    quadrature: 9e-10 with 64 nodes, 3e-14 with 128; skew-normal (alpha = 3)
    KL: 5e-7 relative with 64 nodes, 5e-10 with 128 (the default), 2e-12 with
    200.
  * `gauss_legendre` with 128 nodes on [0, 12 lam]: Weibull (k = 2, 3.5) KL
    within 1e-10 of its closed form.
  * `location=True` table (cubic Hermite, 2049 nodes over |m - m2| <= hi - lo):
    error <= h^4 max|KL''''| / 384 with h = (hi - lo) / 1024; for logcosh on
    [-5, 5], 1e-11 absolute and 1e-9 relative away from m = m2.
  * `grid_mle` (G = 128 nodes, degree-6 polynomial through the 7 nodes around
    the grid maximiser, safeguarded Newton): see `grid_mle`.
  * `newton_transport` (4 or 6 safeguarded Newton steps from the weighted mean,
    float32 or float64): the transport point of logcosh to 1e-11 of the gap
    between the means in float64 (golden section, 64 steps: 4e-7).

Example (a user-defined location family; see docs/guide/custom-family.md):
  >>> import jax, jax.numpy as jnp
  >>> from jbai.families import general
  >>> def log_density(x, m):  # N(m, 1), as if KL were unknown
  ...   return -0.5 * (x - m) ** 2 - 0.5 * jnp.log(2 * jnp.pi)
  >>> def sample(key, means):
  ...   means = jnp.asarray(means) * 1.0
  ...   return means + jax.random.normal(key, means.shape, means.dtype)
  >>> fam = general.general_family(
  ...     name="my_gaussian", lo=-2.0, hi=2.0, log_density=log_density,
  ...     sample=sample, quadrature=general.gauss_hermite(log_density),
  ...     curvature=1.0)
  >>> round(float(fam.kl(1.0, 0.0)), 6)
  0.5
"""

import math
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai.builders import cached
from jbai.families.base import Family, sample_mean

GRID_SIZE = 128    # grid nodes of `grid_mle`
STENCIL = 7        # nodes of the local interpolating polynomial (degree 6)
NEWTON_ITERS = 8   # safeguarded Newton steps on the interpolant
TRANSPORT_STEPS = {4: 4, 8: 6}  # Newton steps of `newton_transport`, by float bytes
QUAD_NODES = 128   # nodes of the quadrature rules
TABLE_CELLS = 1024  # cells of the location-family KL table on [0, hi - lo]

Quadrature = Callable[[jax.Array], tuple]


def _float(x) -> jax.Array:
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    x = x.astype(jnp.zeros(()).dtype)
  return x


def _clip_at_zero(v: jax.Array) -> jax.Array:
  """max(v, 0) in value, with the derivatives of v (a KL rounded below 0 is 0,
  and the second derivative at m2 = m, the Fisher information, is kept whole)."""
  return v + jax.lax.stop_gradient(jnp.maximum(v, 0.0) - v)


def _d2_dm2(log_density: Callable, x: jax.Array, m: jax.Array) -> jax.Array:
  """d^2/dm^2 log pi(x | m), elementwise (forward over forward autodiff)."""

  def d1(m_):
    return jax.jvp(lambda q: log_density(x, q), (m_,), (jnp.ones_like(m_),))[1]

  return jax.jvp(d1, (m,), (jnp.ones_like(m),))[1]


# --------------------------------------------------------------------------
# Quadrature rules: quadrature(m) -> (x [..., Q], w [..., Q]) with
# E_m[f(X)] ~= sum_j w_j f(x_j), the weights w >= 0 summing to 1.


@cached
def gauss_hermite(log_density: Callable, n: int = QUAD_NODES, scale: float = 1.0,
                  center: Optional[Callable] = None) -> Quadrature:
  """A quadrature rule for distributions close to N(center(m), scale^2).

  Probabilists' Gauss-Hermite nodes z_j (weight exp(-z^2 / 2)) are placed at
  x_j = center(m) + scale z_j and weighted by the density ratio,
  w_j ~ hw_j pi(x_j | m) / phi((x_j - center(m)) / scale), then normalised to
  sum to 1 (so the normalising constant of pi need not be exact, and the mass
  outside the nodes is spread over them). Exact for polynomials times a Gaussian;
  geometric convergence when pi(x | m) / phi is analytic in a strip, as for
  location families with smooth log-concave densities.

  Args:
    log_density: log pi(x | m), elementwise.
    n: number of nodes.
    scale: standard deviation of the Gaussian the nodes are placed for.
    center: center(m) of the nodes (default: m itself).

  Returns:
    quadrature(m) -> (x [..., n], w [..., n]).
  """
  if int(n) < 2 or not scale > 0:
    raise ValueError(f"gauss_hermite needs n >= 2 and scale > 0, got n={n!r}, "
                     f"scale={scale!r}")
  z_np, hw_np = np.polynomial.hermite_e.hermegauss(int(n))

  def quadrature(m):
    m = _float(m)
    z = jnp.asarray(z_np, m.dtype)
    c = m if center is None else center(m)
    x = c[..., None] + scale * z
    # log of hw_j * pi(x_j | m) / phi(z_j) (phi's constant cancels on normalising)
    logw = jnp.log(jnp.asarray(hw_np, m.dtype)) + log_density(x, m[..., None]) + 0.5 * z * z
    return x, jax.nn.softmax(logw, axis=-1)

  return quadrature


@cached
def gauss_legendre(log_density: Callable, support: Callable,
                   n: int = QUAD_NODES) -> Quadrature:
  """A quadrature rule on a finite interval [a(m), b(m)] that holds the mass of P_m.

  Gauss-Legendre nodes on [a(m), b(m)] weighted by pi(x_j | m) and normalised to
  sum to 1. Choose the interval so that the mass outside it is negligible (for a
  Weibull with shape k >= 1 and scale lam, [0, 12 lam] leaves e^{-12^k}
  outside), and so that the density is smooth on it: Gauss-Legendre converges
  slowly on an integrable singularity (a Weibull with k < 1 at x = 0).

  Args:
    log_density: log pi(x | m), elementwise.
    support: support(m) -> (a, b), elementwise endpoints.
    n: number of nodes.

  Returns:
    quadrature(m) -> (x [..., n], w [..., n]).
  """
  if int(n) < 2:
    raise ValueError(f"gauss_legendre needs n >= 2, got n={n!r}")
  t_np, lw_np = np.polynomial.legendre.leggauss(int(n))

  def quadrature(m):
    m = _float(m)
    a, b = support(m)
    a = jnp.asarray(a, m.dtype)[..., None]
    b = jnp.asarray(b, m.dtype)[..., None]
    t = jnp.asarray(t_np, m.dtype)
    x = 0.5 * (a + b) + 0.5 * (b - a) * t
    logw = jnp.log(jnp.asarray(lw_np, m.dtype)) + log_density(x, m[..., None])
    return x, jax.nn.softmax(logw, axis=-1)

  return quadrature


@cached
def quadrature_kl(log_density: Callable, quadrature: Quadrature) -> Callable:
  """KL(m, m2) = E_m[log pi(X | m) - log pi(X | m2)] by a fixed quadrature rule.

  Clipped at 0 in value (a rule can round a KL near 0 to a tiny negative
  number), not in derivatives.
  """

  def kl(m, m2):
    m, m2 = jnp.broadcast_arrays(_float(m), _float(m2))
    x, w = quadrature(m)
    ratio = log_density(x, m[..., None]) - log_density(x, m2[..., None])
    return _clip_at_zero(jnp.sum(w * ratio, axis=-1))

  return kl


@cached
def quadrature_fisher(log_density: Callable, quadrature: Quadrature) -> Callable:
  """I(m) = E_m[-d^2/dm^2 log pi(X | m)] (Assumption 6) by a fixed quadrature rule."""

  def fisher(m):
    m = _float(m)
    x, w = quadrature(m)
    mm = jnp.broadcast_to(m[..., None], x.shape)
    return -jnp.sum(w * _d2_dm2(log_density, x, mm), axis=-1)

  return fisher


@cached
def kl_fisher(kl: Callable) -> Callable:
  """I(m) = d^2/dm2^2 KL(m, m2) at m2 = m, by autodiff of the KL."""

  def fisher(m):
    m = _float(m)

    def d1(q):
      return jax.jvp(lambda r: kl(m, r), (q,), (jnp.ones_like(q),))[1]

    return jax.jvp(d1, (m,), (jnp.ones_like(m),))[1]

  return fisher


def location_kl_table(kl: Callable, span: float, cells: int = TABLE_CELLS,
                      dtype=None) -> Callable:
  """Tabulates the KL of a location family, kappa(m - m2) = KL(m, m2), once.

  For pi(x | m) = f(x - m), KL(m, m2) depends on d = m - m2 only. kappa and
  kappa' (by autodiff of `kl`) are computed at 2 cells + 1 equispaced nodes of
  [-span, span] (d = 0 is a node) and interpolated by cubic Hermite splines:
  error <= h^4 max|kappa''''| / 384 with h = span / cells, and exact kappa(0) =
  kappa'(0) = 0. Outside [-span, span] the end values are used: choose
  span >= hi - lo so that every pair of means in Theta is covered. The table is
  built in the precision active at construction (float64 when jax_enable_x64 is
  set).

  Args:
    kl: kl(m, m2) of the location family (e.g. from `quadrature_kl`).
    span: half-width of the table.
    cells: cells on each side of 0.
    dtype: dtype of the table (default: JAX's default float).

  Returns:
    A fast kl(m, m2), elementwise and differentiable.
  """
  if not span > 0 or int(cells) < 1:
    raise ValueError(f"location_kl_table needs span > 0 and cells >= 1, got "
                     f"span={span!r}, cells={cells!r}")
  return _kl_table(kl, span, cells, dtype or jnp.zeros(()).dtype)


@cached
def _kl_table(kl: Callable, span: float, cells: int, dtype) -> Callable:
  """`location_kl_table` with its arguments checked and its dtype resolved."""
  nodes = jnp.linspace(-span, span, 2 * int(cells) + 1, dtype=dtype)
  step = float(span) / int(cells)

  @jax.jit
  def build(d):
    return jax.jvp(lambda q: kl(q, jnp.zeros_like(q)), (d,), (jnp.ones_like(d),))

  values, slopes = build(nodes)
  values = jnp.where(nodes == 0, 0.0, jnp.maximum(values, 0.0))
  slopes = jnp.where(nodes == 0, 0.0, slopes)
  values, slopes = np.asarray(values), np.asarray(slopes)
  last = 2 * int(cells) - 1

  def table_kl(m, m2):
    d = _float(m) - _float(m2)
    v = jnp.asarray(values, d.dtype)
    s = jnp.asarray(slopes, d.dtype) * step
    pos = (jnp.clip(d, -span, span) + span) / step
    j = jnp.clip(jnp.floor(pos), 0, last).astype(jnp.int32)
    t = pos - j
    t2, t3 = t * t, t * t * t
    out = ((2 * t3 - 3 * t2 + 1) * v[j] + (t3 - 2 * t2 + t) * s[j]
           + (3 * t2 - 2 * t3) * v[j + 1] + (t3 - t2) * s[j + 1])
    return _clip_at_zero(out)

  return table_kl


# --------------------------------------------------------------------------
# MLE from the log-likelihood accumulated on a grid over Theta.


def _polyval(coef: jax.Array, u: jax.Array) -> jax.Array:
  """sum_k coef[..., k] u^k by Horner's rule."""
  out = coef[..., -1]
  for k in range(coef.shape[-1] - 2, -1, -1):
    out = out * u + coef[..., k]
  return out


def _grid_argmax(ll: jax.Array, lo: float, hi: float, h: float, vinv: np.ndarray,
                 grid_size: int, stencil: int, iters: int) -> jax.Array:
  """The maximiser over Theta of the log-likelihood `ll` [..., G] given on the grid
  (steps 1-3 of `grid_mle`), clipped to Theta."""
  dtype = ll.dtype
  g = jnp.argmax(ll, axis=-1)
  s0 = jnp.clip(g - stencil // 2, 0, grid_size - stencil)
  vals = jnp.take_along_axis(ll, s0[..., None] + jnp.arange(stencil), axis=-1)
  vals = vals - jnp.max(vals, axis=-1, keepdims=True)  # conditioning
  coef = vals @ jnp.asarray(vinv.T, dtype)              # p(u) = sum c_k u^k
  d1 = coef[..., 1:] * jnp.arange(1, stencil, dtype=dtype)
  d2 = d1[..., 1:] * jnp.arange(1, stencil - 1, dtype=dtype)
  u = (g - s0).astype(dtype)
  a = jnp.maximum(u - 1, 0.0)
  b = jnp.minimum(u + 1, stencil - 1.0)

  def body(_, carry):
    u, a, b = carry
    f1, f2 = _polyval(d1, u), _polyval(d2, u)
    rising = f1 > 0                     # the maximiser lies right of u
    a, b = jnp.where(rising, u, a), jnp.where(rising, b, u)
    newton = u - f1 / jnp.where(f2 < 0, f2, -1.0)
    ok = (f2 < 0) & (newton >= a) & (newton <= b)
    return jnp.where(ok, newton, 0.5 * (a + b)), a, b

  u, _, _ = jax.lax.fori_loop(0, iters, body, (u, a, b))
  return jnp.clip(lo + (s0.astype(dtype) + u) * h, lo, hi)


@cached
def grid_mle(log_density: Callable, lo: float, hi: float,
             grid_size: int = GRID_SIZE, stencil: int = STENCIL,
             iters: int = NEWTON_ITERS):
  """Sufficient statistics and MLE of a family without a fixed-size statistic.

  The statistics of a reward x are stat(x) = [x, log pi(x | theta_1), ...,
  log pi(x | theta_G)] on G equispaced nodes theta_g of Theta = [lo, hi]
  (stat_dim = 1 + G), so an arm's summed statistics hold the sum of its rewards
  and its log-likelihood L(theta_g) on the grid. The MLE over Theta (paper eq.
  MLE) is found from them by

    1. g = argmax_g L(theta_g); with L concave (Assumption 2) the maximiser over
       Theta lies in [theta_{g-1}, theta_{g+1}] (within Theta);
    2. the polynomial p of degree stencil - 1 through the `stencil` nodes around
       g (shifted inwards at the edges of Theta);
    3. `iters` safeguarded Newton steps on p' = 0 in that bracket (a Newton
       step that leaves the bracket, or meets p'' >= 0, is replaced by
       bisection, and the bracket shrinks with the sign of p'), then the result
       is clipped to Theta (the projected MLE).

  With no reward (n = 0) the MLE is lo, as for the sample mean. Accuracy: the
  interpolation error of p' is O(h^(stencil - 1)) with h = (hi - lo) / (G - 1).
  For the logcosh family on Theta = [-5, 5] (h = 0.079), against the root of
  the score (scipy brentq) on random data sets of 1 to 10^4 rewards, the worst
  error in float64 is 1e-7 (at n = 1; 2e-8 for n >= 5) with stencil 7, 1.4e-6
  with stencil 5, 2e-4 with stencil 3 (parabolic interpolation); 1e-7 with
  G = 256 and stencil 5. In float32, with the statistics summed one reward at a
  time as the engine does, the rounding of the summed log-likelihood dominates:
  1e-5 up to 10^3 rewards, 3e-5 at 10^4, 7e-5 at 10^5 (1/35 of the MLE's
  standard deviation there).

  Args:
    log_density: log pi(x | m), elementwise, concave in m.
    lo: lower end of Theta.
    hi: upper end of Theta.
    grid_size: G, the number of grid nodes (>= stencil).
    stencil: nodes of the local interpolating polynomial (>= 3).
    iters: Newton steps.

  Returns:
    (stat_dim, stat, mle): stat(x) -> [..., 1 + G]; mle(n, stats) -> [...].
  """
  grid_size, stencil, iters = int(grid_size), int(stencil), int(iters)
  if stencil < 3 or grid_size < stencil:
    raise ValueError(f"grid_mle needs 3 <= stencil <= grid_size, got "
                     f"stencil={stencil!r}, grid_size={grid_size!r}")
  grid = np.linspace(lo, hi, grid_size)
  h = (hi - lo) / (grid_size - 1)
  vinv = np.linalg.inv(np.vander(np.arange(stencil, dtype=float), stencil,
                                 increasing=True))   # values -> coefficients in u

  def stat(x):
    x = _float(x)
    ll = log_density(x[..., None], jnp.asarray(grid, x.dtype))
    return jnp.concatenate([x[..., None], ll.astype(x.dtype)], axis=-1)

  def mle(n, stats):
    n = jnp.asarray(n)
    ll = stats[..., 1:]
    m = _grid_argmax(ll, lo, hi, h, vinv, grid_size, stencil, iters)
    return jnp.where(n > 0, m, jnp.asarray(lo, ll.dtype))

  return 1 + grid_size, stat, mle


# --------------------------------------------------------------------------
# The transport point without a closed form.


@cached
def newton_transport(kl: Callable, steps: Optional[int] = None) -> Callable:
  """transport_x(w_a, m_a, w_b, m_b): the minimiser of w_a kl(m_a, x) + w_b kl(m_b, x).

  Safeguarded Newton on phi'(x) = 0 (phi the objective; phi' and phi'' by
  autodiff of `kl` in its second argument) over the bracket between m_a and m_b,
  where phi is unimodal for a family that meets the paper's assumptions: each
  step keeps the side of the minimiser that the sign of phi' shows, and a Newton
  step that leaves the bracket, or meets phi'' <= 0, is replaced by bisection.
  It starts at the weighted mean (w_a m_a + w_b m_b) / (w_a + w_b), the exact
  answer for exponential families, and converges quadratically from there: a
  fixed number of steps (the golden-section search of `jbai.transport` needs 64
  for a bracket of 4e-14, and finds the minimiser to sqrt(eps) only, since it
  compares values of phi near its minimum).

  The result carries no derivative (stop_gradient): the transport cost's
  derivatives need none at its minimiser (envelope theorem).

  Steps: for logcosh (random weights and means over Theta), the distance to the
  root of phi' reaches its floor (the rounding of phi') after 2 steps in
  float32 and 4 in float64, where it is 1e-11 of |m_a - m_b|; golden section
  with 64 steps leaves 4e-7 in float64. The default takes 4 and 6.

  Args:
    kl: kl(m, m2), elementwise, twice differentiable in m2.
    steps: Newton steps; default by dtype, `TRANSPORT_STEPS`.

  Returns:
    transport_x, elementwise over broadcast inputs.
  """

  def transport_x(w_a, m_a, w_b, m_b):
    w_a, m_a, w_b, m_b = jnp.broadcast_arrays(
        *(jax.lax.stop_gradient(_float(v)) for v in (w_a, m_a, w_b, m_b)))
    lo, hi = jnp.minimum(m_a, m_b), jnp.maximum(m_a, m_b)
    total = w_a + w_b
    x = jnp.where(total > 0, (w_a * m_a + w_b * m_b) / jnp.where(total > 0, total, 1.0),
                  0.5 * (m_a + m_b))
    ones = jnp.ones_like(x)
    phi = lambda q: w_a * kl(m_a, q) + w_b * kl(m_b, q)
    slope = lambda q: jax.jvp(phi, (q,), (ones,))[1]
    def newton(_, carry):
      x, lo, hi = carry
      g, h = jax.jvp(slope, (x,), (ones,))
      lo, hi = jnp.where(g < 0, x, lo), jnp.where(g > 0, x, hi)
      step = x - g / jnp.where(h > 0, h, 1.0)
      ok = (h > 0) & (step >= lo) & (step <= hi)
      return jnp.where(g == 0, x, jnp.where(ok, step, 0.5 * (lo + hi))), lo, hi

    n = steps or TRANSPORT_STEPS[jnp.dtype(x.dtype).itemsize]
    x, _, _ = jax.lax.fori_loop(0, int(n), newton, (x, lo, hi))
    return jax.lax.stop_gradient(x)

  return transport_x


# --------------------------------------------------------------------------
# The constructor.


def general_family(*, name: str, lo: float, hi: float, log_density: Callable,
                   sample: Callable, kl: Optional[Callable] = None,
                   quadrature: Optional[Quadrature] = None, location: bool = False,
                   fisher: Optional[Callable] = None,
                   stat: Optional[Callable] = None, stat_dim: Optional[int] = None,
                   mle: Optional[Callable] = None, grid_size: int = GRID_SIZE,
                   stencil: int = STENCIL, transport_x: Optional[Callable] = None,
                   posterior_sample: Optional[Callable] = None,
                   curvature: Optional[float] = None, params=(),
                   exponential: bool = False,
                   score: Optional[Callable] = None) -> Family:
  """Builds a `Family` for any family parameterised by its mean.

  The family must meet the paper's Assumptions 1-8 on Theta = [lo, hi] for TCB and
  ITCB's guarantees; in particular log pi(x | m) must be concave in m
  (Assumption 2), which the grid MLE and the Newton transport rely on.

  Args:
    name: short name, for display.
    lo: lower end of Theta (finite).
    hi: upper end of Theta (finite).
    log_density: log pi(x | m), elementwise, normalised for every m.
    sample: sample(key, means) -> one reward per mean, exact.
    kl: closed-form kl(m, m2); None computes it with `quadrature`.
    quadrature: rule from `gauss_hermite` or `gauss_legendre`; needed when kl
      or fisher is None (fisher can also come from kl by autodiff).
    location: the family is a location family, pi(x | m) = f(x - m): the
      quadrature KL is tabulated once (`location_kl_table`, span hi - lo) and
      the Fisher information is a constant computed once.
    fisher: closed-form Fisher information I(m); None computes it by
      quadrature, or from kl by autodiff when there is no quadrature.
    stat: stat(x) -> [..., stat_dim] fixed-size sufficient statistics with
      stat(x)[..., 0] == x; give it with stat_dim and mle, or none of the three
      for the grid MLE (`grid_mle`).
    stat_dim: size of stat.
    mle: mle(n, stats) -> MLE projected on Theta (n = 0 -> lo).
    grid_size: grid nodes of the grid MLE.
    stencil: nodes of the grid MLE's local polynomial.
    transport_x: closed-form minimiser x*(w_a, m_a, w_b, m_b) of
      w_a kl(m_a, x) + w_b kl(m_b, x); None: `newton_transport` on the kl.
    posterior_sample: optional posterior_sample(key, n, stats) (Thompson-
      sampling rules refuse the family without it).
    curvature: sigma^2 of Assumption 7 (for the `paper` threshold), or None.
    params: ((name, value), ...) of the family's parameters, for display.
    exponential: the family is a one-parameter exponential family in some
      sufficient statistic and `mle` is its MLE (the `kk` threshold applies).
    score: optional closed form of the summed score, see `Family.score`.

  Returns:
    The Family: the same object for the same arguments in the same precision
    (`jbai.builders.cached`), so that its compiled programs are reused.

  Raises:
    ValueError: naming the bad argument.
  """
  lo, hi, curvature = _check_arguments(name, lo, hi, curvature, stat, stat_dim, mle, kl,
                                       quadrature)
  # Tables and constants are computed in the precision active now: one build per
  # precision.
  return _build(
      name=name, lo=lo, hi=hi, log_density=log_density, sample=sample, kl=kl,
      quadrature=quadrature, location=location, fisher=fisher, stat=stat,
      stat_dim=stat_dim, mle=mle, grid_size=grid_size, stencil=stencil,
      transport_x=transport_x, posterior_sample=posterior_sample, curvature=curvature,
      params=tuple(params), exponential=exponential, score=score,
      dtype=jnp.zeros(()).dtype)


def _check_arguments(name, lo, hi, curvature, stat, stat_dim, mle, kl, quadrature):
  """Checks the arguments of `general_family`: (lo, hi, curvature) as floats.

  Raises:
    ValueError: naming the bad argument.
  """
  if not isinstance(name, str) or not name:
    raise ValueError(f"name must be a non-empty string, got {name!r}")
  lo, hi = float(lo), float(hi)
  if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
    raise ValueError(f"Theta = [{lo}, {hi}] must be finite with lo < hi "
                     "(Assumption 1: a compact mean space)")
  if curvature is not None:
    curvature = float(curvature)
    if not (math.isfinite(curvature) and curvature > 0):
      raise ValueError(f"curvature must be None or a positive number, got {curvature!r}")
  given = [v is not None for v in (stat, stat_dim, mle)]
  if any(given) and not all(given):
    raise ValueError("give stat, stat_dim and mle together (fixed-size sufficient "
                     "statistics), or none of them (grid MLE); got "
                     f"stat={stat!r}, stat_dim={stat_dim!r}, mle={mle!r}")
  if kl is None and quadrature is None:
    raise ValueError(f"family {name!r} needs a closed-form kl or a quadrature rule "
                     "(gauss_hermite or gauss_legendre) to compute it")
  return lo, hi, curvature


def _kl_and_fisher(log_density, quadrature, kl, fisher, location, lo, hi):
  """The family's kl and fisher: the given ones, else by quadrature or autodiff."""
  if location and kl is None:
    kl = location_kl_table(quadrature_kl(log_density, quadrature), hi - lo)
  elif kl is None:
    kl = quadrature_kl(log_density, quadrature)
  if fisher is None:
    fisher = (quadrature_fisher(log_density, quadrature) if quadrature is not None
              else kl_fisher(kl))
    if location:
      constant = float(jax.jit(fisher)(jnp.asarray(0.5 * (lo + hi))))
      fisher = lambda m: jnp.full_like(_float(m), constant)  # noqa: E731
  return kl, fisher


@cached
def _build(*, name, lo, hi, log_density, sample, kl, quadrature, location, fisher, stat,
           stat_dim, mle, grid_size, stencil, transport_x, posterior_sample, curvature,
           params, exponential, score, dtype) -> Family:
  """`general_family` with its arguments checked; `dtype` (the precision active at
  the call) is part of the cache key only."""
  del dtype
  kl, fisher = _kl_and_fisher(log_density, quadrature, kl, fisher, location, lo, hi)
  if stat is None:
    stat_dim, stat, mle = grid_mle(log_density, lo, hi, grid_size, stencil)
  if transport_x is None:
    transport_x = newton_transport(kl)
  _check_stat(name, stat, int(stat_dim), sample, lo, hi)
  return Family(
      name=name, lo=lo, hi=hi, kl=kl, sample=sample, stat_dim=int(stat_dim),
      stat=stat, mean=sample_mean(lo, hi), mle=mle, fisher=fisher,
      log_density=log_density, transport_x=transport_x,
      posterior_sample=posterior_sample, curvature=curvature, params=params,
      exponential=bool(exponential), score=score)


def _check_stat(name, stat, stat_dim, sample, lo, hi):
  """Checks at construction that stat has shape [..., stat_dim] and stat[..., 0] = x."""
  x, s = jax.jit(lambda key: (lambda x: (x, stat(x)))(
      sample(key, jnp.full((2,), 0.5 * (lo + hi)))))(jax.random.PRNGKey(0))
  if tuple(s.shape) != (2, stat_dim):
    raise ValueError(f"family {name!r}: stat(x) of two rewards has shape "
                     f"{tuple(s.shape)}, expected (2, {stat_dim})")
  if not np.allclose(np.asarray(s[..., 0]), np.asarray(x)):
    raise ValueError(f"family {name!r}: stat(x)[..., 0] must be the reward x "
                     f"(got {np.asarray(s[..., 0]).tolist()} for x = "
                     f"{np.asarray(x).tolist()})")
