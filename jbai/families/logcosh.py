"""The logcosh location family: a strongly log-concave, non-Gaussian density.

pi(x | m) = exp(-z^2 / 2) / (Z cosh z), z = x - m, Z = 1.8580739884965014,

symmetric about m, so m is the mean. It is not an exponential family, and its
MLE has no fixed-size sufficient statistic: jbai accumulates the log-likelihood
on a grid over Theta (`jbai.families.grid_mle`). It meets the paper's
Assumptions 1-8 on any bounded Theta; in particular

  -d^2/dm^2 log pi(x | m) = 1 + sech^2(z) >= 1,

so Assumption 7 holds with sigma^2 = 1 and the `paper` threshold applies.
Fisher information I = 1 + E[sech^2 Z] = 1.704082942534707 (Var X = 0.5918).
"""

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.families.base import Family
from jbai.families.general import general_family
from jbai.families.grid_mle import GRID_SIZE
from jbai.families.quadrature import gauss_hermite

LOG_Z = 0.6195404611792523      # log of the normaliser Z = int exp(-z^2/2) / cosh z dz
FISHER = 1.704082942534707      # 1 + E[sech^2 Z]
ACCEPTANCE = 0.7412642741253798  # Z / sqrt(2 pi): acceptance rate of one proposal
TRIES = 64                       # proposals per draw: P(all rejected) = 2.6e-38
QUAD_NODES = 128                 # Gauss-Hermite nodes of the KL table: error 3e-14


@jax.custom_jvp
def log_cosh(z: jax.Array) -> jax.Array:
  """log cosh z, without overflow, with derivative tanh z (also at z = 0)."""
  a = jnp.abs(z)
  return a + jnp.log1p(jnp.exp(-2 * a)) - jnp.log(2.0).astype(a.dtype)


@log_cosh.defjvp
def _log_cosh_jvp(primals, tangents):
  (z,), (dz,) = primals, tangents
  return log_cosh(z), jnp.tanh(z) * dz


def log_density(x, m):
  """log pi(x | m) of the logcosh family, elementwise."""
  z = jnp.asarray(x) - jnp.asarray(m)
  return -0.5 * z * z - log_cosh(z) - LOG_Z


def sample_with_flag(key: jax.Array, means, tries: int = TRIES):
  """Exact draws by rejection from N(m, 1), with a flag for exhausted proposals.

  A proposal z ~ N(0, 1) is accepted with probability sech z = pi(m + z | m) /
  (Z / sqrt(2 pi) phi(z)) <= 1; each is accepted with probability 0.7413. The
  `tries` proposals are drawn at once (a fixed amount of work, so the draw runs
  under vmap) and the first accepted one is returned. If none is accepted
  (probability 0.2587^tries, 2.6e-38 for 64 tries) the last proposal, an
  N(m, 1) draw, is returned and the flag is set.

  Args:
    key: PRNG key.
    means: [...] means.
    tries: number of proposals.

  Returns:
    (x, exhausted): rewards [...] and a bool [...] flag, True where every
    proposal was rejected.
  """
  means = jnp.asarray(means) * 1.0
  k_z, k_u = jax.random.split(key)
  shape = (tries,) + means.shape
  z = jax.random.normal(k_z, shape, means.dtype)
  u = jax.random.uniform(k_u, shape, means.dtype)
  accept = u * jnp.cosh(z) <= 1
  first = jnp.argmax(accept, axis=0)
  chosen = jnp.take_along_axis(z, first[None], axis=0)[0]
  exhausted = ~jnp.any(accept, axis=0)
  return means + jnp.where(exhausted, z[-1], chosen), exhausted


def sample(key: jax.Array, means) -> jax.Array:
  """One logcosh reward per mean (`sample_with_flag` without the flag)."""
  return sample_with_flag(key, means)[0]


def logcosh(lo: float = -5.0, hi: float = 5.0, grid_size: int = GRID_SIZE) -> Family:
  """Rewards with density exp(-z^2 / 2) / (Z cosh z), z = x - m, mean m.

  KL(m, m2) by 128-node Gauss-Hermite quadrature (error 3e-14), tabulated once over
  |m - m2| <= hi - lo (it depends on m - m2 only); transport point by
  safeguarded Newton on the table's derivative (`newton.newton_transport`); MLE from the log-likelihood on a grid of `grid_size` nodes over
  Theta; no conjugate posterior (Thompson-sampling rules refuse the family);
  curvature sigma^2 = 1 (Assumption 7).

  Args:
    lo: lower end of Theta.
    hi: upper end of Theta.
    grid_size: grid nodes of the MLE (h = (hi - lo) / (grid_size - 1)).

  Returns:
    The Family.

  Example:
    >>> fam = logcosh()
    >>> round(float(fam.kl(1.0, 1.0)), 6)
    0.0
  """
  lo, hi = float(lo), float(hi)
  if not lo < hi:
    raise ValueError(f"need lo < hi for Theta, got [{lo}, {hi}]")
  # The KL table is built in the precision active now; one build per setting.
  return _build(lo, hi, int(grid_size), str(jnp.zeros(()).dtype))


def _fisher(m):
  return jnp.full_like(jnp.asarray(m) * 1.0, FISHER)


@cached
def _build(lo: float, hi: float, grid_size: int, dtype: str) -> Family:
  del dtype  # part of the cache key only
  return general_family(
      name="logcosh", lo=lo, hi=hi, log_density=log_density, sample=sample,
      quadrature=gauss_hermite(log_density, QUAD_NODES), location=True,
      fisher=_fisher, grid_size=grid_size, curvature=1.0,
      params=(("grid_size", grid_size),))
