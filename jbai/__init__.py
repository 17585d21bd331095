"""jbai: best-arm identification in JAX, at a fixed confidence and a fixed budget.

The flat public API:
  jbai.families.gaussian() / bernoulli() / poisson() / exponential() / ...
  jbai.rules.tcb() / itcb() / ... and jbai.rules.get(name)
  jbai.thresholds.gk16() / kk() / paper()
  jbai.variance.solve(means, sigma) / solve_uv / ev_glr / uv_glr   (per-arm variances)
  jbai.stops.confidence() / lil() (stops beside the GLLR; rules may bring their own)
  jbai.oracle.optimal_allocation(family, means), jbai.oracle.exact_solve(...)
  jbai.linear.linear_bandit(features, theta), jbai.linear.linear_solve(...)   (linear BAI)
  jbai.problems.top_m(m) / above(level) / best_arm(), jbai.problems.oracle(problem, family, means)
  jbai.simulate(key, family, means, rule, delta, n_trials)   (host: progress, resume, devices)
  jbai.rollout(key, family, means, rule, delta, n_trials)    (pure: jit, vmap)
  jbai.estimate(key, family, means, rule, delta, n_trials)   (E[tau], P(error), jax.grad)
  jbai.trace(key, family, means, rule, horizon, n_trials)
  jbai.budget(key, family, means, rule, budget, n_trials)   (to a fixed budget: P(error), simple regret)
  jbai.study(spec_or_path, out=None)   (a study from a TOML spec: its cells as a table)
  jbai.transport_cost, jbai.gamma
  jbai.bounded.arm_laws([...]) / kl_inf_down / pair_glr / optimal (arms of any law in [0, 1])
  jbai.enable_compilation_cache()
  jbai.use_cpu_cores()   (one JAX device per CPU core: call before any JAX computation)

Importing jbai changes no global setting: JAX's configuration, caches and
logging are left as they are (`enable_compilation_cache` and `use_cpu_cores`
are opt-ins).
"""

from jbai import bounded, families, linear, oracle, problems, rules, stops, thresholds, variance
from jbai.core.estimate import Estimate, estimate
from jbai.core.finite_differences import Difference, finite_difference
from jbai.core.lane import stopping_statistic
from jbai.core.rollout import Rollout, rollout
from jbai.families import Family
from jbai.host.budget import BudgetResult, budget
from jbai.host.caches import enable_compilation_cache
from jbai.host.cores import use_cpu_cores
from jbai.host.simulate import Result, simulate
from jbai.host.trace import Trace, trace
from jbai.studies import study
from jbai.rules import Rule
from jbai.state import ArmStats, arm_stats
from jbai.thresholds import Threshold
from jbai.transport import gamma, golden_section, pair_costs, transport_cost

__version__ = "0.1.0"

__all__ = ["ArmStats", "BudgetResult", "bounded", "Difference", "Estimate", "Family", "Result", "Rollout",
           "Rule", "Threshold", "Trace", "arm_stats", "budget", "enable_compilation_cache",
           "estimate",
           "families", "finite_difference", "gamma", "golden_section", "linear", "oracle",
           "pair_costs", "problems", "rollout", "rules", "simulate", "stopping_statistic", "stops", "study",
           "thresholds", "trace", "transport_cost", "use_cpu_cores", "variance"]
