"""Optimal allocation w(nu), problem complexity Gamma(nu) = 1 / T*(nu), and beta-optimal w.

Two solvers of max_{w in simplex} Gamma(nu, w) (paper Lemma 1 and eq. problem
complexity):

  * "exact": the nested bisection of Garivier & Kaufmann (2016), see
    `jbai.oracle.exact`;
  * "optax": projected mirror-ascent on a soft-min of the log pair costs with
    optax, see `jbai.oracle.projected`.

Inside simulation loops, `warm_solve` (`jbai.oracle.warm`) tracks exact_solve's
w(nu) by Newton steps from the previous step's solution: the oracle-based rules
take a fixed two steps per simulation step (a lane that has not converged carries
its iterate to the next step), so that the step's cost does not depend on the pool
of lanes, instead of the nested bisection's ~1,200 transport evaluations.

`optimal_allocation` and `beta_optimal_allocation` validate their input at the
Python boundary and accept a batch [I, K] of instances. `exact_solve`,
`projected_solve` and `exact_beta_solve` are the raw pure functions (no validation,
safe on ties) for use inside jitted code; `gamma_bounds` certifies any allocation.

The fixed budget's oracle (`jbai.oracle.budget`): `budget_rate` is Glynn &
Juneja's large-deviation rate Gamma_FB(w, nu) of a static allocation's P(error at
T), and `budget_solve` / `budget_allocation` its maximiser w_FB(nu), by the exact
solver on the family with its KL reversed.

The eps-good oracle (`jbai.oracle.eps`): `eps_solve` (raw) and
`eps_optimal_allocation` (validated) give T*_eps(nu) = 1 / Gamma_eps(nu), w*_eps(nu)
and the answer for eps-best-arm identification with an additive eps (Garivier &
Kaufmann 2021), the complexity of the eps-GLLR stop; at eps = 0 they give the
exact oracle's solution.

Example:
  >>> import jbai
  >>> w, gamma, info = jbai.oracle.optimal_allocation("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0])
  >>> [round(float(v), 4) for v in w]
  [0.3333, 0.1667, 0.1667, 0.1667, 0.1667]
  >>> bool(info.converged)
  True
"""

import functools
from typing import Optional, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify
from jax.typing import ArrayLike

from jbai import families
from jbai import checks as traced_checks
from jbai.checks import run_checked
from jbai.families.base import Family, check_means
from jbai.oracle.budget import budget_allocation, budget_rate, budget_solve, reversed_family
from jbai.oracle.common import default_iters
from jbai.oracle.exact import (OracleInfo, exact_beta_solve, exact_solve, gamma_bounds,
                               relative_gap)
from jbai.oracle.eps import (EpsOracle, eps_gamma, eps_optimal_allocation,
                             eps_solve)
from jbai.oracle.projected import (DEFAULT_STEPS, projected_solve,
                                   scale_by_simplex_geometry)
from jbai.oracle.t_star import t_star_gradient, t_star_log_gradient
from jbai.oracle.warm import WarmSolution, WarmStart, warm_solve, warm_start

METHODS = ("optax", "exact")


def _family(family: Union[Family, str]) -> Family:
  if isinstance(family, str):
    return families.get(family)
  if not isinstance(family, Family):
    raise ValueError(f"family must be a Family or a family name, got {family!r}")
  return family


def _means(family: Family, means) -> jax.Array:
  """The means, checked where concrete; traced means (under the caller's jit, vmap
  or grad) pass unchecked."""
  if isinstance(means, jax.core.Tracer):
    return jnp.asarray(means, jnp.result_type(means, float))
  return jnp.asarray(check_means(family, means))


@jax.jit(static_argnames=("family", "method", "steps"))
def _solve(family, means, method, steps, tol):
  if method == "exact":
    w, gamma = exact_solve(family, means)
    iterations = default_iters(means.dtype)
  else:
    w, gamma = projected_solve(family, means, steps=steps)
    iterations = steps
  gap = relative_gap(family, means, w)
  info = OracleInfo(iterations=jnp.full(gap.shape, iterations, jnp.int32),
                    converged=gap <= tol, gap=gap)
  return w, gamma, info


def optimal_allocation(family: Union[Family, str], means: ArrayLike,
                       method: str = "optax", steps: int = DEFAULT_STEPS,
                       tol: Optional[float] = None, checks: bool = False):
  """Optimal allocation w(nu) and problem complexity Gamma(nu) = 1 / T*(nu).

  Args:
    family: a `Family` or the name of a built-in one.
    means: [K] or [I, K] arm means, each instance with a unique best arm in Theta.
    method: "optax" (projected ascent) or "exact" (nested bisection).
    steps: number of ascent steps of the optax solver.
    tol: `info.converged` is `info.gap <= tol`; default 1e-6 (1000 float eps in
      float32).
    checks: check traced means too, with `jax.experimental.checkify`
      (`jbai.checks`): NaN, infinite or outside Theta, a tie for the best
      arm, and Gamma(nu) not a positive number (a best arm the dtype cannot tell
      apart). Under the caller's `jax.jit`, functionalise with
      `checkify.checkify` and call `err.throw()` outside.

  Returns:
    (w, gamma, info): w [..., K] on the simplex, gamma [...] = Gamma(nu, w), and
    an `OracleInfo` whose `gap` is the certified relative gap
    (upper bound - gamma) / gamma on Gamma(nu).

  Under the caller's `jax.jit`, `jax.vmap` or `jax.grad` the means are traced
  and pass unchecked (as in `exact_solve`) unless `checks` is set.

  Raises:
    ValueError: for an unknown family or method, fewer than two arms, a tie for
      the best arm, or a mean outside Theta or NaN (means that are concrete).
  """
  family = _family(family)
  if method not in METHODS:
    raise ValueError(f"unknown oracle method {method!r}; use one of {METHODS}")
  if not (isinstance(steps, (int, np.integer)) and steps > 0):
    raise ValueError(f"steps must be a positive integer, got {steps!r}")
  checked = not isinstance(means, jax.core.Tracer)
  means = _means(family, means)
  if tol is None:
    tol = max(1e-6, 1000 * float(jnp.finfo(means.dtype).eps))
  if checks and not checked:
    run_checked(functools.partial(traced_checks.check_means, family), means)
  w, gamma, info = _solve(family, means, method, int(steps), tol)
  if checked and not isinstance(gamma, jax.core.Tracer):
    _check_gamma(family, means, gamma)
  elif checks:
    run_checked(functools.partial(_check_gamma_traced, family), means, gamma)
  return w, gamma, info


