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

The estimate over n trials uses a leave-one-out baseline as control variate,

  g = (1/n) sum_i (f_i - b_i) S_i,   b_i = (sum_{j != i} f_j) / (n - 1),

unbiased since b_i is independent of trial i; its standard error is the standard
deviation of the terms over sqrt(n). `estimate` returns the value and these
gradients with their standard errors, and makes `jax.grad` of the value return
g through a surrogate: value + g . (theta - stop_gradient(theta)), with
stop_gradient on g and on the simulation. So jax.grad, jax.jacobian and
jax.vmap work as usual (second derivatives do not: the surrogate is linear).

Parameters that the rule chooses deterministically (TCB and ITCB's eps), delta
and max_steps have no likelihood-ratio gradient: `jax.grad` returns NaN for
them, never a silent 0. `finite_difference` differentiates them (and the means)
by central differences with common random numbers (the same key at both points).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai.core import inputs
from jbai.core.rollout import Rollout, rollout

sg = jax.lax.stop_gradient


class Estimate(NamedTuple):
  """Monte-Carlo estimates over n trials; (D) is the delta axis (absent for a
  scalar delta). `mean_tau` and `error_rate` carry likelihood-ratio derivatives
  for `jax.grad`; the grad_* fields give the same gradients directly, keyed by
  "means" ([(D), K]) and by each scored runtime parameter of the rule ([(D)])."""

  mean_tau: jax.Array       # [(D)] E[tau] (trials at the cap enter at the cap)
  mean_tau_se: jax.Array    # [(D)] its standard error
  error_rate: jax.Array     # [(D)] P(wrong answer or cap reached)
  error_rate_se: jax.Array  # [(D)]
  grad_mean_tau: dict       # {"means": [(D), K], name: [(D)]}
  grad_mean_tau_se: dict
  grad_error_rate: dict
  grad_error_rate_se: dict
  trials: Rollout           # the per-trial results


class Difference(NamedTuple):
  """Central finite differences with common random numbers, over n trials."""

  mean_tau: jax.Array       # [(D)] (E[tau](x + h) - E[tau](x - h)) / 2h
  mean_tau_se: jax.Array    # [(D)] standard error of the per-trial differences
  error_rate: jax.Array     # [(D)] the same for P(error)
  error_rate_se: jax.Array


def likelihood_ratio(f: jax.Array, score: jax.Array):
  """The leave-one-out likelihood-ratio estimate of d E[f] and its standard error.

  Args:
    f: [n, ...] per-trial values.
    score: [n, ..., P] per-trial scores (P entries per value; broadcast).

  Returns:
    (g [..., P], se [..., P]).
  """
  n = f.shape[0]
  centred = n / (n - 1) * (f - jnp.mean(f, axis=0))  # f_i - b_i
  terms = centred[..., None] * score
  return jnp.mean(terms, axis=0), jnp.std(terms, axis=0, ddof=1) / jnp.sqrt(n)


@jax.custom_jvp
def _no_derivative(x):
  """0, whose derivative in x is NaN: marks an input jbai cannot differentiate."""
  del x
  return jnp.zeros(())


@_no_derivative.defjvp
def _no_derivative_jvp(primals, tangents):
  del primals
  return jnp.zeros(()), jnp.nan * jnp.sum(tangents[0])


def _check(family, rule, threshold, means, n_trials):
  family, rule, threshold = inputs.resolve(family, rule, threshold)
  means = jnp.asarray(means, jnp.zeros(()).dtype)
  if means.ndim != 1:
    raise ValueError(f"means must have shape [K] (vmap for a batch), got {means.shape}")
  inputs.check_trials(n_trials, minimum=2)
  return family, rule, threshold, means


def estimate(key: jax.Array, family, means, rule, delta, n_trials: int,
             threshold="gk16", max_steps=1_000_000, *, params: Optional[dict] = None,
             lanes: Optional[int] = None) -> Estimate:
  """E[tau] and P(error) of a BAI algorithm, and their gradients, by simulation.

  Pure: runs under the caller's jax.jit and jax.vmap (family, rule, threshold,
  n_trials and lanes static). `jax.grad` of `mean_tau` or `error_rate` with
  respect to `means` or to a scored runtime parameter in `params` (a top-two
  rule's beta) is the likelihood-ratio estimate of the module docstring, equal to
  the `grad_*` fields.

  Args:
    key: PRNG key.
    family: a `Family` or a built-in name.
    means: [K] arm means.
    rule: a `Rule` or a registered name.
    delta: a confidence level or a [D] vector (one trajectory per trial serves all).
    n_trials: number of trials (static, >= 2).
    threshold: a `Threshold` or a name.
    max_steps: cap on a trial's length; trials at the cap count as errors and
      enter E[tau] at the cap (the estimate is then of E[min(tau, cap)]).
    params: the rule's runtime parameters {name: value}, e.g. {"beta": 0.5}.
    lanes: size of the lane pool (static).

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
  family, rule, threshold, means = _check(family, rule, threshold, means, n_trials)
  params = dict(params or {})
  trials = rollout(key, family, sg(means), rule, sg(jnp.asarray(delta)), n_trials,
                          threshold, max_steps, params=jax.tree.map(sg, params),
                          lanes=lanes, scores=True)
  moments = monte_carlo(trials.tau, trials.correct, trials.reward_score,
                        trials.policy_score, scalar_delta=np.ndim(delta) == 0,
                        dtype=means.dtype)
  dtype = means.dtype
  inputs = {"means": means}
  inputs.update({k: jnp.asarray(v, dtype) for k, v in params.items()
                 if k in trials.policy_score})
  undifferentiable = [jnp.asarray(delta, dtype), jnp.asarray(max_steps, dtype)]
  undifferentiable += [jnp.asarray(v, dtype) for k, v in params.items()
                       if k not in trials.policy_score]

  def surrogate(value, grads):
    """value, whose derivative in each input is its likelihood-ratio gradient."""
    out = sg(value)
    for name, x in inputs.items():
      tangent = x - sg(x)
      out = out + (sg(grads[name]) @ tangent if name == "means" else sg(grads[name]) * tangent)
    for x in undifferentiable:
      out = out + _no_derivative(x)
    return out

  tau, tau_se, g_tau, g_tau_se = moments["tau"]
  err, err_se, g_err, g_err_se = moments["error"]
  return Estimate(mean_tau=surrogate(tau, g_tau), mean_tau_se=tau_se,
                  error_rate=surrogate(err, g_err), error_rate_se=err_se,
                  grad_mean_tau=g_tau, grad_mean_tau_se=g_tau_se, grad_error_rate=g_err,
                  grad_error_rate_se=g_err_se, trials=trials)


def monte_carlo(tau, correct, reward_score, policy_score, scalar_delta: bool,
                dtype=None) -> dict:
  """Means, standard errors and likelihood-ratio gradients from per-trial records.

  Args:
    tau: [n, (D)] stopping times (of `jbai.rollout`, or `jbai.simulate` with scores).
    correct: [n, (D)] bool.
    reward_score: [n, (D), K] reward scores.
    policy_score: {name: [n, (D)]} the rule's scores.
    scalar_delta: True when the arrays have no delta axis.
    dtype: float dtype of the results (default: that of reward_score).

  Returns:
    {"tau": (mean, se, grads, ses), "error": (...)}: for E[tau] and P(error), the
    value [(D)], its standard error, and {"means": [(D), K], name: [(D)]} of
    gradients and of their standard errors.
  """
  dtype = dtype or jnp.asarray(reward_score).dtype
  per_delta = lambda a: jnp.asarray(a)[:, None] if scalar_delta else jnp.asarray(a)
  squeeze = (lambda a: a[0]) if scalar_delta else (lambda a: a)
  scores = {"means": per_delta(reward_score).astype(dtype)}
  scores.update({k: per_delta(v).astype(dtype)[..., None] for k, v in policy_score.items()})
  out = {}
  for label, f in (("tau", tau), ("error", ~jnp.asarray(correct))):
    f = per_delta(f).astype(dtype)
    value = jnp.mean(f, axis=0)
    se = jnp.std(f, axis=0, ddof=1) / jnp.sqrt(f.shape[0])
    grads, ses = {}, {}
    for name, score in scores.items():
      g, g_se = likelihood_ratio(f, score)
      grads[name], ses[name] = (g, g_se) if name == "means" else (g[..., 0], g_se[..., 0])
    out[label] = (squeeze(value), squeeze(se), jax.tree.map(squeeze, grads),
                  jax.tree.map(squeeze, ses))
  return out


def finite_difference(key: jax.Array, family, means, rule, delta, n_trials: int,
                      wrt, h: float, threshold="gk16", max_steps=1_000_000, *,
                      params: Optional[dict] = None,
                      lanes: Optional[int] = None) -> Difference:
  """Central finite differences of E[tau] and P(error), with common random numbers.

  Both points run with the same key, so trial j sees the same random numbers at
  x + h and x - h, and the per-trial differences have a small variance where the
  trial depends smoothly on x (Gaussian rewards, TCB's eps); the estimate is of
  (E(x + h) - E(x - h)) / 2h, whose bias in the derivative is O(h^2).

  Args:
    key: PRNG key.
    family: a `Family` or a built-in name.
    means: [K] arm means.
    rule: a `Rule` or a registered name.
    delta: a confidence level or a [D] vector.
    n_trials: number of trials (static, >= 2).
    wrt: an arm index (differentiate in that arm's mean) or the name of a
      runtime parameter of the rule ("eps", "beta").
    h: the half-step.
    threshold: a `Threshold` or a name.
    max_steps: cap on a trial's length.
    params: the rule's runtime parameters {name: value}.
    lanes: size of the lane pool (static).

  Returns:
    A `Difference`.
  """
  family, rule, threshold, means = _check(family, rule, threshold, means, n_trials)
  params = dict(params or {})
  if isinstance(wrt, str):
    inputs.check_runtime(rule, [wrt])
    base = params.get(wrt, rule.init(means.shape[-1])._asdict()[wrt])
    points = [(means, dict(params, **{wrt: base + s * h})) for s in (1, -1)]
  else:
    arm = int(wrt)
    if not 0 <= arm < means.shape[-1]:
      raise ValueError(f"wrt must be an arm index in [0, {means.shape[-1]}) or a "
                       f"parameter name, got {wrt!r}")
    points = [(means.at[arm].add(s * h), params) for s in (1, -1)]
  runs = [rollout(key, family, m, rule, delta, n_trials, threshold, max_steps,
                         params=p, lanes=lanes, scores=False) for m, p in points]

  def difference(f):
    d = (f(runs[0]).astype(means.dtype) - f(runs[1]).astype(means.dtype)) / (2 * h)
    return jnp.mean(d, axis=0), jnp.std(d, axis=0, ddof=1) / jnp.sqrt(d.shape[0])

  tau, tau_se = difference(lambda r: r.tau)
  err, err_se = difference(lambda r: ~r.correct)
  return Difference(mean_tau=tau, mean_tau_se=tau_se, error_rate=err, error_rate_se=err_se)
