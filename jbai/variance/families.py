"""Gaussian arms with a standard deviation per arm, as families the engine runs.

Two models (issue 76), each a `jbai.families.Family` whose costs and oracle come
through its hooks (`Family.pair_costs`, `Family.solve`, `Family.sample_arm`), so
that the rules that take their costs from `jbai.transport.pair_costs` (TCB, ITCB,
the top-two rules' TC and TCI challengers, best challenger), the GLLR stop and
the summaries' T* read them unchanged:

* `known_sigma(sigma)`, "gaussian-het": rewards N(mu_a, sigma_a^2) with sigma
  told. Pair cost (mu_a - mu_b)_+^2 / (2 (sigma_a^2 / w_a + sigma_b^2 / w_b))
  (`jbai.variance.costs.gaussian_cost`), oracle `jbai.variance.solve` (one
  bisection). Its GLLR is the known-variance one, and `kk`'s Gaussian calibration
  (Jourdan et al. 2022) holds arm by arm, each deviation normalised by its own
  sigma. Track-and-Stop runs through `solve`.
* `unknown_sigma(sigma, glr)`, "gaussian-uv" or "gaussian-ev": rewards drawn with
  the true `sigma`, which the rule and the stop never read. A trial keeps
  (sum x, sum x^2, n) per arm (`stat`): the variances are read from the
  statistics alone, since the weights a rule hands the costs are not always the
  counts (TCB's look-ahead moves eps of them), and stats[..., 2] is the count
  (exact in float32 to 2^24 rewards of an arm). The costs are the EV-GLR's
  (glr="ev", the empirical variances plugged into the known-variance cost) or the
  unknown-variance GLR's (glr="uv", `uv_cost`), with the moments and the
  zero-variance policy of `jbai.variance.moments` (an arm with fewer than two
  rewards has no variance, and every cost involving it is 0). Its `solve` is the
  truth's oracle at the true sigma (T*_uv for "uv"; for "ev" T*_known, the
  complexity of the costs its rules balance), read by the summaries and by the
  check that the best arm can be told apart, never by a rule: a rule that calls
  an oracle on the empirical means (Track-and-Stop, best challenger) would read
  the true sigma, and is refused (`refusal`). The model has no KL in the mean
  alone: `kl`, `fisher` and `log_density` raise a one-line ValueError, which
  refuses every rule that reads them (found by tracing, `jbai.core.inputs`).

Rules on the unknown-variance model (`RULES`): tcb, itcb, ebtc, ebtci, uniform, and
at a budget sequential-halving and successive-rejects (they read the means alone).
Initial pulls: no statistic has evidence before two rewards of each arm of a
pair (Jourdan, Degenne & Kaufmann, ALT 2023, initialise with two pulls of each
arm). TCB, ITCB and EB-TC's forced exploration (some T_t(i) <= ceil(sqrt(t/K))
pulls the least-sampled arm) gives every arm its second reward by step 2K, as
the paper's initialisation; EB-TCI pulls each arm once, and then its challenger
argmin_j W_t(L, j) + log T_t(j) takes an arm with one reward (cost 0, log 1 = 0)
over any other until each has two.
"""

import jax
import jax.numpy as jnp
import numpy as np

from jbai.builders import cached
from jbai.families.base import Family, sample_mean
from jbai.random import posteriors, samplers
from jbai.variance.costs import pair_costs
from jbai.variance.moments import check_floor, moments
from jbai.variance.oracle import solve
from jbai.variance.uv_oracle import solve_uv

KNOWN = "gaussian-het"
UNKNOWN = {"ev": "gaussian-ev", "uv": "gaussian-uv"}
RULES = ("tcb", "itcb", "ebtc", "ebtci", "uniform", "sequential-halving",
         "successive-rejects")  # run on the unknown-variance model


def check_sigma(sigma, num_arms=None) -> tuple:
  """sigma as a tuple of floats > 0 (one per arm, `num_arms` of them where given);
  ValueError naming a bad value."""
  values = np.atleast_1d(np.asarray(sigma, float))
  if values.ndim != 1 or values.size == 0:
    raise ValueError(f"sigma must be a list of standard deviations, got {sigma!r}")
  bad = values[~(np.isfinite(values) & (values > 0))]
  if bad.size:
    raise ValueError(f"sigma must be finite and > 0, got {float(bad[0])!r} "
                     f"(sigma {values.tolist()})")
  if num_arms is not None and values.size not in (1, num_arms):
    raise ValueError(f"sigma has {values.size} entries for {num_arms} arms: "
                     f"{values.tolist()}")
  return tuple(float(s) for s in values)


def _no_kl(name):
  def refuse(*args):
    del args
    raise ValueError(f"the {name!r} model has a variance per arm and no KL in the mean "
                     f"alone: a rule or stop must take its costs through "
                     f"jbai.transport.pair_costs")
  return refuse


def _samplers(sigma):
  """(sample, sample_arm) with sigma [K] per arm: a standard normal draw, scaled by
  the arm's sigma (the bits of `jbai.families.gaussian` where the sigmas are equal)."""

  def sample(key, means):  # means [..., K]
    means = jnp.asarray(means)
    return means + jnp.asarray(sigma, means.dtype) * jax.random.normal(key, means.shape,
                                                                       means.dtype)

  def sample_arm(key, means, arm):
    scale = jnp.asarray(sigma, means.dtype)[arm]
    return means[arm] + scale * jax.random.normal(key, (), means.dtype)

  return sample, sample_arm