def _check_gamma_traced(family: Family, means, gamma) -> None:
  """`_check_gamma` of traced values, with `checkify` (`checks=True`)."""
  table = jnp.reshape(means, (-1, means.shape[-1]))
  bad = ~(jnp.isfinite(gamma) & (gamma > 0)).reshape(-1)
  checkify.check(~jnp.any(bad), "the best arm of means {} cannot be told apart in " +
                 table.dtype.name + f" by the {family!r} family: Gamma(nu) = {{}} (T*(nu) "
                 "infinite); separate the best arm more", table[jnp.argmax(bad)],
                 jnp.reshape(gamma, (-1,))[jnp.argmax(bad)])


def _check_gamma(family: Family, means, gamma) -> None:
  """Raises ValueError where Gamma(nu) is not a positive number: a best arm whose
  gap is too small for the float dtype to resolve (0.5 and 0.500000001 for
  Bernoulli arms, whose divergence rounds to 0 even in float64), or an infinite
  variance; T*(nu) = 1 / Gamma(nu) would be infinite."""
  gam = np.atleast_1d(np.asarray(gamma, float))
  rows = np.asarray(means).reshape(-1, np.shape(means)[-1])
  for row, g in zip(rows, gam):
    if not (np.isfinite(g) and g > 0):
      raise ValueError(
          f"the best arm of means {row.tolist()} cannot be told apart in "
          f"{np.asarray(means).dtype.name} by the {family!r} family: Gamma(nu) = {float(g)!r} "
          "(T*(nu) infinite); separate the best arm more")


@functools.lru_cache(maxsize=256)
def _optimum(family: Family, means: tuple, dtype: str) -> tuple:
  del dtype  # a key only: the oracle computes in the default float dtype
  w, gamma = exact_solve(family, np.asarray(means))
  return tuple(float(x) for x in np.asarray(w)), float(gamma)


@functools.lru_cache(maxsize=256)
def _eps_optimum(family: Family, means: tuple, eps: float, dtype: str) -> tuple:
  del dtype  # a key only, as in _optimum
  sol = eps_solve(family, np.asarray(means), eps)
  return tuple(float(x) for x in np.asarray(sol.w)), float(sol.gamma)


def optimal(family: Family, means, eps: float = 0.0) -> tuple:
  """(w(nu), Gamma(nu)) of the exact oracle at one concrete instance, as Python floats;
  with eps > 0, (w*_eps(nu), Gamma_eps(nu)) of the eps-good oracle (`eps_solve`).

  Cached per (family, means, eps, default float dtype): the summaries of many
  simulations of one instance (a sweep over beta or delta) solve the oracle once.
  """
  means = tuple(float(m) for m in np.asarray(means, float).reshape(-1))
  if eps:
    return _eps_optimum(family, means, float(eps), str(jnp.result_type(float)))
  return _optimum(family, means, str(jnp.result_type(float)))


def beta_optimal_allocation(family: Union[Family, str], means: ArrayLike,
                            beta: ArrayLike):
  """Beta-optimal allocation: max Gamma(nu, w) over the simplex with w_{a*} = beta.

  Args:
    family: a `Family` or the name of a built-in one.
    means: [K] or [I, K] arm means, each instance with a unique best arm.
    beta: weight of the best arm in (0, 1); a scalar or one per instance.

  Returns:
    (w, gamma_beta): w [..., K] and gamma_beta [...] = Gamma_beta(nu), so that
    T*_beta(nu) = 1 / gamma_beta. Gamma_beta(nu) <= Gamma(nu), with equality at
    beta = w_{a*}(nu).

  Raises:
    ValueError: as `optimal_allocation`, and for a beta outside (0, 1).
  """
  family = _family(family)
  if isinstance(beta, jax.core.Tracer):
    raise TypeError("beta_optimal_allocation checks beta on the host and cannot take a "
                    "traced beta (it was called under jax.jit, jax.vmap or jax.grad); inside "
                    "traced code use jbai.oracle.exact_beta_solve")
  means = _means(family, means)
  b = np.asarray(beta, dtype=float)
  bad = b[~((b > 0) & (b < 1))]
  if bad.size:
    raise ValueError(f"beta must lie in (0, 1), got {bad.ravel()[0]!r}")
  return exact_beta_solve(family, means, jnp.asarray(b, means.dtype))


__all__ = ["METHODS", "EpsOracle", "OracleInfo", "beta_optimal_allocation", "budget_allocation",
           "budget_rate", "budget_solve", "reversed_family",
           "eps_gamma", "eps_optimal_allocation", "eps_solve", "exact_beta_solve",
           "exact_solve", "gamma_bounds", "optimal_allocation", "projected_solve",
           "relative_gap", "scale_by_simplex_geometry", "t_star_gradient",
           "t_star_log_gradient", "WarmSolution", "WarmStart",
           "warm_solve", "warm_start"]
