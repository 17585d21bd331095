"""T*(nu) = 1 / Gamma(nu) and its gradient in the means, in float64.

T*(nu) log(1/delta) is the asymptotic lower bound on E[tau] (Garivier & Kaufmann,
2016); its gradient in the means is the reference that the likelihood-ratio
gradient of E[tau] / log(1/delta) tends to for an asymptotically optimal rule
(`jbai grad`, and the experiment `gradient` of `jbai reproduce`). The gradient
comes from `exact_solve`'s implicit derivatives (see `jbai.oracle.exact`), not
from differentiating its bisection loops.
"""

from typing import Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.families import Family, get
from jbai.oracle.exact import exact_solve


def t_star_gradient(family: Union[Family, str], means: ArrayLike, problem=None) -> tuple:
  """T*(nu) and grad_mu T*(nu) at one instance, in float64.

  Args:
    family: a `Family` or a built-in family's name.
    means: [K] arm means with a unique best arm.
    problem: a question beyond the best arm (`jbai.problems.top_m(m)`,
      `above(level)`): its T*(nu) (`Problem.solve`), differentiated through its
      solver; None: the best arm's.

  Returns:
    (t_star, grad): T*(nu) = 1 / Gamma(nu) as a float, and its gradient in the
    means, a [K] numpy array.

  Example:
    >>> from jbai.oracle.t_star import t_star_gradient
    >>> t, g = t_star_gradient("gaussian", [1.0, 0.0])
    >>> round(t, 6), [round(float(x), 6) for x in g]
    (8.0, [-16.0, 16.0])
  """
  family = get(family) if isinstance(family, str) else family
  with jax.enable_x64(True):
    means = jnp.asarray(means, jnp.float64)
    t_star = ((lambda m: 1.0 / exact_solve(family, m)[1]) if problem is None else
              (lambda m: problem.solve(family, m)[1]))
    grad = np.asarray(jax.grad(t_star)(means))
    value = float(t_star(means))
  return value, grad


def t_star_log_gradient(family: Union[Family, str], means: ArrayLike, deltas,
                        problem=None) -> tuple:
  """T*(nu) log(1/delta) and its gradient in the means, for each delta.

  Args:
    family: a `Family` or a built-in family's name.
    means: [K] arm means with a unique best arm.
    deltas: [D] confidence levels in (0, 1).
    problem: as `t_star_gradient`'s.

  Returns:
    (grad [D, K], value [D]) as numpy arrays: d(T*(nu) log(1/delta)) / d mu_i
    and T*(nu) log(1/delta).
  """
  value, grad = t_star_gradient(family, means, problem)
  logs = np.log(1.0 / np.asarray(deltas, float))
  return logs[:, None] * grad[None], value * logs
