"""The means checked before a run: each instance identifiable in the run's dtype.

A unique best arm (or the identifiability of a question beyond it,
`jbai.problems`) judged in the simulation's float dtype (`check_table`), an
eps-good run's slack within the width of Theta (`check_eps_slack`), and a best
arm that the exact oracle can tell apart, Gamma(nu) > 0 (`check_separable`).
"""

import math

import jax.numpy as jnp
import numpy as np

from jbai import problems as problems_lib
from jbai import stops as stops_lib
from jbai.families.base import Family, check_means
from jbai.oracle.eps import check_eps


def check_table(family: Family, means, dtype=None, problem=None) -> np.ndarray:
  """Concrete means checked (`jbai.families.base.check_means`, ties judged in
  the simulation's float dtype too), as a float64 array; for a question beyond the
  best arm (`problem`), its own identifiability instead of a unique best arm
  (`jbai.problems.check`)."""
  dtype = dtype or jnp.result_type(float)
  if problem is not None:
    return problems_lib.check(problem, family, means, dtype)
  return check_means(family, means, dtype=dtype)


def check_eps_slack(family: Family, threshold) -> None:
  """An eps-good run's slack (the eps of its stop, `jbai.stops.eps_of`) below the
  width of Theta, as the eps oracle requires (`jbai.oracle.check_eps`): at or
  beyond it every arm is eps-good under every instance, T*_eps = 0, and nothing
  is to be identified. The run, its summary and a study refuse it alike."""
  eps = stops_lib.eps_of(threshold)
  if eps > 0:
    check_eps(family, eps)


def check_separable(family: Family, table: np.ndarray) -> list:
  """(w, Gamma) of the exact oracle for each instance of the [I, K] table, after
  checking that Gamma(nu) > 0: the best arm can be told apart in the simulation's
  float dtype. Means distinct in float64 but equal in float32 (1, 1 + 1e-8), a
  gap whose divergence rounds to 0, or an infinite sigma give Gamma(nu) = 0, so
  that no trial could stop and T*(nu) would be infinite: refused before a run.

  Raises:
    ValueError: naming the instance.
  """
  from jbai.oracle import optimal
  out = []
  for row in table:
    w, gam = optimal(family, row)
    if not (math.isfinite(gam) and gam > 0):
      raise ValueError(
          f"the best arm of means {row.tolist()} cannot be told apart in "
          f"{np.dtype(jnp.result_type(float)).name} by the {family!r} family: Gamma(nu) = "
          f"{gam!r}, T*(nu) is infinite; separate the best arm more (or use JAX_ENABLE_X64=1)")
    out.append((w, gam))
  return out
