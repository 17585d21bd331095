"""jbai: fixed-confidence best-arm identification in JAX.

The flat public API:
  jbai.families.gaussian() / bernoulli() / poisson() / exponential()
  jbai.rules.tcb() / itcb() / ... and jbai.rules.get(name)
  jbai.thresholds.gk16() / kk() / paper()
  jbai.oracle.optimal_allocation(family, means)
  jbai.simulate(key, family, means, rule, delta, n_trials)
  jbai.rollout(key, family, means, rule, delta, n_trials)   (pure: jit, vmap)
  jbai.estimate(key, family, means, rule, delta, n_trials)  (E[tau], P(error), jax.grad)
  jbai.trace(key, family, means, rule, horizon, n_trials)
  jbai.transport_cost, jbai.gamma
"""

from jbai import compilation_cache, families, memory_maps, oracle, rules, thresholds
from jbai.engine import Result, Rollout, Trace, rollout, simulate, stopping_statistic, trace
from jbai.estimate import Difference, Estimate, estimate, finite_difference
from jbai.families import Family
from jbai.rules import Rule
from jbai.state import ArmStats, arm_stats
from jbai.thresholds import Threshold
from jbai.transport import gamma, golden_section, pair_costs, transport_cost

__version__ = "0.1.0"

compilation_cache.enable()  # JAX's persistent compilation cache, per user (see there)

__all__ = ["ArmStats", "Difference", "Estimate", "Family", "Result", "Rollout", "Rule",
           "Threshold", "Trace", "arm_stats", "estimate", "families", "finite_difference",
           "gamma", "golden_section", "oracle", "pair_costs", "rollout", "rules", "simulate",
           "stopping_statistic", "thresholds", "trace", "transport_cost"]
