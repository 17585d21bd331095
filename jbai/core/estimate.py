"""Monte-Carlo estimates of E[tau] and P(error) that `jax.grad` differentiates.

A BAI trial is a stopped trajectory: at each step the rule picks an arm A_t (at
random, for some rules) and the arm returns a reward X_t ~ pi(. | mu_{A_t}). Its
likelihood is prod_{t < tau} pi(X_t | mu_{A_t}) P(choice_t | history), and for any
function f of the trajectory (its stopping time, or whether its answer is wrong)

  d/dtheta E[f] = E[f S_theta],   S_theta = d/dtheta log(likelihood),

the likelihood-ratio (score-function) identity, valid for stopping times with
E[tau] < inf. For the means, S_mu_i = sum_{t < tau, A_t = i} d/dmu_i log pi(X_t | mu_i);
for a rule's runtime parameter (a top-two rule's beta), the rule's own score of
its coin flips (`Rule.score`). `jbai.rollout` records both per trial, at each
delta's stopping time.

Two estimators of the gradient over n trials, "causal" (the default) and
"score", each with its standard error (`jbai.core.estimators.monte_carlo`).
`estimate` returns the value and these
gradients with their standard errors, and makes `jax.grad` of the value return
g through a surrogate: value + g . (theta - stop_gradient(theta)), with
stop_gradient on g and on the simulation. So jax.grad, jax.jacobian and
jax.vmap work as usual; second derivatives (jax.hessian) are NaN, never the
silent 0 of a linear surrogate.

Parameters that the rule chooses deterministically (TCB and ITCB's eps), delta
and max_steps have no likelihood-ratio gradient: `jax.grad` returns NaN for
them, never a silent 0. `finite_difference` (`jbai.core.finite_differences`)
differentiates them (and the means) by central differences with common random
numbers (the same key at both points).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai.core import inputs
from jbai.core.assembly import assemble
from jbai.core.estimators import ESTIMATORS, monte_carlo, simple_regret
from jbai.core.rollout import Rollout, rollout

sg = jax.lax.stop_gradient


class Estimate(NamedTuple):
  """Monte-Carlo estimates over n trials; (D) is the delta axis (absent for a
  scalar delta), or in a run to a budget the checkpoints' (C) (absent without
  checkpoints: T alone). `mean_tau`, `error_rate` and `regret` carry
  likelihood-ratio derivatives for `jax.grad`; the grad_* fields give the same
  gradients directly, keyed by "means" ([(D), K]) and by each scored runtime
  parameter of the rule ([(D)]). The regret fields are a run to a budget's (None
  for a run that stops). With [I, K] means every field but `trials` has a
  leading [I] axis (instance i's estimates and gradients in row i), and `trials`
  is `rollout`'s [I, n, ...]."""

  mean_tau: jax.Array       # [(D)] E[tau] (trials at the cap enter at the cap)
  mean_tau_se: jax.Array    # [(D)] its standard error
  error_rate: jax.Array     # [(D)] P(wrong answer or cap reached)
  error_rate_se: jax.Array  # [(D)]
  grad_mean_tau: dict       # {"means": [(D), K], name: [(D), *shape of the parameter]}
  grad_mean_tau_se: dict
  grad_error_rate: dict
  grad_error_rate_se: dict
  trials: Rollout           # the per-trial results
  regret: jax.Array = None  # [(C)] a run to a budget's simple regret E[mu* - mu_J] at t_c
  regret_se: jax.Array = None
  grad_regret: dict = None  # its gradients, likelihood ratio plus d(mu* - mu_J)/dmu
  grad_regret_se: dict = None


@jax.custom_jvp
def _no_derivative(x):
  """0, whose derivative in x is NaN: marks an input jbai cannot differentiate."""
  del x
  return jnp.zeros(())


@_no_derivative.defjvp
def _no_derivative_jvp(primals, tangents):
  del primals
  return jnp.zeros(()), jnp.nan * jnp.sum(tangents[0])


@jax.custom_jvp
def _first_order_only(x):
  """0, whose first derivative in x is 0 and whose second derivative is NaN: the
  surrogate is linear in its inputs, so its second derivatives would be a silent
  0 (a likelihood-ratio Hessian needs second-order scores, which jbai does not
  record)."""
  del x
  return jnp.zeros(())


@_first_order_only.defjvp
def _first_order_only_jvp(primals, tangents):
  (x,), (dx,) = primals, tangents
  return jnp.zeros(()), _no_derivative(x) * jnp.sum(dx)


def _check(family, rule, threshold, means, n_trials, budget=None, problem=None,
           batch: bool = False):
  if budget is None:
    family, rule, threshold, _ = assemble(family, rule, threshold, problem)
  else:  # rollout assembles the run to a budget, and refuses a threshold
    family, rule = inputs.as_family(family), inputs.as_rule(rule)
  means = jnp.asarray(means, jnp.zeros(()).dtype)
  if means.ndim != 1 and not (batch and means.ndim == 2):
    shapes = "[K] or [I, K]" if batch else "[K] (vmap for a batch)"
    raise ValueError(f"means must have shape {shapes}, got {means.shape}")
  inputs.check_trials(n_trials, minimum=2)
  return family, rule, threshold, means


def estimate(key: jax.Array, family, means, rule, delta=None, n_trials: int = None,
             threshold=None, max_steps=None, *, params: Optional[dict] = None,
             lanes: Optional[int] = None, estimator: str = "causal",
             checks: bool = False, budget: Optional[int] = None,
             checkpoints=None, problem=None) -> Estimate:
  """E[tau] and P(error) of a BAI algorithm, and their gradients, by simulation.

  Pure: runs under the caller's jax.jit and jax.vmap (family, rule, threshold,
  n_trials and lanes static). `jax.grad` of `mean_tau` or `error_rate` with
  respect to `means` or to a scored runtime parameter in `params` (a top-two
  rule's beta) is the likelihood-ratio estimate of the module docstring, equal to
  the `grad_*` fields.

  Args:
    key: PRNG key.
    family: a `Family` or a built-in name.
    means: [K] arm means, or [I, K] for I instances (`rollout`'s trials of
      each; every field of the result then has a leading [I] axis, and the
      gradient in the means of instance i's value is in row i).
    rule: a `Rule` or a registered name.
    delta: a confidence level or a [D] vector (one trajectory per trial serves all); None
      (or left out, with n_trials by name) with `budget`.
    n_trials: number of trials per instance (static, >= 2; required).
    threshold: a `Threshold` or a name, or a `jbai.stops.Stop`; None: the rule's
      own stop, else the GLLR with gk16.
    max_steps: cap on a trial's length (None: 10^6); trials at the cap count as
      errors and enter E[tau] at the cap (the estimate is then of E[min(tau, cap)]).
    params: the rule's runtime parameters {name: value}, e.g. {"beta": 0.5}.
    lanes: size of the lane pool (static).
    estimator: "causal" (the default: each step's score weighted by the steps
      that remain after it, with state-dependent baselines regressed by
      cross-fitting) or "score" (the whole score times f, leave-one-out
      baseline); see `monte_carlo`. Static.
    checks: check traced values too, with `jax.experimental.checkify` (as
      `rollout`'s `checks`; `jbai.checks`). Static.
    budget: a run to a fixed budget T instead of a stop (delta, threshold and
      max_steps None), as `rollout`'s: P(error) and the simple regret E[mu* -
      mu_J] of the recommendation J after t_c rewards, and their gradients, at
      each checkpoint. The regret's gradient in the means adds its pathwise part
      E[e_{a*} - e_J] to the likelihood ratio.
    checkpoints: with `budget`, `rollout`'s (None: T alone, no (C) axis).
    problem: a question beyond the best arm (`jbai.problems.top_m(m)`,
      `above(level)`), as `rollout`'s: tau is when its GLLR stops, an error a wrong
      answer set; with `budget`, the regret is the problem's
      (`jbai.problems.Problem.regret`), its pathwise part that regret's gradient
      in the means at the trial's answer. Static.

  Returns:
    An `Estimate`.

  Example:
    >>> import jax, jbai
    >>> fam = jbai.families.gaussian()
    >>> means = jax.numpy.array([1.0, 0.5, 0.0])
    >>> g = jax.grad(lambda m: jbai.estimate(jax.random.key(0), fam, m, "tcb", 0.1,
    ...                                      n_trials=256).mean_tau)(means)
    >>> g.shape
    (3,)
  """
  family, rule, threshold, means = _check(family, rule, threshold, means, n_trials, budget,
                                          problem, batch=True)
  batch = means.ndim == 2
  if estimator not in ESTIMATORS:
    raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
  params = dict(params or {})  # checked by rollout (beta in (0, 1), eps > 0 where concrete)
  # delta as given (a Python 1e-300 would round to 0 in float32): rollout carries log(1/delta)
  trials = rollout(key, family, sg(means), rule, sg(delta) if isinstance(delta, jax.Array)
                   else delta, n_trials, threshold, max_steps,
                   params=jax.tree.map(sg, params), lanes=lanes, scores=True, checks=checks,
                   budget=budget, checkpoints=checkpoints, problem=problem)
  scalar = np.ndim(delta) == 0 if budget is None else checkpoints is None

  def moments_of(trials, means):  # one instance's trials [n, ...]
    regret = None if budget is None else simple_regret(means, trials.answer, problem)
    return monte_carlo(trials, scalar_delta=scalar, dtype=means.dtype, estimator=estimator,
                       regret=regret)

  moments = (jax.vmap(moments_of) if batch else moments_of)(trials, sg(means))
  dtype = means.dtype
  inputs = {"means": means}
  inputs.update({k: jnp.asarray(v, dtype) for k, v in params.items()
                 if k in trials.policy_score})
  undifferentiable = [jnp.asarray(v, dtype) for v in (delta, max_steps) if v is not None]
  undifferentiable += [jnp.asarray(v, dtype) for k, v in params.items()
                       if k not in trials.policy_score]

  def surrogate(value, grads):
    """value, whose derivative in each input is its likelihood-ratio gradient."""
    out = sg(value)
    for name, x in inputs.items():
      tangent = x - sg(x)
      g = sg(grads[name])  # [(I), (D), *shape of x]
      if batch and name == "means":  # [I, (D), K] against [I, K]: row by row
        tangent = tangent.reshape(tangent.shape[:1] + (1,) * (g.ndim - 2) + tangent.shape[1:])
        out = out + jnp.sum(g * tangent, axis=-1)
      else:
        out = out + jnp.sum(g * tangent, axis=tuple(range(g.ndim - tangent.ndim, g.ndim)))
      out = out + _first_order_only(x)
    for x in undifferentiable:
      out = out + _no_derivative(x)
    return out

  tau, tau_se, g_tau, g_tau_se = moments["tau"]
  err, err_se, g_err, g_err_se = moments["error"]
  reg, reg_se, g_reg, g_reg_se = moments.get("regret", (None,) * 4)
  return Estimate(mean_tau=surrogate(tau, g_tau), mean_tau_se=tau_se,
                  error_rate=surrogate(err, g_err), error_rate_se=err_se,
                  grad_mean_tau=g_tau, grad_mean_tau_se=g_tau_se, grad_error_rate=g_err,
                  grad_error_rate_se=g_err_se, trials=trials,
                  regret=None if reg is None else surrogate(reg, g_reg), regret_se=reg_se,
                  grad_regret=g_reg, grad_regret_se=g_reg_se)


# The checks that `estimate` and `finite_difference` (jbai.core.finite_differences) share.
check_arguments = _check
