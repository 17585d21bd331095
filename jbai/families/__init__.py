"""Reward families, one per file, behind a flat namespace.

Example:
  >>> import jbai
  >>> fam = jbai.families.bernoulli()
  >>> fam.name
  'bernoulli'
"""

from jbai.families import general, grid_mle, newton, quadrature
from jbai.families.base import Family, check_means, exponential_family, project
from jbai.families.bernoulli import bernoulli
from jbai.families.exponential import exponential
from jbai.families.gaussian import gaussian
from jbai.families.logcosh import logcosh
from jbai.families.poisson import poisson
from jbai.families.weibull import weibull

BUILTIN = {
    "gaussian": gaussian,
    "bernoulli": bernoulli,
    "poisson": poisson,
    "exponential": exponential,
    "weibull": weibull,
    "logcosh": logcosh,
}


def get(name: str, **params) -> Family:
  """Builds a built-in family by name; raises ValueError naming an unknown one."""
  if name not in BUILTIN:
    raise ValueError(f"unknown family {name!r}; choose from {sorted(BUILTIN)}")
  return BUILTIN[name](**params)


__all__ = ["Family", "bernoulli", "check_means", "exponential", "exponential_family",
           "gaussian", "get", "logcosh", "poisson", "project", "weibull"]
