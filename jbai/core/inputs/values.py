"""Counts, caps, keys and seeds checked, and values named as messages name them.

A count is a whole number in its range (2.0 and np.int64(2) pass; 2.5, True,
NaN and "2" are refused, never truncated); a trial's cap is within what its
counts hold (`max_steps_limit`); a key is a PRNG key, not an int seed. Each
refusal names the value as it was given (`shown`). A traced value passes
through unchecked (see `jbai.core.inputs`).
"""

import math
import numbers
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai.core.inputs.memory import check_memory
from jbai.core.inputs.traced import concrete
from jbai.rules.base import Rule
from jbai.state import count_dtype

INT32_MAX = 2**31 - 1
DEFAULT_MAX_STEPS = 1_000_000  # a trial's cap when none is given (`default_max_steps`)
SEED_LIMIT = 2**63  # jax.random.key takes a seed in [-2^63, 2^63)


def shown(value) -> str:
  """A value as a message names it: a concrete 0-d array as its number, long
  values cut to 120 characters."""
  if isinstance(value, float):  # np.float64, jax's typed literals: as plain numbers
    value = float(value)
  elif isinstance(value, int) and not isinstance(value, bool):
    value = int(value)
  elif getattr(value, "shape", None) == () and concrete(value):
    try:
      value = np.asarray(value).item()
    except (TypeError, ValueError):  # a typed PRNG key, say
      pass
  text = repr(value)
  return text if len(text) <= 120 else text[:117] + "..."


def check_count(name: str, value, minimum: int = 1, maximum: int = INT32_MAX) -> int:
  """A whole number in [minimum, maximum] as an int: 2.0 and np.int64(2) pass;
  2.5, True, NaN and "2" do not (nothing is truncated).

  Raises:
    TypeError: for a value that is not a whole number.
    ValueError: for one outside [minimum, maximum].
  """
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
    if not (isinstance(value, (np.ndarray, jax.Array)) and np.ndim(value) == 0 and
            concrete(value) and np.issubdtype(np.asarray(value).dtype, np.number)):
      raise TypeError(f"{name} must be a whole number, got {shown(value)}")
    value = np.asarray(value).item()
  if not (math.isfinite(value) and value == int(value)):
    raise (TypeError if not math.isfinite(value) else ValueError)(
        f"{name} must be a whole number, got {value!r}")
  n = int(value)
  if n < minimum:
    raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
  if n > maximum:
    raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
  return n


def check_trials(n_trials, minimum: int = 1) -> int:
  """n_trials as an int, at least `minimum` (2.5 is refused, not truncated)."""
  n = check_count("n_trials", n_trials, 1, 2**62)  # the int32 bound: check_total
  if n < minimum:
    raise ValueError(f"n_trials must be >= {minimum} for a standard error, got {n_trials!r}")
  return n


def check_total(what: str, n_results: int, bytes_per_result: int) -> int:
  """The trials of a run in all: within memory (`check_memory`), then within
  int32 (trial indices are int32 in the compiled program)."""
  check_memory(f"{what} of {n_results} trials", n_results, bytes_per_result)
  return check_count(f"{what}'s trials in all (int32 indices)", n_results, 1, INT32_MAX)


def default_max_steps(rule: Rule, blocks: bool = True) -> int:
  """The cap on a trial's rewards when none is given: the rule's own
  (`Rule.max_steps`, a rule that pulls in blocks: its cost is per block, not
  per reward) where its pulls come in blocks (`blocks`: a run without scores),
  else DEFAULT_MAX_STEPS."""
  own = getattr(rule, "max_steps", None)
  return int(own) if blocks and own is not None else DEFAULT_MAX_STEPS


def max_steps_limit() -> int:
  """The largest cap a trial takes: 2^31 - 2 with int32 counts (JAX's x64 mode
  off: `jbai.state.count_dtype`), 2^53 with int64 ones, the counts up to which
  float64 statistics hold every count exactly."""
  return INT32_MAX - 1 if np.dtype(count_dtype()).itemsize <= 4 else 2**53


def check_max_steps(max_steps):
  """max_steps, a whole number in [1, `max_steps_limit()`] where concrete; a
  traced value passes through (see `jbai.core.inputs`).

  Raises:
    ValueError: above the limit, saying how to reach 2^53 (x64) where the
      counts are int32.
  """
  if not concrete(max_steps):
    return max_steps
  n = check_count("max_steps", max_steps, 1, 2**62)
  limit = max_steps_limit()
  if n > limit and limit < 2**53:
    raise ValueError(
        f"max_steps must be <= {limit} with 32-bit counts (JAX's x64 mode is off), got "
        f"{max_steps!r}; enable it (JAX_ENABLE_X64=1, or "
        "jax.config.update('jax_enable_x64', True)) for 64-bit counts, up to 2^53")
  if n > limit:
    raise ValueError(f"max_steps must be <= 2^53 = {limit} (counts exact in float64), "
                     f"got {max_steps!r}")
  return n


def check_lanes(lanes) -> Optional[int]:
  """lanes, None (the default) or a whole number >= 1."""
  return None if lanes is None else check_count("lanes", lanes, 1)


def check_key(key) -> jax.Array:
  """A PRNG key: a typed key (jax.random.key) of shape () or a raw uint32 key
  (jax.random.PRNGKey) of shape (2,) or (4,).

  Raises:
    TypeError: for anything else (an int seed, say), naming it.
  """
  dtype = getattr(key, "dtype", None)
  if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
    if key.shape != ():
      raise ValueError(f"key must be a single PRNG key of shape (), got shape {key.shape}"
                       " (vmap over keys)")
    return key
  if (dtype is not None and np.dtype(dtype) == np.uint32 and
      tuple(np.shape(key)) in ((2,), (4,))):
    return key
  raise TypeError(f"key must be a PRNG key such as jax.random.key(0), got {shown(key)}")


def check_seed(seed) -> int:
  """A seed for jax.random.key: a whole number in [0, 2^63)."""
  return check_count("seed", seed, 0, SEED_LIMIT - 1)


def check_positive(name: str, value) -> float:
  """A finite number > 0 (a finite-difference step, say) where concrete."""
  if not concrete(value):
    return value
  if isinstance(value, (bool, np.bool_)) or np.ndim(value) != 0:
    raise TypeError(f"{name} must be a number > 0, got {shown(value)}")
  v = float(value)
  if not (math.isfinite(v) and v > 0):
    raise ValueError(f"{name} must be a finite number > 0, got {shown(value)}")
  return value


def raw_key(key) -> jax.Array:
  """The raw uint32 data of a typed key (jax.random.key) or of a raw key (PRNGKey)."""
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    return jax.random.key_data(key)
  return key
