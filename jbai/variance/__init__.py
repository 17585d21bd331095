"""Gaussian arms with per-arm variances, known and unknown: costs, GLRs, thresholds, oracles.

The mathematical core of issue 76's Gaussian half (docs/design/variance.md):

  * `moments`, `stat`: what a trial keeps per arm (n, sum x, sum x^2) and the
    empirical means and variances it reads, with the zero-variance policy.
  * `gaussian_cost`, `uv_cost`, `pair_costs`: the pair transport costs with known
    per-arm variances (heteroscedastic; with plugged-in variances the EV-GLR) and
    of the Gaussian model with unknown variances (exact nonconvex inner solve).
  * `ev_glr`, `uv_glr`: the two stopping statistics of Jourdan, Degenne &
    Kaufmann (ALT 2023), from a trial's counts and statistics.
  * `ev_threshold`, `uv_threshold`: delta-correct thresholds for them (derived in
    `jbai.thresholds.variance`, which says how they relate to the paper's).
  * `solve`, `optimal_allocation`: the known-variance (heteroscedastic) oracle,
    batched and differentiable in the means and sigma; `solve_uv`: the
    unknown-variance oracle; both also beta-optimal (the best arm's weight fixed,
    as top-two rules allocate); `cost_of_not_knowing`, `ratio_two_arms`:
    T*_uv / T*_known.
  * `known_sigma`, `unknown_sigma`: the two models as families the engine runs
    (`jbai.variance.families`: which rules, which stops, the initial pulls).

Example:
  >>> import jax.numpy as jnp
  >>> from jbai import variance
  >>> o = variance.solve(jnp.array([1.0, 0.0]), jnp.array([1.0, 1.0]))
  >>> float(o.t_star)
  8.0
"""

from jbai.variance import families
from jbai.variance.costs import (MODELS, Cost, cost, ev_glr, gaussian_cost, pair_costs,
                                 uv_cost, uv_glr)
from jbai.variance.moments import STAT_DIM, Moments, check_floor, moments, precision, stat
from jbai.variance.oracle import Oracle, check_beta, check_instance, optimal_allocation, solve
from jbai.thresholds.variance import (chi2_lower_root, ev_threshold, uv_threshold,
                                      variance_lower_bound, water_level)
from jbai.variance.families import known_sigma, unknown_sigma
from jbai.variance.uv_oracle import cost_of_not_knowing, divergence, ratio_two_arms, solve_uv

__all__ = ["families", "known_sigma", "unknown_sigma", "Cost", "MODELS", "Moments", "Oracle", "STAT_DIM", "check_beta", "check_floor", "check_instance",
           "chi2_lower_root", "cost", "cost_of_not_knowing", "divergence", "ev_glr",
           "ev_threshold", "gaussian_cost", "moments", "optimal_allocation", "pair_costs",
           "precision", "ratio_two_arms", "solve", "solve_uv", "stat", "uv_cost", "uv_glr",
           "uv_threshold", "variance_lower_bound", "water_level"]
