"""The linear bandit as a `Family`: what the engine, the GLLR stop and the rules see.

Arm a has features x_a (row a of X, [K, d]) and Gaussian rewards N(x_a^T theta,
sigma^2) of a known sigma (Soare, Lazaric & Munos 2014). The engine keeps the
Gaussian family's per-arm statistics (`jbai.state.ArmStats`: counts N [K],
summed rewards S [K, 1]), which determine the linear state for fixed arms
(docs/design/linear.md); the family reads them through the whole arm axis:

  * `mean` = `mle`: X theta_hat, with theta_hat = V^-1 b the ridge least squares
    V = lambda I + X^T diag(N / sigma^2) X, b = X^T S / sigma^2
    (`jbai.linear.statistics.from_counts`). Not elementwise: it takes [..., K]
    counts and [..., K, 1] sums (the engine calls it so only, in
    `jbai.state.arm_stats`). O(K d^2 + d^3) a call, a d x d solve.
  * `pair_costs(w, means, leader)`: the transport costs of the linear model, the
    cheapest half-space {lambda: y^T lambda <= 0} of the alternative,
    (y^T theta)_+^2 / (2 ||y||^2_{A(w)^-1}), y = x_leader - x_j,
    A(w) = lambda I + sum_a w_a x_a x_a^T / sigma^2 (`jbai.linear.gllr`, Jedra &
    Proutiere 2020 eq. (8)). With w = N_t (the GLLR stop, TCB, the top-two
    challengers, all of which weigh by counts) A(w) = V_t and the cost is the
    linear GLLR's; y^T theta is read as m_leader - m_j from the means, which lie in
    X's column space (X theta).
  * `solve(means)`: `jbai.linear.linear_solve` at theta = X^+ means: (w*, 1/T*),
    by its ascent alone (SOLVE_STEPS = 500 steps, no polish: 14 times cheaper at
    K = 3, and the same T* to 1e-4 on the Soare instance down to omega = 0.05 in
    float32), since Track-and-Stop solves it at every step; `jbai oracle` and
    `linear_solve` itself run the full solver with its certificate.
  * `posterior_sample`: X theta~ with theta~ ~ N(theta_hat, V^-1), the posterior
    of theta under the prior N(0, I / lambda) (scaled by sigma^2), so that the
    Thompson-sampling leaders of the top-two rules see the shared theta.
  * kl, sample, stat, fisher, log_density, score: the Gaussian family's
    (`jbai.families.gaussian`): given the means the rewards are independent
    Gaussians.

The features, sigma and the ridge are the family's params (`Arms`, a tuple of
rows with a short repr), so that families with other arms are other families and
compile their own programs. The ridge must be > 0 (lambda = 1 is the choice of
FWS's and LinBAI.jl's codes, which also pull each arm first; jbai's rules do their
own initial pulls). One sigma for every arm here (the model of
`jbai.linear.model` allows one per arm; the family does not yet).

The thresholds `kk` and `paper` (proven for independent arms) do not apply
(`exponential` False, no `curvature`); `gk16` and the linear ones of
`jbai.thresholds` (`linear-sn`, proven; `linear-gk16`) do.
"""

import hashlib
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.builders import cached
from jbai.families.base import Family
from jbai.families.gaussian import gaussian
from jbai.linear.model import check_linear
from jbai.linear.oracle import linear_solve

NAME = "linear"
THETA_SPACE = 1e4  # Theta = [-1e4, 1e4], the Gaussian family's
SOLVE_STEPS = 500  # the ascent of `solve`, without the polish (module docstring)


class Arms(tuple):
  """The arms' features as a tuple of rows (hashable, exact); repr 'KxD#digest'."""

  def __repr__(self):
    digest = hashlib.sha1(np.asarray(self, np.float64).tobytes()).hexdigest()[:8]
    return f"{len(self)}x{len(self[0])}#{digest}"


class LinearSpec(NamedTuple):
  """What a linear family was built from."""

  features: np.ndarray  # [K, d] float64
  sigma: float
  ridge: float


def check_features(features: ArrayLike) -> np.ndarray:
  """[K, d] float64 features: a matrix of finite numbers, K >= 2, spanning R^d.

  Raises:
    ValueError: naming the bad value.
  """
  try:
    x = np.asarray(features, dtype=float)
  except (TypeError, ValueError):
    raise ValueError(f"features must be a [K, d] matrix of numbers, got {features!r}"[:200]) \
        from None
  if x.ndim != 2 or x.shape[1] < 1:
    raise ValueError(f"features must be a [K, d] matrix, got shape {x.shape}")
  if x.shape[0] < 2:
    raise ValueError(f"need at least two arms, got K={x.shape[0]}: {x.tolist()}")
  if not np.all(np.isfinite(x)):
    raise ValueError(f"features must be finite, got {x.tolist()}"[:200])
  rank = np.linalg.matrix_rank(x)
  if rank < x.shape[1]:
    raise ValueError(f"the features do not span R^{x.shape[1]}: their rank is {rank}; drop "
                     "the dimensions they do not reach or add arms that do")
  return x


