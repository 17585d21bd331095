"""Transport costs: the inner problem of the paper's Lemma 1, and Gamma(nu, w).

For a leader a and another arm b with m_a >= m_b, the transport cost is

  C(w_a, m_a, w_b, m_b) = min_{x in [m_b, m_a]} w_a d_U(m_a, x) + w_b d_L(m_b, x),

and 0 when m_a < m_b. On [m_b, m_a], d_U(m_a, x) = KL(m_a, x) and
d_L(m_b, x) = KL(m_b, x), so the objective is w_a KL(m_a, x) + w_b KL(m_b, x),
which is unimodal in x for every family that meets the paper's assumptions.

Two methods:
  * "closed": the family's closed-form minimiser (`Family.transport_x`; the
    weighted mean for exponential families).
  * "golden": golden-section search with a fixed number of iterations (so it ends
    under vmap). After n iterations the bracket is (m_a - m_b) * 0.618^n wide:
    with the default 64 iterations, 4e-14 of the gap, far below float64 rounding
    of the cost for any gap in Theta.
`bisect_root` finds where a function that changes sign once crosses 0 (the
derivative of a unimodal objective), to the full precision of the dtype; the
eps-GLLR's costs use it (`jbai.eps_transport.eps_transport`).
The same code gives the GLLR statistic Lambda_t(a, b) (weights = counts, means =
MLEs) and the empirical transport costs of the sampling rules (weights = T_t/t).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.families.base import Family

GOLDEN_ITERS = 64
_INV_PHI = 0.6180339887498949  # 1 / golden ratio
GATHER_AT = 16  # arms from which `entry` gathers (the leader's weight and mean)


class Transport(NamedTuple):
  value: jax.Array  # [...] float, the minimum cost
  x: jax.Array      # [...] float, the minimiser


def golden_section(f, lo: ArrayLike, hi: ArrayLike, iters: int = GOLDEN_ITERS):
  """Minimises a unimodal elementwise function f on [lo, hi] by golden section.

  Args:
    f: elementwise function of x with the shape of lo and hi.
    lo: lower ends of the brackets.
    hi: upper ends of the brackets.
    iters: fixed number of iterations; the bracket shrinks by 0.618 each.

  Returns:
    The minimiser (midpoint of the final bracket).
  """
  a, b = jnp.broadcast_arrays(jnp.asarray(lo) * 1.0, jnp.asarray(hi) * 1.0)
  c = b - _INV_PHI * (b - a)
  d = a + _INV_PHI * (b - a)
  fc, fd = f(c), f(d)

  def body(_, carry):
    a, b, c, d, fc, fd = carry
    left = fc <= fd  # minimiser lies in [a, d]
    a, b = jnp.where(left, a, c), jnp.where(left, d, b)
    new = jnp.where(left, b - _INV_PHI * (b - a), a + _INV_PHI * (b - a))
    fnew = f(new)
    c, d = jnp.where(left, new, d), jnp.where(left, c, new)
    fc, fd = jnp.where(left, fnew, fd), jnp.where(left, fc, fnew)
    return a, b, c, d, fc, fd

  a, b, *_ = jax.lax.fori_loop(0, iters, body, (a, b, c, d, fc, fd))
  return 0.5 * (a + b)


def bisect_iters(dtype) -> int:
  """Bisection steps that exhaust a float dtype: nmant + 3 (26 in float32, 55 in
  float64), after which the bracket is (hi - lo) 2^-(nmant + 3) wide, an eighth
  of the spacing of floats near hi - lo."""
  return int(jnp.finfo(dtype).nmant) + 3


def bisect_root(g, lo: ArrayLike, hi: ArrayLike, iters: Optional[int] = None):
  """The point where an elementwise function g crosses 0 on [lo, hi], g changing
  sign once there, from < 0 to >= 0 (g nondecreasing, or the derivative of a
  unimodal function).

  Bisection: each step evaluates g at the midpoint of the bracket [a, b] and keeps
  [mid, b] where g(mid) < 0, else [a, mid] (a NaN g(mid) counts as >= 0). g is
  evaluated at midpoints only, never at lo or hi, where it may be infinite or
  undefined (the slope of a divergence at an end of Theta). For g the derivative
  of a unimodal function, the result is its minimiser on [lo, hi].

  Args:
    g: elementwise function of x with the broadcast shape of lo and hi.
    lo: lower ends of the brackets.
    hi: upper ends of the brackets (>= lo).
    iters: fixed number of steps (so that it ends under vmap); default
      `bisect_iters` of the dtype.

  Returns:
    lo where every g(mid) was >= 0 (g >= 0 on the bracket, to its resolution), hi
    where every g(mid) was < 0, else the midpoint of the final bracket, within
    (hi - lo) 2^-(iters + 1) of the crossing x* = sup {x in [lo, hi] : g(x) < 0}.
  """
  lo, hi = jnp.broadcast_arrays(jnp.asarray(lo) * 1.0, jnp.asarray(hi) * 1.0)
  iters = bisect_iters(lo.dtype) if iters is None else iters

  def body(_, carry):
    a, b = carry
    mid = 0.5 * (a + b)
    below = g(mid) < 0
    return jnp.where(below, mid, a), jnp.where(below, b, mid)

  a, b = jax.lax.fori_loop(0, iters, body, (lo, hi))
  return jnp.where(a == lo, lo, jnp.where(b == hi, hi, 0.5 * (a + b)))


def transport_cost(family: Family, w_a: ArrayLike, m_a: ArrayLike,
                   w_b: ArrayLike, m_b: ArrayLike,
                   method: str = "auto") -> Transport:
  """Transport cost between a leader (w_a, m_a) and another arm (w_b, m_b).

  Elementwise over broadcast inputs; differentiable in weights and means.

  Args:
    family: the reward family.
    w_a: weight (or count) of the leader.
    m_a: mean of the leader.
    w_b: weight (or count) of the other arm.
    m_b: mean of the other arm.
    method: "closed", "golden", or "auto" (closed when the family has one).

  Returns:
    Transport(value, x): the cost (0 where m_a < m_b) and the minimiser.
  """
  if method == "auto":
    method = "golden" if family.transport_x is None else "closed"
  w_a, m_a, w_b, m_b = (jnp.asarray(v) * 1.0 for v in (w_a, m_a, w_b, m_b))

  def objective(x):
    return w_a * family.kl(m_a, x) + w_b * family.kl(m_b, x)

  if method == "closed":
    if family.transport_x is None:
      raise ValueError(f"family {family.name!r} has no closed-form transport")
    x = family.transport_x(w_a, m_a, w_b, m_b)
  elif method == "golden":
    ordered = m_a >= m_b
    lo = jnp.where(ordered, m_b, m_a)
    hi = jnp.where(ordered, m_a, m_b)
    x = jax.lax.stop_gradient(golden_section(objective, lo, hi))
  else:
    raise ValueError(f"unknown transport method {method!r}; use closed, golden or auto")
  value = jnp.where(m_a > m_b, objective(x), 0.0)
  return Transport(value, x)


def pair_costs(family: Family, w: ArrayLike, means: ArrayLike, leader: ArrayLike,
               method: str = "auto", stats=None) -> jax.Array:
  """Transport costs from the leader to every arm.

  Args:
    family: the reward family.
    w: [..., K] weights (an allocation, or counts for the GLLR).
    means: [..., K] means.
    leader: [...] integer index of the leader.
    method: transport method.
    stats: [..., K, S] the arms' summed statistics, read only by a family with
      its own `Family.pair_costs` (which this calls instead, where it has one).

  Returns:
    [..., K] costs, +inf at the leader's own index.
  """
  if family.pair_costs is not None:
    return family.pair_costs(w, means, jnp.asarray(leader), stats)
  w = jnp.asarray(w) * 1.0
  means = jnp.asarray(means) * 1.0
  leader = jnp.asarray(leader)
  is_leader = jnp.arange(means.shape[-1]) == leader[..., None]
  costs = transport_cost(family, entry(w, leader), entry(means, leader), w, means,
                         method).value
  return jnp.where(is_leader, jnp.inf, costs)


def entry(x: jax.Array, index: jax.Array) -> jax.Array:
  """[..., 1] x[..., index] over the batch of x and index [...].

  Below GATHER_AT arms a masked sum over the arms, which XLA:CPU fuses into the
  kernels that read it; from GATHER_AT on, where its reductions run as library
  calls apart from their operands (a select, then the sum: two kernels a read
  under vmap), a gather, one kernel (docs/performance.md)."""
  if x.shape[-1] < GATHER_AT:
    return jnp.sum(jnp.where(jnp.arange(x.shape[-1]) == index[..., None], x, 0),
                   axis=-1, keepdims=True)
  batch = jnp.broadcast_shapes(x.shape[:-1], index.shape)
  x = jnp.broadcast_to(x, batch + x.shape[-1:])
  return jnp.take_along_axis(x, jnp.broadcast_to(index, batch)[..., None], axis=-1)


def gamma(family: Family, means: ArrayLike, w: ArrayLike,
          method: str = "auto") -> jax.Array:
  """Gamma(nu, w) of Lemma 1: the smallest transport cost from the best arm.

  Args:
    family: the reward family.
    means: [..., K] means of the instances (unique best arm).
    w: [..., K] weight vectors on the simplex.
    method: transport method.

  Returns:
    [...] Gamma(nu, w).

  Example:
    >>> import jbai, jax.numpy as jnp
    >>> fam = jbai.families.gaussian()
    >>> float(jbai.gamma(fam, jnp.array([1.0, 0.0]), jnp.array([0.5, 0.5])))
    0.125
  """
  means = jnp.asarray(means) * 1.0
  leader = jnp.argmax(means, axis=-1)
  return jnp.min(pair_costs(family, w, means, leader, method), axis=-1)
