"""The sampling-rule interface and the helpers every rule shares.

A rule is a NamedTuple of two pure functions (optax's GradientTransformation
style), built by a factory that closes over the rule's hyper-parameters:

  init(num_arms) -> rule_state                      (any pytree; () if none)
  select(key, family, arm_stats, rule_state) -> (arm, rule_state)

`select` sees the statistics of the rewards so far (`jbai.state.ArmStats`) and
returns the next arm to pull (int32 scalar). It must be jit- and vmap-able and
must not depend on anything but its arguments, so that a trial is a
deterministic function of its PRNG key.

Runtime hyper-parameters. A numeric hyper-parameter that `select` reads from the
state (built by `init` on the host, with `hyper`) rather than from its closure is
a runtime value of the compiled simulation: the rule names it in `runtime`, and
`Rule.program()`, the identity under which the engine caches compiled programs,
leaves it out. Changing it (say a top-two rule's beta) then reuses the program.
A parameter that changes the program's structure (a loop bound, None against a
number) stays in the closure and in the identity.

Policy scores. A rule whose choices are random given the history, with a law
that depends on a runtime parameter (a top-two rule's coin: leader with
probability beta), accumulates in its state the score of those choices,
sum_t d/dparam log P(choice_t), and exposes it through `score(state) ->
{name: [] float}`; `jbai.estimate` turns it into likelihood-ratio gradients. A
rule whose choices are deterministic in a parameter (TCB's eps) has no score for
it: differentiate it by finite differences with common random numbers
(`jbai.finite_difference`).
"""

from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jbai.families.base import Family
from jbai.identity import same
from jbai.state import ArmStats


class Rule(NamedTuple):
  name: str
  init: Callable[[int], Any]
  select: Callable[[jax.Array, Family, ArmStats, Any], tuple]
  params: tuple = ()   # ((name, value), ...) for display
  runtime: tuple = ()  # names of the params that select reads from the state
  score: Optional[Callable[[Any], dict]] = None  # state -> {runtime name: policy score}

  def __repr__(self):
    return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params)})"

  def program(self) -> "Rule":
    """The rule without its runtime params: equal for rules that compile alike.

    Example:
      >>> from jbai import rules
      >>> rules.t3c(beta=0.3).program() == rules.t3c(beta=0.7).program()
      True
    """
    return self._replace(params=tuple((k, v) for k, v in self.params
                                      if k not in self.runtime))

  def __hash__(self):
    return hash((self.name, self.params))

  def __eq__(self, other):
    # Equal names and parameters, and select and score that compute alike (init
    # makes the runtime state, data of the program, so it may differ).
    return (isinstance(other, Rule) and
            (self.name, self.params, self.runtime) == (other.name, other.params, other.runtime)
            and same((self.select, self.score), (other.select, other.score)))


def no_state(num_arms: int):
  del num_arms
  return ()


def hyper(value) -> jax.Array:
  """A numeric hyper-parameter as a state leaf: a scalar of the default float
  dtype, the dtype of the sample means that it meets in `select`."""
  return jnp.asarray(value, jnp.result_type(float))


TIE_ULPS = 64  # values within this many units of roundoff of the maximum tie with it


def maxima(values: jax.Array) -> jax.Array:
  """[K] bool: the maxima of `values` [K] up to rounding, those within TIE_ULPS
  units of roundoff (relative) of the maximum (exactly the maxima for integer
  and boolean values, and where the maximum is infinite).

  Why not `values >= jnp.max(values)`. XLA:CPU may compute an expression again
  inside each kernel that reads it, and the copies may round differently
  (multiply-adds contracted in one and not in the other; seen with AVX-512,
  where which arms fall in a vectorised loop and which in its scalar remainder
  depends on the number of lanes). With an exact comparison the maximum, taken
  from one copy, can then exceed every value of another (no maximum at all), and
  arms with equal statistics, equal in exact arithmetic, tie in one program and
  not in another, so that a trial depends on the pool size. The tolerance is
  far above such differences and far below any that a rule's statistics
  resolve.
  """
  top = jnp.max(values)
  if not jnp.issubdtype(values.dtype, jnp.inexact):  # exact values: exact ties
    return values >= top
  slack = TIE_ULPS * jnp.finfo(values.dtype).eps * jnp.abs(top)
  return values >= top - jnp.where(jnp.isinf(top), 0, slack)


def first_index(mask: jax.Array) -> jax.Array:
  """[] int32 lowest index where `mask` [K] holds, K where it holds nowhere
  (one plain min-reduction)."""
  num = mask.shape[-1]
  return jnp.min(jnp.where(mask, jnp.arange(num, dtype=jnp.int32), num))


def lowest(mask: jax.Array) -> jax.Array:
  """[] int32 lowest index where `mask` [K] holds, kept in range: K - 1 where
  it holds nowhere (which `maxima`'s tolerance leaves to values whose copies
  differ by more than it, under catastrophic cancellation)."""
  return jnp.minimum(first_index(mask), mask.shape[-1] - 1)


def argmax_ties(u: jax.Array, values: jax.Array) -> jax.Array:
  """Index of a maximum of `values` (up to rounding: `maxima`), ties broken
  uniformly by one uniform u in [0, 1).

  Among the n maxima (in index order) it returns the floor(u * n)-th, so a single
  random number serves any number of ties.
  """
  is_max = maxima(values)
  rank = jnp.floor(u * jnp.sum(is_max)).astype(jnp.int32)
  return lowest(is_max & (jnp.cumsum(is_max) > rank))


def argmax_random_ties(key: jax.Array, values: jax.Array) -> jax.Array:
  """Index of a maximum of `values`, ties broken uniformly at random."""
  return argmax_ties(jax.random.uniform(key), values)


def argmin_random_ties(key: jax.Array, values: jax.Array) -> jax.Array:
  """Index of a minimum of `values`, ties broken uniformly at random."""
  return argmax_ties(jax.random.uniform(key), -values)


def least_sampled(counts: jax.Array) -> jax.Array:
  """The least-sampled arm (lowest index among ties)."""
  return jnp.argmin(counts).astype(jnp.int32)


def under_explored(counts: jax.Array, t: jax.Array) -> jax.Array:
  """True when some arm has T_t(i) <= ceil(sqrt(t / K)) (the paper's set U_t)."""
  num_arms = counts.shape[-1]
  bound = jnp.ceil(jnp.sqrt(t / num_arms))
  return jnp.min(counts) <= bound


def leader(key: jax.Array, arm_stats: ArmStats) -> jax.Array:
  """The empirical top arm a_t^top: argmax of the projected sample means, ties
  broken uniformly at random."""
  return argmax_random_ties(key, arm_stats.mean)
