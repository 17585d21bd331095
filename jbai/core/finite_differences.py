"""Central finite differences of E[tau], P(error) and the simple regret.

Parameters that the rule chooses deterministically (TCB and ITCB's eps), delta
and max_steps have no likelihood-ratio gradient (`jbai.core.estimate`):
`finite_difference` differentiates them (and the means) by central differences
with common random numbers, the same key at x + h and x - h, so that trial j
sees the same random numbers at both points. With `extrapolate`, Richardson's
extrapolation from x +- h and x +- 2h cancels the h^2 term of the bias, its
runs at x +- 2h on the first trials alone (`bias_trials`, `richardson_terms`).
Every point is checked in its domain before anything runs.
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jbai.core import inputs
from jbai.core.estimate import check_arguments
from jbai.core.estimators import simple_regret
from jbai.core.rollout import rollout
from jbai.families.base import check_means


class Difference(NamedTuple):
  """Central finite differences with common random numbers, over n trials."""

  mean_tau: jax.Array       # [(D)] (E[tau](x + h) - E[tau](x - h)) / 2h
  mean_tau_se: jax.Array    # [(D)] standard error of the per-trial differences
  error_rate: jax.Array     # [(D)] the same for P(error)
  error_rate_se: jax.Array
  simulated_steps: jax.Array = None  # [] int, the steps of both runs together
  regret: jax.Array = None  # [(C)] the same for a run to a budget's simple regret
  regret_se: jax.Array = None


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
  family, rule, threshold, means = check_arguments(family, rule, threshold, means, n_trials,
                                                   budget, problem)
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