@cached
def known_sigma(sigma: tuple, lo: float = -1e4, hi: float = 1e4) -> Family:
  """Gaussian arms N(mu_a, sigma_a^2) with known per-arm sigma (module docstring).

  Args:
    sigma: one standard deviation > 0 per arm (a tuple, so that the family hashes).
    lo, hi: the mean space Theta.

  Example:
    >>> import jax.numpy as jnp
    >>> fam = known_sigma((1.0, 2.0))
    >>> round(float(fam.pair_costs(jnp.array([1.0, 1.0]), jnp.array([1.0, 0.0]), 0, None)[1]), 6)
    0.1
  """
  sigma = check_sigma(sigma)
  if not lo < hi:
    raise ValueError(f"need lo < hi for Theta, got [{lo}, {hi}]")
  var = tuple(s * s for s in sigma)
  sample, sample_arm = _samplers(sigma)

  def costs(w, means, leader, stats):
    del stats
    return pair_costs("known", w, means, jnp.asarray(var, jnp.asarray(means).dtype), leader)

  def oracle(means):
    o = solve(means, jnp.asarray(sigma, means.dtype))
    return o.w, o.gamma

  def sample_posterior(key, n, stats):
    n = jnp.maximum(n, 1).astype(stats.dtype)
    m = stats[..., 0] / n
    draw = m + jnp.asarray(sigma, m.dtype) / jnp.sqrt(n) * samplers.normal(key, m.shape,
                                                                            m.dtype)
    return jnp.clip(draw, lo, hi)

  def posterior_law(n, stats):
    n = jnp.maximum(n, 1).astype(stats.dtype)
    return posteriors.NormalLaw(mean=stats[..., 0] / n, var=jnp.asarray(var, stats.dtype) / n)

  def score(n, stats, m):  # sum over the rewards of d/dm log pi = (S - n m) / sigma^2
    return (stats[..., 0] - n * m) / jnp.asarray(var, jnp.asarray(m).dtype)

  mean = sample_mean(lo, hi)
  refuse = _no_kl(KNOWN)
  return Family(
      name=KNOWN, lo=float(lo), hi=float(hi), kl=refuse, sample=sample, stat_dim=1,
      stat=lambda x: jnp.asarray(x)[..., None], mean=mean, mle=mean, fisher=refuse,
      log_density=refuse, posterior_sample=posteriors.Posterior(sample_posterior,
                                                                posterior_law),
      params=(("sigma", sigma),), exponential=True, score=score, pair_costs=costs,
      solve=oracle, sample_arm=sample_arm)


@cached
def unknown_sigma(sigma: tuple, glr: str = "uv", var_floor: float = 0.0,
                  lo: float = -1e4, hi: float = 1e4) -> Family:
  """Gaussian arms whose variances the rule and the stop estimate (module docstring).

  Args:
    sigma: the true standard deviations, one > 0 per arm (the rewards' law only).
    glr: "uv" (the unknown-variance GLR, `uv_cost`) or "ev" (the EV-GLR).
    var_floor: floor >= 0 on an empirical variance (`jbai.variance.moments`).
    lo, hi: the mean space Theta.

  Example:
    >>> fam = unknown_sigma((1.0, 2.0), "ev")
    >>> fam.name, fam.stat_dim
    ('gaussian-ev', 3)
  """
  sigma = check_sigma(sigma)
  if glr not in UNKNOWN:
    raise ValueError(f"glr must be 'ev' or 'uv', got {glr!r}")
  var_floor = check_floor(var_floor)
  if not lo < hi:
    raise ValueError(f"need lo < hi for Theta, got [{lo}, {hi}]")
  name = UNKNOWN[glr]
  sample, sample_arm = _samplers(sigma)

  def stat(x):  # (x, x^2, 1): stats[..., 2] is the count
    x = jnp.asarray(x) * 1.0
    return jnp.stack([x, x * x, jnp.ones_like(x)], axis=-1)

  def costs(w, means, leader, stats):
    if stats is None:
      raise ValueError(f"the {name!r} model reads its variances from the trial's "
                       "statistics: pass stats= to jbai.transport.pair_costs")
    m = moments(stats[..., 2], stats[..., :2], var_floor)
    return pair_costs(glr, w, means, m.var, leader)

  def oracle(means):  # the truth's: T* at the true sigma (module docstring)
    o = (solve_uv if glr == "uv" else solve)(means, jnp.asarray(sigma, means.dtype))
    return o.w, o.gamma

  refuse = _no_kl(name)
  return Family(
      name=name, lo=float(lo), hi=float(hi), kl=refuse, sample=sample, stat_dim=3,
      stat=stat, mean=sample_mean(lo, hi), mle=sample_mean(lo, hi), fisher=refuse,
      log_density=refuse, params=(("sigma", sigma), ("glr", glr), ("var_floor", var_floor)),
      pair_costs=costs, solve=oracle, sample_arm=sample_arm)


def refusal(family: Family, rule_name: str):
  """Why a built-in rule does not run on the family, or None: on the
  unknown-variance model, a rule outside `RULES`."""
  if family.name in UNKNOWN.values() and rule_name not in RULES:
    return (f"rule {rule_name!r} cannot run on the unknown-variance model "
            f"({family.name}): it needs an oracle or a KL at known variances; "
            f"use --rule {','.join(RULES[:4])}")
  return None


__all__ = ["KNOWN", "RULES", "UNKNOWN", "check_sigma", "known_sigma", "refusal",
           "unknown_sigma"]
