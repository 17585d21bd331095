"""The inputs every entry point shares: names resolved, values checked.

`simulate`, `rollout`, `estimate`, `finite_difference`, `trace`, the oracle and
the command line take a family, a rule and a threshold as objects or names, and
the same run-time values; they resolve and check them here, so that a bad value
gets the same one-line error wherever it enters: ValueError for a value out of
range (naming the value as it was given), TypeError for a value of the wrong
kind (a float where a count belongs, an int where a PRNG key belongs).

Concrete and traced values. Checks of values run where the values are concrete.
Under a caller's `jax.jit`, `jax.vmap` or `jax.grad` a traced value (the means,
delta, max_steps, a runtime parameter) cannot be inspected and passes through
unchecked: what it computes is then the caller's responsibility (a traced delta
of 0 gives an infinite threshold and every trial at the cap, flagged by
`hit_cap`; a NaN mean gives NaN statistics). Check the values once outside the
traced function (`check_delta`, `check_means`, `check_params`) when they come
from a user, or pass `checks=True` (`jbai.checks`: the same checks inside
the computation, with `jax.experimental.checkify`). Static values (n_trials,
lanes, the family, rule and threshold) are always concrete and always checked.

Confidence levels at any magnitude: a level is carried as log(1/delta), so
that one typed below float64's range ("1e-400") still reaches the threshold
(`jbai.core.inputs.levels`).

  names.py    a family, a rule and a threshold resolved from objects or names
  levels.py   confidence levels checked and carried as log(1/delta)
  values.py   counts, caps, keys and seeds checked; values as messages name them
  params.py   the rules' runtime parameters checked
  means.py    the means checked: a best arm to identify in the run's dtype
  memory.py   a run's per-trial results against the memory limit
  traced.py   traced values told from concrete ones, and refused by host functions
"""

from jbai.core.inputs.levels import (Levels, check_delta, log_inv_delta, parse_delta,
                                     threshold_params)
from jbai.core.inputs.means import check_separable, check_table
from jbai.core.inputs.memory import MEMORY_ENV, check_memory, memory_limit, trial_bytes
from jbai.core.inputs.names import (USER_RULE_STEPS, as_family, as_rule, builtin_rule,
                                    check_rule_arms, resolve, rule_refusal)
from jbai.core.inputs.params import (RUNTIME_DOMAINS, check_params, check_runtime,
                                     initial_rule_state)
from jbai.core.inputs.traced import concrete, refuse_traced, tracing
from jbai.core.inputs.values import (DEFAULT_MAX_STEPS, INT32_MAX, SEED_LIMIT, check_count,
                                     check_key, check_lanes, check_max_steps, check_positive,
                                     check_seed, check_total, check_trials, default_max_steps,
                                     max_steps_limit, raw_key, shown)

__all__ = ["DEFAULT_MAX_STEPS", "INT32_MAX", "Levels", "MEMORY_ENV", "RUNTIME_DOMAINS",
           "SEED_LIMIT", "USER_RULE_STEPS", "as_family", "as_rule", "builtin_rule",
           "check_count", "check_delta", "check_key",
           "check_lanes", "check_max_steps", "check_memory", "check_params", "check_positive",
           "check_rule_arms", "check_runtime", "check_seed", "check_separable", "check_table",
           "check_total", "check_trials", "concrete", "default_max_steps", "initial_rule_state",
           "log_inv_delta", "max_steps_limit", "memory_limit", "parse_delta", "raw_key",
           "refuse_traced", "resolve", "rule_refusal", "shown", "threshold_params", "tracing",
           "trial_bytes"]
