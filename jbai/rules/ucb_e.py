"""UCB-E (Audibert, Bubeck & Munos 2010): a highly exploring UCB for the fixed budget.

"Best Arm Identification in Multi-Armed Bandits" (COLT 2010). After one pull of
each arm, pull

  argmax_i  mu_hat_i + sqrt(a / T_i(t)),

the index of UCB with an exploration parameter a in place of a log t. Ties for
the index go to the lowest index. The rule recommends the empirical best arm.

The exploration a. The paper's analysis takes a = (25/36) (n - K) / H_1 for a
budget n and the complexity H_1 = sum_{i != *} 1 / Delta_i^2 of rewards in
[0, 1]: a depends on the budget and on the gaps, which the rule cannot know. Two
settings:

* a given (`ucb_e(a=...)`, default 1): a fixed number, in the units of the mean
  squared; the sampling does not depend on the budget.
* a from the budget (`ucb_e(h1=H, c=...)`): a = c (n - K) / H, with n the run's
  budget (`jbai.stops.budget.with_budget`), H a complexity that the user gives
  (the true H_1 where it is known, a guess elsewhere: the rule never reads the
  true means) and c = 25/36 by default, the paper's theory value. The paper's
  experiments run a = c n / H_1 for a few c. Adaptive UCB-E
  (`jbai.rules.adaptive_ucb_e`) estimates H_1 from the sample means instead.

Both are runtime values (a sweep over a, c or H compiles one program). The
index is Hoeffding's for bounded rewards: the rule runs on Bernoulli and
Gaussian arms (the sub-Gaussian families, `jbai.stops.bounds.subgaussian_variance`)
and refuses the others, as the fixed-confidence UGapE does.

UCB-E never stops by itself: its exploration is bounded, so a suboptimal arm's
pulls stop growing and no stopping rule's statistic grows with them. The rule
therefore declares `Rule.budget` (the smallest budget: K, each arm once) and
runs only to a budget (`jbai.budget`, `jbai run --budget`, a budget study);
`jbai.simulate` and a run without a budget refuse it (`jbai.core.inputs.resolve`).

Sources: the index as the paper states it, checked against the implementation
in xuedong/BestArm.jl (src/fixed_budget/ucbe.jl, `compute_ucbe` in
src/utils.jl: mean + sqrt(a / s), each arm pulled once first). The paper's text
itself was not available here (its abstract only).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jbai import ties
from jbai.builders import cached
from jbai.rules.base import Rule, hyper, least_sampled
from jbai.state import count_dtype
from jbai.stops import bounds as bounds_lib

THEORY_C = 25.0 / 36.0  # the paper's a = (25/36) (n - K) / H_1


class UcbeState(NamedTuple):
  a: jax.Array  # [] float, the exploration parameter a > 0 (a runtime value)


class UcbeBudgetState(NamedTuple):
  c: jax.Array       # [] float, the factor c > 0 of a = c (n - K) / H (a runtime value)
  h1: jax.Array      # [] float, the complexity H > 0 the user gives (a runtime value)
  budget: jax.Array  # [] count_dtype(), the budget n (a runtime value)


def min_budget(num_arms: int) -> int:
  """The smallest budget: K, one pull of each arm."""
  return num_arms


def ucb_index(arm_stats, a: jax.Array) -> jax.Array:
  """[] int32: each arm once (the least sampled first), then argmax mu_hat_i +
  sqrt(a / T_i), the lowest index among ties."""
  counts = arm_stats.counts
  pulls = jnp.maximum(counts, 1).astype(arm_stats.mean.dtype)
  index = arm_stats.mean + jnp.sqrt(a / pulls)
  arm = jnp.where(jnp.min(counts) == 0, least_sampled(counts), ties.argmax(index))
  return arm.astype(jnp.int32)


def budget_exploration(state: UcbeBudgetState, num_arms: int, dtype) -> jax.Array:
  """a = c (n - K) / H of the state's budget n."""
  room = jnp.maximum(state.budget - num_arms, 0).astype(dtype)
  return state.c * room / state.h1


def check_positive(name: str, value) -> float:
  """A finite number > 0, as a float; ValueError naming the value otherwise."""
  if isinstance(value, bool) or not (isinstance(value, (int, float)) and
                                     0 < value < float("inf")):
    raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
  return float(value)


@cached
def _select_fn(from_budget: bool):
  def select(key, family, arm_stats, state):
    del key
    bounds_lib.checked_variance(family, "ucb-e")  # bounded or sub-Gaussian rewards
    a = (budget_exploration(state, arm_stats.counts.shape[-1], arm_stats.mean.dtype)
         if from_budget else state.a)
    return ucb_index(arm_stats, a), state
  return select


def ucb_e(a: Optional[float] = None, h1: Optional[float] = None,
          c: Optional[float] = None) -> Rule:
  """UCB-E (Audibert, Bubeck & Munos 2010): the UCB index mu_hat + sqrt(a / T_i), a given or a = c (T - K) / H1; runs to a budget.

  Args:
    a: the exploration parameter a > 0 (default 1 without `h1`).
    h1: a complexity H > 0 (the paper's H_1 = sum 1 / Delta_i^2, given by the
      user): a = c (T - K) / H at the run's budget T, in place of `a`.
    c: the factor c > 0 of a = c (T - K) / H (default 25/36, the paper's theory
      value); only with `h1`.

  Returns:
    The rule (it never stops by itself: `jbai.budget` runs it to a budget).

  Raises:
    ValueError: for a value that is not a finite number > 0, for `a` with `h1`,
      or for `c` without `h1`.

  Example:
    >>> import jbai
    >>> jbai.rules.ucb_e(h1=40.0)
    ucb-e(h1=40.0, c=0.6944444444444444)
  """
  if h1 is None:
    if c is not None:
      raise ValueError(f"c = {c!r} sets a = c (T - K) / H1: give h1 too (or a alone)")
    a = check_positive("a", 1.0 if a is None else a)
    return Rule("ucb-e", lambda num_arms: UcbeState(hyper(a)), _select_fn(False),
                (("a", a),), runtime=("a",), budget=min_budget)
  if a is not None:
    raise ValueError(f"give a = {a!r} or h1 = {h1!r} (a = c (T - K) / H1), not both")
  h1 = check_positive("h1", h1)
  c = check_positive("c", THEORY_C if c is None else c)

  def init(num_arms):
    return UcbeBudgetState(c=hyper(c), h1=hyper(h1),
                           budget=jnp.asarray(min_budget(num_arms), count_dtype()))

  return Rule("ucb-e", init, _select_fn(True), (("h1", h1), ("c", c)), runtime=("h1", "c"),
              budget=min_budget)
