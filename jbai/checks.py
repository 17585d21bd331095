"""Checks of traced values on request (`checks=True`), with `jax.experimental.checkify`.

Concrete values are always checked at the Python boundary (`jbai.core.inputs`).
Under the caller's `jax.jit`, `jax.vmap` or `jax.grad` the means, delta and the
rule's runtime parameters are traced and cannot be inspected there; with
`checks=True`, `rollout`, `estimate`, `finite_difference` and
`jbai.oracle.optimal_allocation` check them inside the computation instead, with
the boundary's one-line messages: NaN or infinite means, a mean outside Theta, a
tie for the best arm in the simulation's dtype, delta outside (0, 1), a runtime
parameter outside its domain (beta in (0, 1), eps > 0), and an arm out of range
from a user's rule's `select` (on every step, read from the trials' records:
`check_arms`). Without `checks` nothing is added
to the computation: the cost is zero.

The checks are functionalised where they run (`checkify.checkify`) and handed on
with `checkify.check_error`: called eagerly, a failed check raises at once
(`checkify.JaxRuntimeError`, a ValueError); under the caller's `jax.jit`, the
caller functionalises in turn, and throws outside:

  >>> import jax, jbai
  >>> from jax.experimental import checkify
  >>> f = jax.jit(lambda m: jbai.rollout(jax.random.key(0), "gaussian", m, "tcb", 0.1,
  ...                                    16, checks=True).tau.mean())
  >>> err, tau = checkify.checkify(f)(jax.numpy.array([1.0, 0.5, 0.0]))
  >>> err.throw()  # raises where a check failed; here none did

(Under the caller's jit without `checkify.checkify`, JAX refuses to trace a
check that is not functionalised, with a message that says to use it.)

Under the caller's `jax.vmap`, `checkify` cannot run `rollout`: it does not
handle a while loop whose predicate the vmap batches (JAX raises "Checkify does
not support batched while-loops" for checkify of vmap, and fails inside its own
code for vmap of checkify), whether or not the loop holds a check. Give the
instances as one [I, K] array instead: `rollout` runs them in one loop, and
`checks=True` names the bad row; or check the values before the vmap.
"""

import math

import jax
import jax.numpy as jnp
from jax.experimental import checkify

from jbai.families.base import Family


def run_checked(fn, *args):
  """fn(*args) with its checks functionalised, the error handed on (module docstring)."""
  error, out = checkify.checkify(fn)(*args)
  checkify.check_error(error)
  return out


def _first_bad_row(table: jax.Array, bad_rows: jax.Array) -> jax.Array:
  return table[jnp.argmax(bad_rows)]


def check_means(family: Family, means: jax.Array) -> None:
  """[K] or [I, K] means: finite, inside Theta, a unique best arm in their dtype."""
  table = jnp.reshape(means, (-1, means.shape[-1]))
  nan = jnp.any(jnp.isnan(table), axis=-1)
  checkify.check(~jnp.any(nan), "means contain NaN: {}", _first_bad_row(table, nan))
  infinite = jnp.any(jnp.isinf(table), axis=-1)
  checkify.check(~jnp.any(infinite), "means must be finite, got {}",
                 _first_bad_row(table, infinite))
  outside = (table < family.lo) | (table > family.hi)
  rows = jnp.any(outside, axis=-1)
  row = jnp.argmax(rows)
  checkify.check(~jnp.any(rows & ~nan), "mean {} is outside Theta = [" + f"{family.lo}, "
                 f"{family.hi}] of the {family.name} family (means {{}})",
                 table[row, jnp.argmax(outside[row])], table[row])
  top = jnp.max(table, axis=-1, keepdims=True)
  tied = jnp.sum(table == top, axis=-1) > 1
  checkify.check(~jnp.any(tied), "tie for the best arm at mean {} in " + table.dtype.name +
                 " (means {}); the best arm must be unique",
                 jnp.max(_first_bad_row(table, tied)), _first_bad_row(table, tied))


def check_delta(delta: jax.Array) -> None:
  """Each level in (0, 1)."""
  levels = jnp.atleast_1d(delta)
  bad = ~((levels > 0) & (levels < 1))
  checkify.check(~jnp.any(bad), "delta must be in (0, 1), got {}", levels[jnp.argmax(bad)])


def check_params(params: dict, domains: dict) -> None:
  """Runtime parameters {name: value} in their domains {name: (lo, hi, text)}."""
  for name, value in params.items():
    lo, hi, text = domains.get(name, (-math.inf, math.inf, "finite"))
    v = jnp.asarray(value)
    bad = ~((v > lo) & (v < hi))
    checkify.check(~jnp.any(bad), f"{name} must be {text}, got {{}}", v)


def check_arms(rule_name: str, counts: jax.Array, steps: jax.Array) -> None:
  """Every step of every trial pulled an arm in [0, K): a pull of an arm out of
  range adds to no count (`jbai.state.add_to_arm`) but takes a step, so a trial
  whose counts [N, K] sum to fewer than its steps [N] selected one. Checked on
  the trials' records after the loop, not in it: `checkify` does not run a
  while loop whose predicate the caller's `jax.vmap` batches."""
  short = jnp.sum(counts, axis=-1) != steps
  trial = jnp.argmax(short)
  checkify.check(~jnp.any(short), f"rule {rule_name!r} selected an arm outside 0 to "
                 f"{counts.shape[-1] - 1} in trial {{}} (its counts sum to {{}} of its {{}} "
                 "steps)", trial, jnp.sum(counts[trial]), steps[trial])
