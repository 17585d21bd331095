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

Two estimators of the gradient over n trials (`monte_carlo`). "score" uses
the whole score with a leave-one-out baseline as control variate,

  g = (1/n) sum_i (f_i - b_i) S_i,   b_i = (sum_{j != i} f_j) / (n - 1),

unbiased since b_i is independent of trial i. "causal", the default, uses for
E[tau] that {tau > t} depends only on the first t steps (so each step's score is
weighted by the steps that remain after it, not by tau), with control variates
for the state and for the noise of the later steps, regressed by cross-fitting
(docs/performance.md measures the gain); for P(error), f S_tau with the
same control variates. Each standard error is the standard deviation of the
per-trial terms over sqrt(n). `estimate` returns the value and these
gradients with their standard errors, and makes `jax.grad` of the value return
g through a surrogate: value + g . (theta - stop_gradient(theta)), with
stop_gradient on g and on the simulation. So jax.grad, jax.jacobian and
jax.vmap work as usual; second derivatives (jax.hessian) are NaN, never the
silent 0 of a linear surrogate.

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
from jbai.core.assembly import assemble
from jbai.core.rollout import Rollout, rollout
from jbai.families.base import check_means

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


class Difference(NamedTuple):
  """Central finite differences with common random numbers, over n trials."""

  mean_tau: jax.Array       # [(D)] (E[tau](x + h) - E[tau](x - h)) / 2h
  mean_tau_se: jax.Array    # [(D)] standard error of the per-trial differences
  error_rate: jax.Array     # [(D)] the same for P(error)
  error_rate_se: jax.Array
  simulated_steps: jax.Array = None  # [] int, the steps of both runs together
  regret: jax.Array = None  # [(C)] the same for a run to a budget's simple regret
  regret_se: jax.Array = None


def likelihood_ratio(f: jax.Array, score: jax.Array, direct=0.0):
  """The leave-one-out likelihood-ratio estimate of d E[f] and its standard error.

  Args:
    f: [n, ...] per-trial values.
    score: [n, ..., P] per-trial scores (P entries per value; broadcast).
    direct: [n, ..., P] per-trial derivatives of f itself in the parameters (f's
      pathwise part: the simple regret's in the means), or 0.

  Returns:
    (g [..., P], se [..., P]).
  """
  n = f.shape[0]
  centred = n / (n - 1) * (f - jnp.mean(f, axis=0))  # f_i - b_i
  terms = centred[..., None] * score + direct
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


def simple_regret(means: jax.Array, answer: jax.Array, problem=None) -> tuple:
  """(r, dr): each trial's simple regret r = mu* - mu_J [n, (C)] for its answer J,
  and its derivative in the means e_{a*} - e_J [n, (C), K] (the pathwise part of
  the regret's gradient: a tie for the best arm, where mu* is not differentiable,
  is refused at the boundary). For a question whose answer is a set of arms
  (`problem`), answer holds [n, (C), K] masks and r is the problem's regret, dr
  its gradient in the means at each answer (an eps-good arm's is the best arm's)."""
  if problem is not None and not problem.arm:
    flat = answer.reshape((-1, answer.shape[-1]))
    r, dr = jax.vmap(jax.value_and_grad(problem.regret), (None, 0))(means, flat)
    return r.reshape(answer.shape[:-1]), dr.reshape(answer.shape)
  num_arms = means.shape[-1]
  gaps = jnp.max(means) - means
  one_hot = lambda arm: jax.nn.one_hot(arm, num_arms, dtype=means.dtype)
  return gaps[answer], one_hot(jnp.argmax(means)) - one_hot(answer)


def cross_fitted(y: jax.Array, cv: jax.Array):
  """The mean of y - c . cv with c regressed in the other half of the trials, and
  its standard error.

  Each cv_k has mean 0 (a sum of score increments times functions of the state
  before them), so y_i - c . cv_i has the mean of y for any c independent of trial
  i. Cross-fitting makes it so: the trials are split by parity, and each half uses
  the coefficients c = argmin sum (y_j - c . cv_j)^2 of the other half (least
  squares without intercept: E[(y - c . cv)^2] = Var(y - c . cv) + E[y]^2, so
  they minimise the variance), so the estimate is unbiased for any n. The
  standard error is that of the n terms (cross-fitting's usual one; the two
  halves' coefficients make the terms slightly dependent).

  Args:
    y: [n, ...] per-trial estimates.
    cv: [n, ..., F] per-trial control variates, each of mean 0.

  Returns:
    (g [...], se [...]).
  """
  n = y.shape[0]
  half = (jnp.arange(n) % 2).reshape((n,) + (1,) * (y.ndim - 1))
  scale = jnp.sqrt(jnp.mean(cv ** 2, axis=0)) + jnp.finfo(cv.dtype).tiny  # [..., F]
  z = cv / scale

  def fit(mask):
    """Ridge-stabilised least squares of y on z over the trials where mask holds."""
    m = mask[..., None].astype(z.dtype)
    gram = jnp.einsum("n...f,n...g->...fg", z * m, z)
    rhs = jnp.einsum("n...f,n...->...f", z * m, y)
    eye = jnp.eye(z.shape[-1], dtype=z.dtype)
    # A ridge at the dtype's resolution: the features can be nearly collinear.
    ridge = 100 * jnp.finfo(z.dtype).eps * (
        jnp.trace(gram, axis1=-2, axis2=-1)[..., None, None] + 1.0)
    return jnp.linalg.solve(gram + ridge * eye, rhs[..., None])[..., 0]

  c_odd, c_even = fit(half == 1), fit(half == 0)  # each applied to the other half
  c = jnp.where(half[..., None] == 0, c_odd, c_even)
  terms = y - jnp.sum(c * z, axis=-1)
  return jnp.mean(terms, axis=0), jnp.std(terms, axis=0, ddof=1) / jnp.sqrt(n)