def linear_family(features: ArrayLike, sigma: float = 1.0, ridge: float = 1.0) -> Family:
  """The linear bandit with arms `features` as a `Family` (module docstring).

  Args:
    features: [K, d] arm features, spanning R^d.
    sigma: the noise's standard deviation (one for every arm), > 0.
    ridge: lambda > 0 of the ridge least squares.

  Returns:
    The family; the same object for the same arguments.

  Raises:
    ValueError: for features that are not a [K, d] matrix of finite numbers
      spanning R^d, K < 2, sigma <= 0 or ridge <= 0.

  Example:
    >>> fam = linear_family([[1, 0], [0, 1], [0.6, 0.8]])
    >>> fam
    linear(lo=-10000.0, hi=10000.0, features=3x2#..., sigma=1.0, ridge=1.0)
  """
  x = check_features(features)
  for name, value in (("sigma", sigma), ("ridge", ridge)):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
        or not np.isfinite(value) or not value > 0:
      raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
  arms = Arms(tuple(float(v) for v in row) for row in x)
  return _build(arms, float(sigma), float(ridge))


def is_linear(family) -> bool:
  """True for a family built by `linear_family`."""
  return isinstance(family, Family) and family.name == NAME and \
      isinstance(dict(family.params).get("features"), Arms)


def spec_of(family: Family, who: str = "this") -> LinearSpec:
  """The features, sigma and ridge of a linear family.

  Raises:
    ValueError: one line, for a family that is not linear (`who` names the
      caller: "rule 'xy-static'").
  """
  if not is_linear(family):
    raise ValueError(f"{who} runs on the linear model only (jbai.linear.linear_family, on "
                     f"the command line --arms/--theta), not on the "
                     f"{getattr(family, 'name', family)!r} family")
  p = dict(family.params)
  return LinearSpec(np.asarray(p["features"], np.float64), p["sigma"], p["ridge"])


def linear_means(family: Family, theta: ArrayLike) -> np.ndarray:
  """[K] the means X theta of a linear family at theta, checked (`check_linear`:
  theta's length, a tied or duplicate best arm).

  Raises:
    ValueError: naming the bad value.
  """
  spec = spec_of(family, "linear_means")
  x, th, _ = check_linear(spec.features, theta, spec.sigma)
  return x @ th


def design_inverse(family: Family, counts: jax.Array, dtype) -> tuple:
  """(X [K, d], V_t^-1 [d, d]) of a linear family at the counts N_t, in `dtype`:
  V_t = lambda I + X^T diag(N_t / sigma^2) X (jit-able; the features a constant).

  Raises:
    ValueError: for a family that is not linear (`spec_of`).
  """
  spec = spec_of(family, "design_inverse")
  x = jnp.asarray(spec.features, dtype)
  v = _design(x, jnp.asarray(counts).astype(dtype), spec.sigma ** 2, spec.ridge)
  v_inv = jnp.linalg.inv(v)
  return x, 0.5 * (v_inv + v_inv.T)


def direction_gain(x: jax.Array, v_inv: jax.Array, y: jax.Array, sigma: float) -> jax.Array:
  """[K] how much one more pull of each arm shrinks ||y||^2_{V^-1} (Sherman-Morrison):
  (x_a^T V^-1 y)^2 / (sigma^2 + x_a^T V^-1 x_a), the greedy selection of LinGapE
  (Xu et al. 2018, eq. (9)) that `lingape` and `tcb-linear` pull by."""
  u = x @ (v_inv @ y)
  return u ** 2 / (sigma ** 2 + jnp.einsum("ka,ab,kb->k", x, v_inv, x))


def _design(x, w, var, ridge):
  """[..., d, d] lambda I + X^T diag(w / sigma^2) X."""
  eye = jnp.eye(x.shape[1], dtype=x.dtype)
  return ridge * eye + jnp.einsum("ka,...k,kb->...ab", x, w / var, x)


def _estimate(x, n, sums, var, ridge):
  """(V [..., d, d], theta_hat [..., d]) from counts [..., K] and sums [..., K]."""
  v = _design(x, n.astype(x.dtype), var, ridge)
  b = jnp.einsum("ka,...k->...a", x, sums / var)
  return v, jnp.linalg.solve(v, b[..., None])[..., 0]


