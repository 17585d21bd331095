"""The stopping-threshold interface, and which threshold applies to which family.

A threshold beta_t(delta) of the GLLR stopping rule (the paper's eq. stop) is a
NamedTuple of two pure functions:

  init(delta, num_arms) -> params      delta: [D] confidence levels; params: pytree
  value(params, family, arm_stats, top, ch) -> [D]   beta_t(delta) for each delta

`init` runs once per simulation (inside jit), so that work depending on delta
alone (a calibration function, say) is not repeated every step. The engine stops a
trial for level delta_d at the first t with Lambda_t(top, ch) > value[d].

The union bound. A proven threshold bounds the deviation of the GLLR on one
piece of the alternatives at level delta / P and takes a union bound over the P
pieces that the truth fixes: P = K - 1 for the best arm (its pairs (a*, j)),
m (K - m) for the top m, K for thresholding (`jbai.problems.Problem.pieces`).
Such a threshold says so with `union = True`, and its init then takes the count:
init(delta, num_arms, pieces=P), P = K - 1 when not given (the best arm's, so
that the best arm's thresholds are unchanged); the GLLR stop of a question
(`jbai.stops.answer_gllr`) passes its problem's count. Which threshold is proven
for which question is in docs/guide/stops.md.

Whether a threshold is proven for a family is decided by `refusal` and checked at
the Python boundary by `check`, which raises ValueError when it is not.
"""

import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.builders import fields_equal
from jbai.families.base import Family

# Thresholds in the order they are suggested when one does not apply: proven
# ones first, the heuristic last.
PREFERRED = ("linear-sn", "kk", "uv", "ev", "bounded", "paper", "gk16")

# The Gaussian models whose pair bound is the Gaussian one of Jourdan et al. (2022),
# each arm's deviation normalised by its own known sigma (`kk`'s calibration).
GAUSSIAN_KNOWN = ("gaussian", "gaussian-het")
# The models of Gaussian arms with unknown variances and the thresholds proven for
# their GLLR (`jbai.thresholds.variance`): Z_uv <= Z_ev <= c_ev, so `ev` holds for both.
UNKNOWN_VARIANCE = {"gaussian-ev": ("ev",), "gaussian-uv": ("uv", "ev")}


class Threshold(NamedTuple):
  name: str
  init: Callable[[jax.Array, int], Any]
  value: Callable[..., jax.Array]
  params: tuple = ()
  union: bool = False  # init takes pieces=P, the pieces of its union bound (module docstring)

  def __repr__(self):
    return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params)})"

  def __hash__(self):
    return hash((self.name, self.params))

  def __eq__(self, other):
    # Equal fields, the functions the same objects (jbai.builders).
    return isinstance(other, Threshold) and fields_equal(self, other)

  def __ne__(self, other):
    return not self == other


class LogDelta(NamedTuple):
  """Confidence levels given by log(1/delta), for levels below the float dtype's
  smallest normal number (float32: 1.2e-38), where delta itself would round to 0
  or lose its digits while log(1/delta) is an ordinary number.

  The built-in thresholds need only log(1/delta) (`log_inv_delta`, `log_ratio`);
  `jbai.core.inputs.threshold_params` hands them a LogDelta for such levels and
  the plain [D] array of levels otherwise (so that the thresholds of ordinary
  levels are computed exactly as before).
  """

  log_inv: jax.Array  # [D] float, log(1/delta) > 0


def pieces_of(num_arms: int, pieces=None) -> int:
  """The number of pieces of a union bound: `pieces`, or K - 1 (the best arm's)."""
  return num_arms - 1 if pieces is None else pieces


def float_delta(delta: ArrayLike) -> jax.Array:
  """delta as a float array (ints and Python floats promoted)."""
  delta = jnp.asarray(delta)
  if not jnp.issubdtype(delta.dtype, jnp.floating):
    delta = delta * 1.0
  return delta


