"""General reward families: any family parameterised by its mean (paper, Section 2).

The paper's second contribution is that TCB, ITCB and its stopping threshold need
only a family {P_m : m in Theta} parameterised by its mean that meets its
Assumptions 1-8, not an exponential family. `general_family` builds a
`jbai.families.Family` from what such a family offers:

  * log pi(x | m) and an exact sampler (required);
  * KL(m, m2): in closed form when known, otherwise by numerical quadrature,
    KL(m, m2) = E_m[log pi(X | m) - log pi(X | m2)], with a fixed rule from
    `jbai.families.quadrature.gauss_hermite` or `gauss_legendre` (optionally
    tabulated once for a location family, `location=True`);
  * the Fisher information I(m) = E_m[-d^2/dm^2 log pi(X | m)]: given, or by
    quadrature, or as d^2/dm2^2 KL(m, m2) at m2 = m (by autodiff);
  * the MLE over the compact Theta (paper eq. MLE): from fixed-size sufficient
    statistics where the family has them (`stat`, `stat_dim`, `mle`), otherwise
    from the log-likelihood accumulated on a grid over Theta
    (`jbai.families.grid_mle`);
  * the transport minimiser: given, or safeguarded Newton on the derivative of
    the KL (`jbai.families.newton`, transport_x=None).

Every function is elementwise, pure, and jit/vmap/grad friendly; every inner
solver runs a fixed number of iterations. The accuracy of the numerical parts is
in the docstrings of their modules.

Example (a user-defined location family; see docs/guide/custom-family.md):
  >>> import jax, jax.numpy as jnp
  >>> from jbai.families import general, quadrature
  >>> def log_density(x, m):  # N(m, 1), as if KL were unknown
  ...   return -0.5 * (x - m) ** 2 - 0.5 * jnp.log(2 * jnp.pi)
  >>> def sample(key, means):
  ...   means = jnp.asarray(means) * 1.0
  ...   return means + jax.random.normal(key, means.shape, means.dtype)
  >>> fam = general.general_family(
  ...     name="my_gaussian", lo=-2.0, hi=2.0, log_density=log_density,
  ...     sample=sample, quadrature=quadrature.gauss_hermite(log_density),
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
from jbai.families.floats import as_float
from jbai.families.grid_mle import GRID_SIZE, STENCIL, grid_mle
from jbai.families.newton import newton_transport
from jbai.families.quadrature import (Quadrature, kl_fisher, location_kl_table,
                                      quadrature_fisher, quadrature_kl)


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
      fisher = lambda m: jnp.full_like(as_float(m), constant)  # noqa: E731
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
