"""The fixed budget's oracle: the large-deviation rate of a static allocation.

A static allocation w pulls arm i w_i T times out of a budget T and answers the
arm of largest sample mean. Glynn & Juneja (2004, "A large deviations perspective
on ordinal optimization") give the rate at which its probability of error falls,
P(error at T) = exp(-T Gamma_FB(w, nu) + o(T)), with

  Gamma_FB(w, nu) = min_{j != a*} inf_x  w_a* KL(x, mu_a*) + w_j KL(x, mu_j),

the fixed-confidence transport cost (`jbai.transport`) with the KL's arguments
reversed: there the alternative means move to x, here the sample means do. Its
maximiser w_FB(nu) is the best static allocation for a large budget. For Gaussian
arms of one variance the KL is symmetric and w_FB = w*; for other families the two
differ.

`reversed_family` is a family whose KL is reversed, KL'(m, x) = KL(x, m), so that
the fixed-confidence machinery computes the fixed budget's: its transport cost is
the inner infimum above, `jbai.oracle.exact_solve` on it maximises Gamma_FB over
the simplex (Garivier & Kaufmann's optimality conditions hold for any such
divergence: the cost is concave and one-homogeneous in the weights, and its
partial derivatives are the divergences at the transport point), and its
derivatives in the means are the implicit ones of the exact solver. The transport
point has a closed form for the one-parameter exponential families: the slope of
KL(x, mu) in x is theta(x) - theta(mu), theta the natural parameter, so the
infimum sits at theta(x) = (w_a theta(mu_a) + w_j theta(mu_j)) / (w_a + w_j);
other families find it by golden-section search.
"""

from typing import Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import expit, logit
from jax.typing import ArrayLike

from jbai import families
from jbai.builders import cached
from jbai.families.base import Family, check_means
from jbai.oracle.exact import exact_solve
from jbai.transport import gamma

# The natural parameter theta(m) of a built-in exponential family and its inverse.
NATURAL = {
    "gaussian": (lambda m: m, lambda t: t),
    "bernoulli": (logit, expit),
    "poisson": (jnp.log, jnp.exp),
    "exponential": (lambda m: -1 / m, lambda t: -1 / t),
}


def _natural_mean(family: Family):
  """The reversed transport point: theta^-1 of the weighted mean of theta, the
  means kept inside Theta (theta is infinite at Bernoulli's 0 and 1)."""
  theta, inverse = NATURAL[family.name]
  lo, hi = family.lo, family.hi

  def transport_x(w_a, m_a, w_b, m_b):
    inner = lambda m: jnp.clip(m, lo + 1e-12 * (hi - lo), hi - 1e-12 * (hi - lo))
    total = w_a + w_b
    safe = jnp.where(total > 0, total, 1)
    t = (w_a * theta(inner(m_a)) + w_b * theta(inner(m_b))) / safe
    return jnp.where(total > 0, inverse(t), 0.5 * (m_a + m_b))

  return transport_x


@cached
def reversed_family(family: Family) -> Family:
  """The family with its KL reversed, KL'(m, x) = KL(x, m): its transport costs
  are the fixed budget's (module docstring)."""
  kl = family.kl
  closed = family.exponential and family.name in NATURAL and family.stat_dim == 1
  return family._replace(name=f"{family.name}-reversed", kl=lambda m, x: kl(x, m),
                         transport_x=_natural_mean(family) if closed else None)


def budget_rate(family: Family, means: ArrayLike, w: ArrayLike) -> jax.Array:
  """[...] Gamma_FB(w, nu), the large-deviation rate of P(error at T) of the static
  allocation w [..., K] on the instances `means` [..., K]; differentiable."""
  return gamma(reversed_family(family), means, w)


def budget_solve(family: Family, means: ArrayLike):
  """(w_FB [..., K], Gamma_FB [...]): the static allocation of largest rate, by the
  exact solver on the reversed family; pure, batched and differentiable in the
  means (no validation: see `budget_allocation`)."""
  return exact_solve(reversed_family(family), means)


def budget_allocation(family: Union[Family, str], means: ArrayLike):
  """w_FB(nu) and Gamma_FB(nu) of validated means [K] or [I, K].

  Args:
    family: a `Family` or a built-in name.
    means: the instances, a unique best arm each, inside Theta.

  Returns:
    (w_FB, Gamma_FB) as jax arrays.

  Example:
    >>> import jax, jbai
    >>> with jax.enable_x64(True):
    ...   w, rate = jbai.oracle.budget_allocation("gaussian", [1.0, 0.5, 0.0])
    ...   w_star, gam, _ = jbai.oracle.optimal_allocation("gaussian", [1.0, 0.5, 0.0],
    ...                                                   method="exact")
    ...   same = bool(abs(w - w_star).max() < 1e-9 and abs(rate - gam) < 1e-12)
    >>> same  # Gaussian arms of one variance: w_FB = w*
    True
  """
  if isinstance(family, str):
    family = families.get(family)
  table = check_means(family, means)
  return budget_solve(family, jnp.asarray(np.asarray(table), jnp.result_type(float)))