def log_inv_delta(delta) -> jax.Array:
  """[D] log(1/delta) of an array of levels or of a `LogDelta`."""
  if isinstance(delta, LogDelta):
    return jnp.asarray(delta.log_inv)
  return -jnp.log(float_delta(delta))


def log_ratio(numerator: float, delta) -> jax.Array:
  """[D] log(numerator / delta) of an array of levels or of a `LogDelta`
  (log(numerator) + log(1/delta): no division by a delta that underflows)."""
  if isinstance(delta, LogDelta):
    return math.log(numerator) + jnp.asarray(delta.log_inv)
  return jnp.log(numerator / float_delta(delta))


def _reason(name: str, family: Family) -> Optional[str]:
  """`refusal` for the threshold of this name."""
  linear = family.name == "linear" and "features" in dict(family.params)
  if name == "linear-sn" and not linear:
    return (f"threshold 'linear-sn' is the linear model's (jbai.linear.linear_family), "
            f"not the {family.name!r} family's")
  if name == "paper":
    curvature = family.curvature
    if curvature is None or not curvature > 0:
      return (f"threshold 'paper' does not apply to the {family.name!r} family: it "
              "needs Assumption 7 (-d^2/dm^2 log pi(x|m) >= sigma^2 > 0), and the "
              f"family's curvature is {curvature!r}")
    if not math.isfinite(family.hi - family.lo):
      return (f"threshold 'paper' needs a bounded Theta; the {family.name!r} family "
              f"has Theta = [{family.lo}, {family.hi}]")
  elif name in ("ev", "uv") and name not in UNKNOWN_VARIANCE.get(family.name, ()):
    fits = [f for f, names in UNKNOWN_VARIANCE.items() if name in names]
    return (f"threshold {name!r} calibrates the GLR of Gaussian arms with unknown "
            f"variances (families {', '.join(fits)}), not the {family.name!r} family")
  elif name == "bounded" and family.name != "bounded":
    return (f"threshold 'bounded' calibrates the KL_inf GLR of arms in [0, 1] (family "
            f"bounded, --laws), not the {family.name!r} family")
  elif name == "kk" and not family.exponential:
    return (f"threshold 'kk' is proven for one-parameter exponential families, and "
            f"the {family.name!r} family is not one (family.exponential is False)")
  return None


def refusal(threshold: Threshold, family: Family) -> Optional[str]:
  """Why a threshold does not apply to a family, or None when it does.

  * `paper` needs the family's Assumption 7 constant (`family.curvature`;
    Poisson, exponential and, by default, Weibull rewards have none) and a
    bounded Theta.
  * `kk` is proven for one-parameter exponential families in some sufficient
    statistic (`family.exponential`: every family built with
    `jbai.families.exponential_family`, and `weibull`, exponential in x^k).
  * `ev` is proven for the unknown-variance models' EV-GLR and GLR (families
    gaussian-ev and gaussian-uv), `uv` for the GLR alone (gaussian-uv).
  * `linear-sn` is the linear model's (`jbai.thresholds.linear`).
  * `bounded` is proven for the bounded model's KL_inf GLR (family bounded) alone.
  * `gk16` (a heuristic) and thresholds unknown to this module apply to every
    family.

  Args:
    threshold: the stopping threshold.
    family: the reward family.

  Returns:
    A one-line reason naming the threshold and the family, or None.
  """
  return _reason(threshold.name, family)


def check(threshold: Threshold, family: Family) -> None:
  """Checks at the Python boundary that a threshold applies to a family.

  See `refusal` for the conditions.

  Args:
    threshold: the stopping threshold.
    family: the reward family.

  Returns:
    None.

  Raises:
    ValueError: naming the threshold, the family and the thresholds that apply
      to it, when this one does not.
  """
  reason = refusal(threshold, family)
  if reason is not None:
    usable = [name for name in PREFERRED if _reason(name, family) is None]
    raise ValueError(f"{reason}; use threshold {' or '.join(map(repr, usable))}")
