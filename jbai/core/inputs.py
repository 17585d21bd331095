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
the computation, with `jax.experimental.checkify`). Static values (n_trials, lanes, the family, rule and threshold) are
always concrete and always checked.

Confidence levels at any magnitude. The stopping thresholds need only
log(1/delta), so a level is carried as log(1/delta) in float64 (`parse_delta`):
a level typed as text ("1e-400") below float64's range, or a float below the
simulation dtype's smallest normal number (float32: 1.2e-38, where delta itself
rounds to 0), reaches the threshold as `jbai.thresholds.LogDelta`. Levels in the
normal range reach it as before, so their thresholds are unchanged to the bit.
"""

import decimal
import functools
import math
import numbers
import os
import re
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jbai import families as families_lib
from jbai import problems as problems_lib
from jbai import rules as rules_lib
from jbai import stops as stops_lib
from jbai import thresholds as thresholds_lib
from jbai.families.base import Family, check_means
from jbai.oracle.eps import check_eps
from jbai.rules.base import Rule
from jbai.state import count_dtype
from jbai.thresholds import LogDelta, Threshold

INT32_MAX = 2**31 - 1
DEFAULT_MAX_STEPS = 1_000_000  # a trial's cap when none is given (`default_max_steps`)
SEED_LIMIT = 2**63  # jax.random.key takes a seed in [-2^63, 2^63)

# The domains of the rules' runtime parameters (the rule factories check the same).
RUNTIME_DOMAINS = {"beta": (0.0, 1.0, "in (0, 1)"), "eps": (0.0, math.inf, "> 0 and finite"),
                   "eps_good": (0.0, math.inf, "> 0 and finite"),
                   **{name: (0.0, math.inf, "> 0 and finite") for name in ("a", "c", "h1")}}


def as_rule(rule) -> Rule:
  """A `Rule` from a rule, a registered name, or any object with pure `init` and
  `select` functions (a NamedTuple of two functions, say), which runs as a rule
  with no parameters (with its `score`, `stop` and `pulls` where it has them)."""
  if isinstance(rule, Rule):
    return rule
  if isinstance(rule, str):
    return rules_lib.get(rule)
  init, select = getattr(rule, "init", None), getattr(rule, "select", None)
  if not (callable(init) and callable(select)):
    raise TypeError(f"a rule is a jbai.rules.Rule, a rule name, or an object with "
                    f"init(num_arms) and select(key, family, arm_stats, state) "
                    f"functions; got {rule!r}")
  return Rule(name=getattr(rule, "name", type(rule).__name__), init=init, select=select,
              score=getattr(rule, "score", None), stop=getattr(rule, "stop", None),
              pulls=getattr(rule, "pulls", None), recommend=getattr(rule, "recommend", None))


USER_RULE_STEPS = 32  # the first steps on which a user's rule's arms are checked


def check_rule_arms(family: Family, rule: Rule, means) -> None:
  """A user's rule (its `select` defined outside jbai) must select arms in [0, K):
  its select runs eagerly on a trial's first steps (at most USER_RULE_STEPS,
  rewards drawn at the first instance's means), and an arm out of range is
  refused naming the arm, the step and the rule. jbai's own rules are not run
  (their arms are in range by construction): they pay nothing. Inside a JAX
  trace (the caller's jit, or traced means) nothing is checked here, since a
  traced arm cannot be read: `checks=True` checks every step's arm instead
  (`jbai.checks.check_arms`)."""
  if builtin_rule(rule) or tracing() or not concrete(means):
    return
  from jbai.state import empty_stats, observe
  table = np.asarray(means, float)
  num_arms = table.shape[-1]
  first = jnp.asarray(table.reshape(-1, num_arms)[0])
  stats, state = empty_stats(family, num_arms, first.dtype), rule.init(num_arms)
  key = jax.random.key(0)
  for t in range(min(2 * num_arms, USER_RULE_STEPS)):
    arm, state = rule.select(jax.random.fold_in(key, 2 * t), family, stats, state)
    arm = np.asarray(arm)
    if arm.shape != () or not np.issubdtype(arm.dtype, np.integer):
      raise ValueError(f"rule {rule.name!r}: select must return one integer arm, got "
                       f"{shown(arm)} (dtype {arm.dtype}) at step {t}")
    if not 0 <= int(arm) < num_arms:
      raise ValueError(f"rule {rule.name!r} selected arm {int(arm)} at step {t} of a "
                       f"trial; the arms are 0 to {num_arms - 1}")
    reward = family.sample(jax.random.fold_in(key, 2 * t + 1), first[int(arm)])
    stats = observe(family, stats, jnp.asarray(arm, jnp.int32), reward)


def builtin_rule(rule: Rule) -> bool:
  """True for jbai's own rules (their arms are in range by construction)."""
  return getattr(rule.select, "__module__", "").startswith("jbai.")


_RULE_HINT = re.compile(r";\s*use\b.*$")


@functools.lru_cache(maxsize=256)
def rule_refusal(family, rule, num_arms: int) -> Optional[str]:
  """Why `rule` does not apply to `family` (None when it does), found by tracing
  its `select` on abstract values at the run's `num_arms` arms (no compilation):
  a rule refuses a family with a ValueError when it is traced. The rule's own
  advice is dropped (the caller suggests options checked against the whole
  command)."""
  from jbai.state import empty_stats
  try:
    jax.eval_shape(lambda key: rule.select(key, family, empty_stats(family, num_arms),
                                           rule.init(num_arms)), jax.random.key(0))
  except ValueError as e:
    reason = _RULE_HINT.sub("", str(e).splitlines()[0])
    return reason if repr(rule.name) in reason else f"rule {rule.name!r}: {reason}"
  return None


def as_family(family) -> Family:
  """A `Family` from a family or a built-in name."""
  if isinstance(family, str):
    family = families_lib.get(family)
  if not isinstance(family, Family):
    raise TypeError(f"family must be a jbai.families.Family or a name, got {family!r}")
  return family


def resolve(family, rule, threshold) -> tuple:
  """(Family, Rule, Threshold) from objects or names; raises ValueError where the
  threshold does not apply to the family."""
  family = as_family(family)
  rule = as_rule(rule)
  if rule.budget is not None:  # Rule.budget: a rule that runs only to a budget
    raise ValueError(f"rule {rule.name!r} samples with a fixed budget and never stops by "
                     "itself: run it to a budget with jbai.budget (jbai run --budget T)")
  if threshold is None:  # the rule's own stop (jbai.stops), else the GLLR with gk16
    threshold = stops_lib.own_stop(rule) or "gk16"
  if isinstance(threshold, str):
    threshold = thresholds_lib.get(threshold)
  if not isinstance(threshold, (Threshold, stops_lib.Stop)):
    raise TypeError(f"threshold must be a jbai.thresholds.Threshold, a jbai.stops.Stop "
                    f"or a name, got {threshold!r}")
  if isinstance(threshold, Threshold):
    thresholds_lib.check(threshold, family)
  stops_lib.check(threshold, rule, family)
  return family, rule, threshold


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


# ---------------------------------------------------------------- delta

class Levels(NamedTuple):
  """Confidence levels, checked: each as a float64 and as log(1/delta)."""

  values: np.ndarray   # [D] float64, delta (0.0 for a level typed below float64's range)
  log_inv: np.ndarray  # [D] float64, log(1/delta) > 0
  texts: tuple         # [D] str, each level as given (for messages and run specs)


def _level(entry) -> tuple:
  """(delta as float64, log(1/delta), text) of one level: a number or its text."""
  if isinstance(entry, (bool, np.bool_)):
    raise TypeError(f"delta must be a number in (0, 1), got {entry!r}")
  if isinstance(entry, str):
    text = entry.strip()
    try:
      exact = decimal.Decimal(text)
    except decimal.InvalidOperation:
      raise ValueError(f"delta must be a number in (0, 1), got {entry!r}") from None
    if not (exact.is_finite() and 0 < exact < 1):
      raise ValueError(f"delta must be in (0, 1), got {text}")
    # log10(delta) = log10(mantissa) + exponent, exact at any exponent.
    exponent = exact.adjusted()
    mantissa = float(exact.scaleb(-exponent))
    log_inv = -(math.log10(mantissa) + exponent) * math.log(10)
    return float(exact), log_inv, text
  if isinstance(entry, numbers.Number) or (isinstance(entry, np.ndarray) and entry.ndim == 0):
    value = float(entry)
    if not 0.0 < value < 1.0:
      raise ValueError(f"delta must be in (0, 1), got {entry!r}" + (
          " (a level below float64's range is given as text, e.g. '1e-400')"
          if value == 0.0 else ""))
    return value, -math.log(value), repr(value)
  raise TypeError(f"delta must be a number in (0, 1) or a list of them, got {entry!r}")


def parse_delta(delta) -> Levels:
  """Checks delta (a level or a 1-d list of levels, numbers or their text) and
  carries each as log(1/delta).

  A level given as text keeps its digits at any magnitude ("1e-400"), and every
  error names the level as it was given.

  Args:
    delta: a number or a string in (0, 1), or a 1-d sequence or array of them.

  Returns:
    `Levels`.

  Raises:
    ValueError: for a level outside (0, 1), NaN, or an empty or nested list.
    TypeError: for a value that is not a number or its text.
  """
  if isinstance(delta, Levels):
    return delta
  if isinstance(delta, (str, numbers.Number)):
    entries = [delta]
  else:
    arr = np.asarray(delta, dtype=object) if not isinstance(delta, jax.Array) else \
        np.asarray(delta)
    if arr.ndim > 1 or arr.size == 0:
      raise ValueError(f"delta must be a number or a 1-d list of numbers, got {delta!r}")
    entries = list(np.atleast_1d(arr))
  parsed = [_level(e.item() if isinstance(e, np.generic) else e) for e in entries]
  return Levels(np.array([p[0] for p in parsed], np.float64),
                np.array([p[1] for p in parsed], np.float64), tuple(p[2] for p in parsed))


def check_delta(delta) -> np.ndarray:
  """Validates delta (a scalar or a vector, numbers or their text), every entry
  in (0, 1); returns the levels as float64 (see `parse_delta`)."""
  return parse_delta(delta).values


def log_inv_delta(delta) -> np.ndarray:
  """[D] float64 log(1/delta), exact for levels typed below float64's range."""
  return parse_delta(delta).log_inv


def _builtin(threshold: Threshold) -> bool:
  """True for a threshold whose init takes a `LogDelta` (jbai's own)."""
  return getattr(threshold.init, "__module__", "").startswith(("jbai.thresholds",
                                                                 "jbai.stops"))


def threshold_params(threshold: Threshold, delta, num_arms: int, dtype):
  """threshold.init for concrete levels `delta`, in `dtype`.

  Levels in the dtype's normal range reach `init` as a [D] array, as they
  always have (the thresholds are the same to the bit); smaller ones (float32:
  below 1.2e-38, which would round to 0 and never let a trial stop) reach it as
  `LogDelta`, log(1/delta) computed in float64 and rounded once.

  Raises:
    ValueError: for such a level with a threshold of the user's, whose init
      takes delta itself (naming the level and the ways around).
  """
  levels = parse_delta(delta)
  if np.all(levels.values >= np.finfo(dtype).tiny):
    return threshold.init(jnp.asarray(levels.values, dtype), num_arms)
  if not _builtin(threshold):
    small = levels.texts[int(np.argmin(levels.values))]
    raise ValueError(
        f"delta {small} is below {np.dtype(dtype).name}'s smallest normal number "
        f"{np.finfo(dtype).tiny:.3g}, and threshold {threshold.name!r} takes delta itself; "
        "use a built-in threshold (they take log(1/delta)) or JAX_ENABLE_X64=1")
  return threshold.init(LogDelta(jnp.asarray(levels.log_inv, dtype)), num_arms)


# ---------------------------------------------------------------- counts and keys

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
  traced value passes through (see the module docstring).

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


# ---------------------------------------------------------------- the rule's parameters

def check_runtime(rule: Rule, names) -> None:
  """Raises ValueError for a name that is not a runtime parameter of the rule."""
  unknown = set(names) - set(rule.runtime)
  if unknown:
    raise ValueError(f"rule {rule.name!r} has no runtime parameter {sorted(unknown)[0]!r}; "
                     f"its runtime parameters are {list(rule.runtime)}")


def check_params(rule: Rule, params: Optional[dict], shapes: Optional[dict] = None) -> dict:
  """The rule's runtime parameters {name: value}, checked: each a runtime
  parameter of the rule, of the shape of the rule's own value (`shapes`, {name:
  shape}; default: a scalar, vmap for several values) and, where concrete, in its
  domain (beta in (0, 1), eps > 0 and finite: the rule factories' checks; other
  values finite). Traced values pass through."""
  if params is None:
    return {}
  if not isinstance(params, dict):
    raise TypeError(f"params must be a dict {{name: value}}, got {params!r}")
  check_runtime(rule, params)
  for name, value in params.items():
    if not concrete(value):
      continue
    if isinstance(value, (bool, np.bool_)) or not (
        isinstance(value, numbers.Real) or np.issubdtype(np.asarray(value).dtype, np.number)):
      raise TypeError(f"params[{name!r}] must be a number, got {shown(value)}")
    shape = tuple((shapes or {}).get(name, ()))
    if np.shape(value) != shape:
      expected = "a scalar (jax.vmap over several values)" if not shape else f"of shape {shape}"
      raise ValueError(f"params[{name!r}] must be {expected}, got shape {np.shape(value)}")
    lo, hi, text = RUNTIME_DOMAINS.get(name, (-math.inf, math.inf, "finite"))
    v = np.asarray(value, float)
    if not np.all((lo < v) & (v < hi)):
      raise ValueError(f"{name} must be {text}, got {shown(value)}")
  return dict(params)


def initial_rule_state(rule: Rule, num_arms: int, params: Optional[dict]):
  """rule.init(num_arms) with the runtime parameters `params` (checked where
  concrete, possibly traced) in place of the values the rule was built with."""
  state = rule.init(num_arms)
  shapes = {k: jnp.shape(getattr(state, k)) for k in (params or {}) if k in rule.runtime}
  params = check_params(rule, params, shapes)
  if params:
    state = state._replace(
        **{k: jnp.asarray(v, getattr(state, k).dtype) for k, v in params.items()})
  return state


# ---------------------------------------------------------------- means

def check_table(family: Family, means, dtype=None, problem=None) -> np.ndarray:
  """Concrete means checked (`jbai.families.base.check_means`, ties judged in
  the simulation's float dtype too), as a float64 array; for a question beyond the
  best arm (`problem`), its own identifiability instead of a unique best arm
  (`jbai.problems.check`)."""
  dtype = dtype or jnp.result_type(float)
  if problem is not None:
    return problems_lib.check(problem, family, means, dtype)
  return check_means(family, means, dtype=dtype)


def check_eps_slack(family: Family, threshold) -> None:
  """An eps-good run's slack (the eps of its stop, `jbai.stops.eps_of`) below the
  width of Theta, as the eps oracle requires (`jbai.oracle.check_eps`): at or
  beyond it every arm is eps-good under every instance, T*_eps = 0, and nothing
  is to be identified. The run, its summary and a study refuse it alike."""
  eps = stops_lib.eps_of(threshold)
  if eps > 0:
    check_eps(family, eps)


def check_separable(family: Family, table: np.ndarray) -> list:
  """(w, Gamma) of the exact oracle for each instance of the [I, K] table, after
  checking that Gamma(nu) > 0: the best arm can be told apart in the simulation's
  float dtype. Means distinct in float64 but equal in float32 (1, 1 + 1e-8), a
  gap whose divergence rounds to 0, or an infinite sigma give Gamma(nu) = 0, so
  that no trial could stop and T*(nu) would be infinite: refused before a run.

  Raises:
    ValueError: naming the instance.
  """
  from jbai.oracle import optimal
  out = []
  for row in table:
    w, gam = optimal(family, row)
    if not (math.isfinite(gam) and gam > 0):
      raise ValueError(
          f"the best arm of means {row.tolist()} cannot be told apart in "
          f"{np.dtype(jnp.result_type(float)).name} by the {family!r} family: Gamma(nu) = "
          f"{gam!r}, T*(nu) is infinite; separate the best arm more (or use JAX_ENABLE_X64=1)")
    out.append((w, gam))
  return out


# ---------------------------------------------------------------- memory

MEMORY_ENV = "JBAI_MEMORY_LIMIT"


def _parse_bytes(text: str) -> int:
  units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
  t = text.strip().upper().rstrip("B").rstrip("I")
  unit = t[-1] if t and t[-1] in units else ""
  try:
    return int(float(t[:len(t) - len(unit)]) * units[unit])
  except ValueError:
    raise ValueError(f"{MEMORY_ENV}={text!r} is not a size such as 64G or 500M") from None


def memory_limit() -> tuple:
  """(bytes a run's results may take, where that limit comes from): the
  environment variable JBAI_MEMORY_LIMIT (64G, 500M, bytes) if set, else the
  memory available now (/proc/meminfo's MemAvailable; 16 GiB if unknown)."""
  if os.environ.get(MEMORY_ENV):
    return _parse_bytes(os.environ[MEMORY_ENV]), f"{MEMORY_ENV}"
  try:
    with open("/proc/meminfo", encoding="ascii") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024, "the memory available now"
  except OSError:
    pass
  return 16 * 2**30, "a default of 16 GiB"


def _size(n: float) -> str:
  for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
    if n < 1000 or unit == "PB":
      return f"{n:.3g} {unit}"
    n /= 1000
  return f"{n:.3g} PB"


def check_memory(what: str, n_results: int, bytes_per_result: int, copies: int = 3) -> int:
  """Refuses a run whose per-trial results would not fit in memory, before it starts.

  A run's result arrays are O(trials): `n_results` rows of `bytes_per_result`
  bytes, held about `copies` times at once (the arrays being filled, the records
  of a chunk, the finished arrays handed back).

  Returns:
    The estimate in bytes.

  Raises:
    ValueError: naming the estimate, the limit and how to raise it.
  """
  need = int(n_results) * int(bytes_per_result) * copies
  limit, source = memory_limit()
  if need > limit:
    raise ValueError(
        f"{what} needs about {_size(need)} of memory for its per-trial results, more than "
        f"the limit of {_size(limit)} ({source}); run fewer trials per call, or set "
        f"{MEMORY_ENV} (e.g. {MEMORY_ENV}=64G) to raise the limit")
  return need


def trial_bytes(num_arms: int, n_deltas: int, scores: bool, stat_dim: int = 2) -> int:
  """Bytes of one trial's results: index, answer, correct, hit_cap (4 bytes each),
  tau, counts, steps (4 bytes each, 8 with 64-bit counts) and, with scores,
  final_stats, reward and policy scores."""
  wide = np.dtype(count_dtype()).itemsize // 4  # 4-byte words of a count
  n = 1 + 3 * n_deltas + wide * (1 + n_deltas + num_arms)
  if scores:
    n += num_arms * stat_dim + n_deltas * num_arms + 2 * n_deltas
  return 4 * n


def raw_key(key) -> jax.Array:
  """The raw uint32 data of a typed key (jax.random.key) or of a raw key (PRNGKey)."""
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    return jax.random.key_data(key)
  return key


def concrete(x) -> bool:
  """True when no leaf of x is traced (x can be checked now)."""
  return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(x))


def tracing() -> bool:
  """True inside a JAX trace that stages every operation out (the caller's
  `jax.jit`), where no value computed here can be read back."""
  return isinstance(jnp.zeros(()) + 0, jax.core.Tracer)


def refuse_traced(function: str, instead: str, **values) -> None:
  """Raises TypeError where a host-side function meets a traced value (it was
  called under jax.jit, vmap or grad), naming the pure function that runs there."""
  for name, value in values.items():
    if not concrete(value):
      raise TypeError(
          f"{function} runs on the host and cannot take a traced {name!r} (it was called "
          f"under jax.jit, jax.vmap or jax.grad); inside traced code use {instead}")