ESTIMATORS = ("causal", "score")


def monte_carlo(trials: Rollout, scalar_delta: bool, dtype=None,
                estimator: str = "causal", regret: Optional[tuple] = None) -> dict:
  """Means, standard errors and likelihood-ratio gradients from per-trial records.

  Two estimators (both unbiased; every gradient comes with its standard error):

  "score": d E[f] = E[f S_tau], the trajectory's whole score times f, with the
    leave-one-out baseline of `likelihood_ratio`.
  "causal" (the default): for E[tau], tau = sum_{t >= 0} 1{tau > t} and the
    event {tau > t} depends only on the first t steps, so
    d E[tau] = sum_t E[1{tau > t} S_t] = E[sum_{t < tau} S_t]
             = E[sum_{s < tau} s_s (tau - s - 1)],
    each step's score increment s_s = S_{s+1} - S_s weighted by the steps that
    remain after it (S_t the score after t steps; the rule's choice and the reward
    of step s are in s_s). A baseline per step b(state_s) = sum_k c_k phi_k(state_s)
    subtracted from the steps to go adds sum_k c_k sum_{s < tau} s_s phi_k(state_s),
    of mean 0 since E[s_s | state_s] = 0; c is regressed by `cross_fitted`. For
    P(error), f S_tau with the same control variates (phi_0 = 1 gives the constant
    baseline c_0 S_tau). The features are those of `jbai.core.lane.features`.
    The remaining noise sum_t S_t D_t (D_t: the change in the expected remaining
    time that step t's reward and choice make) is regressed out by the
    future-noise columns sum_{t < tau} S_t u_t phi(state_t), u_t of mean 0 given
    the state (`jbai.core.lane._record_scores`); all N_CONTROLS columns enter the
    same cross-fitted regression.

  Args:
    trials: a `Rollout` with scores (`jbai.rollout`, or `jbai.simulate` with
      scores=True): tau, correct, reward_score, policy_score and, for "causal",
      causal_score, score_cv, causal_policy_score and policy_score_cv.
    scalar_delta: True when the arrays have no delta axis.
    dtype: float dtype of the results (default: that of reward_score).
    estimator: "causal" or "score".
    regret: a run to a budget's (r [n, (C)], dr [n, (C), K]) of `simple_regret`:
      then also the simple regret, estimated as P(error) is, whose gradient in the
      means adds the mean of dr.

  Returns:
    {"tau": (mean, se, grads, ses), "error": (...)} and, with `regret`, "regret":
    for E[tau], P(error) and the simple regret, the value [(D)], its standard
    error, and {"means": [(D), K], name: [(D), *P]} of gradients and of their
    standard errors.
  """
  if estimator not in ESTIMATORS:
    raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
  if trials.reward_score is None:
    raise ValueError("the trials have no scores: run them with scores=True")
  if estimator == "causal" and trials.causal_score is None:
    raise ValueError('estimator="causal" needs the causal records (causal_score, '
                     'score_cv) of a run with scores=True')
  dtype = dtype or jnp.asarray(trials.reward_score).dtype
  per_delta = lambda a: (jnp.asarray(a)[:, None] if scalar_delta else jnp.asarray(a)).astype(dtype)
  squeeze = (lambda a: a[0]) if scalar_delta else (lambda a: a)
  # Per parameter: the score [n, D, P], and for "causal" the causal score [n, D, P]
  # and the control variates [n, D, P, F].
  # A rule's parameter of shape P enters flattened ([n, D, (C,) prod P]) and leaves in
  # its shape.
  lead = 1 if scalar_delta else 2
  shapes = {k: jnp.shape(v)[lead:] for k, v in trials.policy_score.items()}

  def flat(a, kept=2):
    a = per_delta(a)
    return a.reshape(a.shape[:kept] + (-1,))

  scores = {"means": per_delta(trials.reward_score)}
  scores.update({k: flat(v) for k, v in trials.policy_score.items()})
  if estimator == "causal":
    causal = {"means": per_delta(trials.causal_score)}
    causal.update({k: flat(v) for k, v in trials.causal_policy_score.items()})
    cvs = {"means": jnp.swapaxes(per_delta(trials.score_cv), -1, -2)}
    cvs.update({k: jnp.swapaxes(flat(v, 3), -1, -2) for k, v in trials.policy_score_cv.items()})
  out = {}
  values = {"tau": (trials.tau, None), "error": (~jnp.asarray(trials.correct), None)}
  if regret is not None:
    values["regret"] = regret
  for label, (f, direct) in values.items():
    f = per_delta(f)
    value = jnp.mean(f, axis=0)
    se = jnp.std(f, axis=0, ddof=1) / jnp.sqrt(f.shape[0])
    grads, ses = {}, {}
    for name, score in scores.items():
      d = per_delta(direct) if direct is not None and name == "means" else 0.0
      if estimator == "score":
        g, g_se = likelihood_ratio(f, score, d)
      else:
        y = causal[name] if label == "tau" else f[..., None] * score + d
        g, g_se = cross_fitted(y, cvs[name])
      if name != "means":
        g, g_se = (a.reshape(a.shape[:-1] + shapes[name]) for a in (g, g_se))
      grads[name], ses[name] = g, g_se
    out[label] = (squeeze(value), squeeze(se), jax.tree.map(squeeze, grads),
                  jax.tree.map(squeeze, ses))
  return out


