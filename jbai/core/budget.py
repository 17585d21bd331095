"""The inputs of a run to a budget: the budget T, its checkpoints, and the rules
that run to one (`jbai.budget`, and `jbai.rollout`'s and `jbai.estimate`'s
`budget`).
"""

import jax.numpy as jnp
import numpy as np

from jbai import stops
from jbai.core import inputs
from jbai.state import count_dtype

DEFAULT_CHECKPOINTS = 20  # log-spaced checkpoints up to the budget, by default


def checkpoint_times(budget: int, checkpoints, num_arms: int) -> np.ndarray:
  """[C] int64, the checkpoints: `checkpoints` log-spaced times from K to the
  budget (a count), or the given times (a list), sorted, each once, with the
  budget last.

  Raises:
    ValueError: for a time below 1 or beyond the budget, or an empty list.
  """
  if checkpoints is None or isinstance(checkpoints, (int, np.integer)):
    count = inputs.check_count("checkpoints", DEFAULT_CHECKPOINTS if checkpoints is None
                               else checkpoints, 1, 10_000)
    start = min(num_arms, budget)
    times = np.geomspace(start, budget, count) if count > 1 else np.array([budget])
    return np.unique(np.append(np.round(times).astype(np.int64), budget))
  times = [inputs.check_count("a checkpoint", t, 1, inputs.max_steps_limit())
           for t in np.atleast_1d(np.asarray(checkpoints, dtype=object))]
  if not times:
    raise ValueError("checkpoints must hold at least one time")
  beyond = [t for t in times if t > budget]
  if beyond:
    raise ValueError(f"checkpoint {beyond[0]} is beyond the budget {budget}")
  return np.unique(np.append(np.asarray(times, np.int64), budget))


def budget_runs(rule, budgets: list, checkpoints, num_arms: int) -> list:
  """[(budget T, [checkpoint times], [the budgets it answers])] of one rule run to
  several budgets: an anytime rule once, to the largest budget; a rule with a
  fixed budget (`Rule.budget` not None) once per budget. Each run records the
  budgets it answers and `checkpoints` log-spaced times from K to its T (a count;
  None or 0: none), T last (`checkpoint_times`). The command line (`jbai run
  --budget`) and a budget study group their runs with it.

  Example:
    >>> from jbai import rules
    >>> budget_runs(rules.uniform(), [100, 1000], 0, 4)
    [(1000, [100, 1000], [100, 1000])]
    >>> [t for t, _, _ in budget_runs(rules.successive_rejects(), [100, 1000], 0, 4)]
    [100, 1000]
  """
  budgets = sorted(budgets)
  out = []
  for shown in ([[t] for t in budgets] if rule.budget is not None else [budgets]):
    horizon = shown[-1]
    extra = [] if not checkpoints else [int(t) for t in checkpoint_times(
        horizon, checkpoints, num_arms)]
    times = checkpoint_times(horizon, sorted(set(shown + extra)), num_arms)
    out.append((horizon, [int(t) for t in times], shown))
  return out


def check_rule(family, rule, num_arms: int, problem=None) -> None:
  """A rule that runs to a budget: one whose sampling needs no delta (a
  confidence-bound or elimination rule's does), that applies to the family, and
  that samples for the question (`problem`; None: the best arm)."""
  why = stops.question_refusal(_asked(problem), rule)
  if why is not None:
    raise ValueError(why)
  if stops.takes_delta(rule.init(num_arms)):
    raise ValueError(f"rule {rule.name!r} samples with confidence bounds that depend on "
                     "delta, and a run to a budget has no delta; run a rule that samples "
                     "without it (uniform, tcb, successive-rejects, ...)")
  why = inputs.rule_refusal(family, rule, num_arms)
  if why is not None:
    raise ValueError(why)


def check_budget(rule, budget, num_arms: int) -> int:
  """The budget T, a whole number at least K and at least the rule's own minimum
  (`jbai.rules.Rule.budget`), within the counts (`inputs.max_steps_limit`).

  Raises:
    TypeError: for a traced T (a host-side run, `jbai.budget`, needs it
      concrete; `jbai.rollout` and `jbai.estimate` take it traced).
  """
  if not inputs.concrete(budget):
    raise TypeError(f"budget must be a concrete whole number here, got a traced value "
                    f"({inputs.shown(budget)}); jbai.budget runs on the host: inside jax.jit "
                    "or vmap use jbai.rollout or jbai.estimate, which take a traced budget")
  own = rule.budget(num_arms) if rule.budget is not None else 0
  value = inputs.check_count("budget", budget, 1, inputs.max_steps_limit())
  if value < max(num_arms, own):
    why = (f"the number of arms, K = {num_arms}" if own <= num_arms else
           f"{own}, the smallest of rule {rule.name!r} on {num_arms} arms")
    raise ValueError(f"budget must be at least {why}, got {budget!r}")
  return value


def traced_budget(budget, checkpoints):
  """A traced budget T as a count: an integer scalar, with no checkpoints but T
  (log-spaced or listed times need T's value). It is not checked against K and
  the rule's minimum (see `jbai.core.inputs` on traced values).

  Raises:
    TypeError: for a traced T that is not an integer scalar, or with checkpoints.
  """
  if jnp.ndim(budget) != 0 or not jnp.issubdtype(jnp.result_type(budget), jnp.integer):
    raise TypeError(f"a traced budget must be an integer scalar, got "
                    f"{jnp.result_type(budget)}{list(jnp.shape(budget))}")
  if checkpoints is not None:
    raise TypeError(f"checkpoints={inputs.shown(checkpoints)} need the budget's value: with "
                    "a traced budget give checkpoints=None (T alone), or a concrete budget")
  return jnp.asarray(budget, count_dtype())


def check_run(family, rule, budget, checkpoints, num_arms: int, problem=None) -> tuple:
  """(T, [C] checkpoints) of a run to a budget, after checking that the rule runs
  to one on the family for the question (`check_rule`) and the budget
  (`check_budget`); `checkpoints` as `checkpoint_times` takes them."""
  check_rule(family, rule, num_arms, problem)
  horizon = check_budget(rule, budget, num_arms)
  return horizon, checkpoint_times(horizon, checkpoints, num_arms)


def _asked(problem):
  """The question a rule samples for, None for the best arm (asked or not) and
  for a question whose answer is an arm (an eps-good arm: the rule's
  recommendation, scored against eps)."""
  return None if problem is None or problem.arm else problem


__all__ = ["DEFAULT_CHECKPOINTS", "budget_runs", "check_budget", "check_rule", "check_run",
           "checkpoint_times", "traced_budget"]