@cached
def _build(arms: Arms, sigma: float, ridge: float) -> Family:
  base = gaussian(sigma)
  features = np.asarray(arms, np.float64)
  pinv = np.linalg.pinv(features)  # [d, K]: theta = X^+ means in X's column space
  var = sigma * sigma

  def consts(dtype):
    return jnp.asarray(features, dtype), var, ridge

  def mean(n, stats):
    stats = jnp.asarray(stats)
    x, var_, lam = consts(stats.dtype)
    _, theta = _estimate(x, jnp.asarray(n), stats[..., 0], var_, lam)
    return jnp.clip(theta @ x.T, -THETA_SPACE, THETA_SPACE)

  def pair_costs(w, means, leader, stats):
    del stats
    means = jnp.asarray(means)
    means = means if jnp.issubdtype(means.dtype, jnp.floating) else means * 1.0
    x, var_, lam = consts(means.dtype)
    w = jnp.asarray(w, means.dtype)
    leader = jnp.asarray(leader)
    lead = jnp.broadcast_shapes(w.shape[:-1], means.shape[:-1], leader.shape)
    w, means = (jnp.broadcast_to(v, lead + v.shape[-1:]) for v in (w, means))
    leader = jnp.broadcast_to(leader, lead)
    a_inv = jnp.linalg.inv(_design(x, w, var_, lam))             # [..., d, d]
    y = x[leader][..., None, :] - x                              # [..., K, d]
    norm = jnp.einsum("...ka,...ab,...kb->...k", y, a_inv, y)
    m_lead = jnp.take_along_axis(means, leader[..., None], axis=-1)
    margin = jnp.maximum(m_lead - means, 0.0)
    safe = jnp.where(norm > 0, norm, 1.0)
    costs = jnp.where(norm > 0, margin ** 2 / (2 * safe), jnp.where(margin > 0, jnp.inf, 0.0))
    is_leader = jnp.arange(x.shape[0]) == leader[..., None]
    return jnp.where(is_leader, jnp.inf, costs)

  def solve(means):
    means = jnp.asarray(means)
    theta = jnp.asarray(pinv, means.dtype) @ means
    sol = linear_solve(jnp.asarray(features, means.dtype), theta, sigma, steps=SOLVE_STEPS,
                       polish=False)
    return sol.w, sol.gamma

  def posterior_sample(key, n, stats):
    stats = jnp.asarray(stats)
    x, var_, lam = consts(stats.dtype)
    v, theta = _estimate(x, jnp.asarray(n), stats[..., 0], var_, lam)
    chol = jnp.linalg.cholesky(jnp.linalg.inv(v))
    z = jax.random.normal(key, theta.shape, theta.dtype)
    draw = theta + jnp.einsum("...ab,...b->...a", chol, z)
    return jnp.clip(draw @ x.T, -THETA_SPACE, THETA_SPACE)

  return Family(
      name=NAME, lo=-THETA_SPACE, hi=THETA_SPACE, kl=base.kl, sample=base.sample, stat_dim=1,
      stat=base.stat, mean=mean, mle=mean, fisher=base.fisher, log_density=base.log_density,
      posterior_sample=posterior_sample, curvature=None,
      params=(("features", arms), ("sigma", sigma), ("ridge", ridge)), exponential=False,
      score=base.score, pair_costs=pair_costs, solve=solve)


# The registered rules that run on the linear model: those that read the
# question's costs (`jbai.transport.pair_costs`), the oracle
# (`jbai.oracle.exact_solve`) or nothing of the family, and the linear rules.
# The others read kl per arm (confidence bounds, eliminations, Frank-Wolfe's
# subgradients, the warm oracle) and are refused.
RULES = frozenset({"tcb", "itcb", "uniform", "t3c", "ebtc", "ebtci", "best-challenger",
                   "tas-c", "tas-d", "t3c-tuned", "xy-static", "lingape", "tcb-linear"})
EXACT_ORACLE = frozenset({"tas-c", "tas-d", "best-challenger", "t3c-tuned"})
LINEAR_ONLY = frozenset({"xy-static", "lingape", "tcb-linear"})  # they refuse every other family


def rule_refusal(rule) -> Optional[str]:
  """Why a registered rule does not run on the linear model (None when it does):
  it is not in `RULES`, or it tracks the oracle with the warm solver, which solves
  for independent arms (use solver='exact', the linear oracle)."""
  name = getattr(rule, "name", "?")
  select = getattr(rule, "select", None)
  if not getattr(select, "__module__", "").startswith("jbai."):
    return None  # a user's rule: its own business
  if name not in RULES:
    return (f"rule {name!r} does not run on the linear model (it reads per-arm kl); "
            f"use one of {sorted(RULES)}")
  solver = dict(getattr(rule, "params", ())).get("solver")
  if name in EXACT_ORACLE and solver not in (None, "exact"):
    return (f"rule {name!r} with solver={solver!r} solves for independent arms; on the "
            "linear model build it with solver='exact' (the linear oracle)")
  return None


__all__ = ["Arms", "LINEAR_ONLY", "LinearSpec", "NAME", "RULES", "check_features", "design_inverse",
           "direction_gain", "is_linear",
           "linear_family", "linear_means", "rule_refusal", "spec_of"]
