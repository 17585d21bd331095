"""The means checked before a run: each instance identifiable in the run's dtype.

A unique best arm (or the identifiability of a question beyond it,
`jbai.problems`) judged in the simulation's float dtype (`check_table`), and a
best arm that the exact oracle can tell apart, Gamma(nu) > 0 (`check_separable`);
an eps-good run's slack is checked where the run is assembled
(`jbai.core.assembly`, `jbai.eps_transport.check_slack`).
"""

import math

import jax.numpy as jnp
import numpy as np

from jbai import problems as problems_lib
from jbai.bounded import family as bounded_family
from jbai.families.base import Family, check_means


def check_table(family: Family, means, dtype=None, problem=None) -> np.ndarray:
  """Concrete means checked (`jbai.families.base.check_means`, ties judged in
  the simulation's float dtype too), as a float64 array; for a question beyond the
  best arm (`problem`), its own identifiability instead of a unique best arm
  (`jbai.problems.check`); for the bounded model, the means of its laws."""
  dtype = dtype or jnp.result_type(float)
  if problem is not None:
    table = problems_lib.check(problem, family, means, dtype)
  else:
    table = check_means(family, means, dtype=dtype)
  bounded_family.check_means(family, table)  # the bounded model's are its laws'
  return table


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
