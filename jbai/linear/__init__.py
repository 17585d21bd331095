"""Linear best-arm identification: the model, its oracle, its statistics and its GLLR.

Arms are feature vectors x_a in R^d (rows of X, [K, d]) and arm a's mean is
x_a^T theta (Soare, Lazaric & Munos 2014). This package holds the model's
mathematics; the rules, the engine's lane and the command line come later
(docs/design/linear.md):

  jbai.linear.linear_bandit(features, theta, sigma)   a checked `LinearBandit`
  jbai.linear.soare(omega, d)                          Soare et al. 2014's hard instance
  jbai.linear.linear_solve(features, theta, sigma)     T*(theta), w*, the dual (batched, grad)
  jbai.linear.empty_linear_stats / observe_linear / from_counts   V_t^-1, b_t, theta_hat
  jbai.linear.best_arm_gllr / top_m_gllr / level_gllr  the GLLR statistics
  jbai.linear.thresholds.self_normalized / heuristic   beta(t, delta)
  jbai.linear.linear_family(features, sigma, ridge)    the model as a `Family` for the engine

Example:
  >>> import jbai
  >>> m = jbai.linear.linear_bandit([[1, 0], [0, 1], [0.6, 0.8]], [1, 0])
  >>> round(float(jbai.linear.linear_solve(m.features, m.theta, m.sigma).t_star), 2)
  18.0
"""

from jbai.linear import thresholds
from jbai.linear.family import (is_linear, linear_family, linear_means,
                                spec_of)
from jbai.linear.gllr import LinearGLLR, best_arm_gllr, half_space_costs, level_gllr, top_m_gllr
from jbai.linear.model import (DEFAULT_TOL, LinearBandit, check_linear, linear_bandit, means,
                               soare)
from jbai.linear.oracle import LinearOracle, dual_gamma, linear_solve
from jbai.linear.statistics import (LinearStats, empty_linear_stats, from_counts, log_det_ratio,
                                    observe_linear)

__all__ = ["DEFAULT_TOL", "LinearBandit", "LinearGLLR", "LinearOracle", "LinearStats",
           "best_arm_gllr", "check_linear", "dual_gamma", "empty_linear_stats", "from_counts",
           "half_space_costs", "is_linear", "level_gllr", "linear_family", "linear_means", "linear_bandit", "linear_solve", "log_det_ratio",
           "means", "observe_linear", "soare", "spec_of", "thresholds", "top_m_gllr"]
