"""The likelihood-ratio estimators of a gradient from per-trial records (`monte_carlo`).

For a function f of a trial (its stopping time, whether its answer is wrong, a
run to a budget's simple regret), d/dtheta E[f] = E[f S_theta], S_theta the
trial's score (`jbai.core.estimate` derives it; `jbai.rollout` records it per
trial, at each delta's stopping time).

Two estimators of the gradient over n trials (`monte_carlo`). "score" uses
the whole score with a leave-one-out baseline as control variate,

  g = (1/n) sum_i (f_i - b_i) S_i,   b_i = (sum_{j != i} f_j) / (n - 1),

unbiased since b_i is independent of trial i. "causal", the default, uses for
E[tau] that {tau > t} depends only on the first t steps (so each step's score is
weighted by the steps that remain after it, not by tau), with control variates
for the state and for the noise of the later steps, regressed by cross-fitting
(docs/performance.md measures the gain); for P(error), f S_tau with the
same control variates. Each standard error is the standard deviation of the
per-trial terms over sqrt(n).
A run to a budget's simple regret (`simple_regret`) is estimated as P(error)
is, its gradient in the means adding the regret's pathwise part.
"""

from typing import Optional

import jax
import jax.numpy as jnp

from jbai.core.rollout import Rollout


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