BIAS_SHARE = 4  # Richardson's runs at x +- 2h take one trial in BIAS_SHARE


def bias_trials(n_trials: int) -> int:
  """The trials of Richardson's runs at x +- 2h: the first ceil(n / BIAS_SHARE), at
  least 2 (and at most n)."""
  return min(n_trials, max(2, -(-n_trials // BIAS_SHARE)))


def richardson_terms(d_h: jax.Array, d_2h: jax.Array) -> jax.Array:
  """Per-trial terms of Richardson's extrapolation D(h) - (D(2h) - D(h)) / 3, from
  D(h) on n trials [n, ...] and D(2h) on the first m of them [m, ...].

  The correction, D(h)'s h^2 term, is weighted n / m on those m trials, so that
  the mean of the n terms is mean(D(h)) minus the correction's mean over the m.
  The standard deviation of the terms pools the two groups (their means differ by
  n / m times the h^2 term: slightly conservative)."""
  d_h, d_2h = jnp.asarray(d_h), jnp.asarray(d_2h)
  n, m = d_h.shape[0], d_2h.shape[0]
  return d_h.at[:m].add(-(n / m) * (d_2h - d_h[:m]) / 3)


def _check_points(family, rule, point, wrt, h, extrapolate: bool) -> None:
  """Every point x +- h (and x +- 2h with `extrapolate`) in its domain, before
  anything runs: refused naming the value typed and the step (a point outside is
  a value the user never typed, found seconds into the first runs otherwise)."""
  if not inputs.concrete(h):
    return
  name = wrt if isinstance(wrt, str) else f"means[{int(wrt)}]"
  for k in (1, -1, 2, -2) if extrapolate else (1, -1):
    means, params = point(k * h)
    at = params.get(wrt) if isinstance(wrt, str) else means[int(wrt)]
    if not inputs.concrete(at):
      return
    try:
      if isinstance(wrt, str):
        inputs.check_params(rule, params)
      else:
        check_means(family, means, means.dtype)
    except ValueError as e:
      sign = "+" if k > 0 else "-"
      step = f"{abs(k)}h" if abs(k) > 1 else "h"
      how = "Richardson's extrapolation takes" if extrapolate else "the central difference takes"
      raise ValueError(
          f"{name} {sign} {step} = {float(at):.6g} is outside the domain ({e}): "
          f"{how} {name} +- {'2h' if extrapolate else 'h'} with h = {float(h):g}; take a "
          f"smaller h") from None


def finite_difference(key: jax.Array, family, means, rule, delta=None, n_trials: int = None,
                      wrt=None, h: float = None, threshold=None, max_steps=None, *,
                      params: Optional[dict] = None,
                      lanes: Optional[int] = None, extrapolate: bool = False,
                      checks: bool = False, budget: Optional[int] = None,
                      checkpoints=None, problem=None) -> Difference:
  """Central finite differences of E[tau] and P(error), with common random numbers.

  Both points run with the same key, so trial j sees the same random numbers at
  x + h and x - h, and the per-trial differences have a small variance where the
  trial depends smoothly on x (Gaussian rewards, TCB's eps); the estimate is of
  D(h) = (E(x + h) - E(x - h)) / 2h, whose bias in the derivative is
  E'''(x) h^2 / 6 + O(h^4).

  With `extrapolate`, Richardson's extrapolation D(h) - (D(2h) - D(h)) / 3 = (4 D(h)
  - D(2h)) / 3: the h^2 term cancels, and the bias is O(h^4). Trial j of a run
  with the same key is the same at any n_trials, so the runs at x +- 2h take only
  the first m = ceil(n / BIAS_SHARE) trials (`bias_trials`): the correction (D(2h) - D(h)) / 3 is
  estimated on those m (its per-trial variance is about 6% of D(h)'s, since D(h)
  and D(2h) share their randomness) and D(h) on all n. In a top-two rule's beta at
  h = 0.1, D(h)'s bias is about 4% of the gradient, larger than its standard error
  beyond a few thousand trials; the extrapolation removes it for 1.9 times D(h)'s
  variance at equal steps (2.8 with the correction on all n), a fourteenth of the
  causal likelihood-ratio estimator's (benchmarks/beta_variance.py).

  Args:
    key: PRNG key.
    family: a `Family` or a built-in name.
    means: [K] arm means.
    rule: a `Rule` or a registered name.
    delta: a confidence level or a [D] vector; None (or left out, with the
      arguments after it by name) with `budget`.
    n_trials: number of trials (static, >= 2; required).
    wrt: an arm index (differentiate in that arm's mean) or the name of a
      runtime parameter of the rule ("eps", "beta"); required.
    h: the half-step; required.
    threshold: a `Threshold` or a name, or a `jbai.stops.Stop`; None: the rule's
      own stop, else the GLLR with gk16.
    max_steps: cap on a trial's length (None: 10^6).
    params: the rule's runtime parameters {name: value}.
    lanes: size of the lane pool (static).
    extrapolate: Richardson's extrapolation from x +- h (n_trials) and x +- 2h
      (the first `bias_trials(n_trials)` of them; `richardson_terms`).
    checks: check traced values too, each point x +- h (and x +- 2h) included,
      with `jax.experimental.checkify` (as `rollout`'s `checks`). Static.
    budget: a run to a fixed budget (`estimate`'s): P(error) and the simple
      regret at each checkpoint.
    checkpoints: with `budget`, `rollout`'s.
    problem: a question beyond the best arm (`estimate`'s).

  Returns:
    A `Difference`.
  """
  missing = [name for name, value in (("wrt", wrt), ("h", h)) if value is None]
  if missing:
    raise TypeError(f"finite_difference needs {missing[0]} (an arm index or a parameter "
                    "name, and the half-step h)")
  family, rule, threshold, means = _check(family, rule, threshold, means, n_trials, budget,
                                          problem)
  inputs.check_positive("h", h)  # h = 0 would divide by 0: NaN
  params = inputs.check_params(rule, params)
  if isinstance(wrt, str):
    inputs.check_runtime(rule, [wrt])
    base = params.get(wrt, rule.init(means.shape[-1])._asdict()[wrt])
    point = lambda step: (means, dict(params, **{wrt: base + step}))
  else:
    arm = int(wrt)
    if not 0 <= arm < means.shape[-1]:
      raise ValueError(f"wrt must be an arm index in [0, {means.shape[-1]}) or a "
                       f"parameter name, got {wrt!r}")
    point = lambda step: (means.at[arm].add(step), params)

  _check_points(family, rule, point, wrt, h, extrapolate)

  def run(step, trials):
    m, p = point(step)
    return m, rollout(key, family, m, rule, delta, trials, threshold, max_steps, params=p,
                      lanes=lanes, scores=False, checks=checks, budget=budget,
                      checkpoints=checkpoints, problem=problem)

  runs = {s * h: run(s * h, n_trials) for s in (1, -1)}
  if extrapolate:
    runs.update({s * 2 * h: run(s * 2 * h, bias_trials(n_trials)) for s in (1, -1)})

  def difference(f):
    value = lambda x: f(*runs[x]).astype(means.dtype)
    central = lambda x: (value(x) - value(-x)) / (2 * x)
    d = richardson_terms(central(h), central(2 * h)) if extrapolate else central(h)
    return jnp.mean(d, axis=0), jnp.std(d, axis=0, ddof=1) / jnp.sqrt(n_trials)

  tau, tau_se = difference(lambda m, r: r.tau)
  err, err_se = difference(lambda m, r: ~r.correct)
  reg, reg_se = (None, None) if budget is None else difference(
      lambda m, r: simple_regret(m, r.answer, problem)[0])
  steps = sum(jnp.sum(r.steps) for _, r in runs.values())
  return Difference(mean_tau=tau, mean_tau_se=tau_se, error_rate=err, error_rate_se=err_se,
                    simulated_steps=steps, regret=reg, regret_se=reg_se)
