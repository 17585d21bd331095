"""Oracle quantities the figures are compared with, in float64.

w(nu), Gamma(nu) and T*(nu) = 1 / Gamma(nu) (paper eq. problem complexity), and
the beta-optimal Gamma_beta(nu), T*_beta(nu) = 1 / Gamma_beta(nu) (the best
allocation with the best arm's weight fixed to beta), from jbai's exact oracle
(`jbai.oracle.exact_solve`, `jbai.oracle.exact_beta_solve`), jit-compiled once
per family and number of arms.
"""

import functools

import jax
import numpy as np

from jbai.families import get as get_family
from jbai.oracle import exact_beta_solve, exact_solve

_BATCH = 128  # beta grids are padded to a multiple of this: one compilation per K


@functools.lru_cache(maxsize=64)
def _optimal(family: str, means: tuple):
  with jax.enable_x64(True):
    w, gam = exact_solve(get_family(family), np.asarray(means, np.float64))
    return np.asarray(w, np.float64), float(gam)


def optimal(family: str, means) -> tuple:
  """(w(nu) [K], Gamma(nu)) in float64."""
  w, gam = _optimal(family, tuple(float(x) for x in means))
  return w.copy(), gam


def t_star(family: str, means) -> float:
  """T*(nu) = 1 / Gamma(nu)."""
  return 1.0 / optimal(family, means)[1]


def beta_t_star(family: str, means, betas) -> np.ndarray:
  """T*_beta(nu) for each beta in `betas` (batched solves)."""
  betas = np.atleast_1d(np.asarray(betas, np.float64))
  n = len(betas)
  size = _BATCH * max(1, -(-n // _BATCH))
  padded = np.concatenate([betas, np.full(size - n, 0.5)])
  with jax.enable_x64(True):
    table = np.broadcast_to(np.asarray(means, np.float64), (size, len(means)))
    _, gam = exact_beta_solve(get_family(family), table, padded)
    return 1.0 / np.asarray(gam, np.float64)[:n]
