"""The reward-family interface shared by every family in jbai.

A family is a set of distributions on the real line parameterised by their mean
m in a compact mean space Theta = [lo, hi] (the paper's Assumption 1). jbai only
ever touches a family through the fields of `Family`, so a user adds a family by
building one of these records in their own code (see docs/guide/custom-family.md).

Per-arm data are kept as fixed-size sufficient statistics: a trial accumulates
`stat(x)` (shape [stat_dim]) over the rewards x of each arm, and `stats[..., 0]`
is always the sum of the rewards, so that the sample mean is available for every
family. The MLE is computed from the same statistics by `mle`.

Two families are equal when every field is, functions compared by identity
(jbai.builders): the built-in factories and `exponential_family` return the same
object for the same arguments, and a user's lookalike is another family.
"""

from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.builders import cached, fields_equal


class Family(NamedTuple):
  """A mean-parameterised reward family.

  Every function is pure, elementwise (it broadcasts over leading axes) and
  jit/vmap/grad friendly.

  Attributes:
    name: short name, used on the command line.
    lo: lower end of the mean space Theta.
    hi: upper end of the mean space Theta.
    kl: kl(m, m2) = KL(P_m || P_m2), elementwise.
    sample: sample(key, means) -> one reward per mean, same shape as `means`.
    stat_dim: number S of sufficient statistics accumulated per arm.
    stat: stat(x) -> [..., S] contribution of reward x; stat(x)[..., 0] == x.
    mean: mean(n, stats) -> sample mean projected on Theta ([...], stats [..., S]).
    mle: mle(n, stats) -> maximum-likelihood mean projected on Theta.
    fisher: fisher(m) -> Fisher information of the mean parameter.
    log_density: log_density(x, m) -> log pi(x | m).
    transport_x: optional closed-form minimiser x*(w_a, m_a, w_b, m_b) of
      w_a kl(m_a, x) + w_b kl(m_b, x); None means golden-section search.
    posterior_sample: optional posterior_sample(key, n, stats) -> one draw of
      each arm's mean from the conjugate posterior (used by Thompson-sampling
      rules), projected on Theta.
    curvature: optional sigma^2 > 0 with -d^2/dm^2 log pi(x | m) >= sigma^2 for
      every x and m in Theta (the paper's Assumption 7), used by the `paper`
      stopping threshold.
    params: the family's parameters, for display (e.g. {"sigma": 1.0}).
    exponential: True for a one-parameter exponential family in some sufficient
      statistic T(x) (T(x) = x, or x^k for the Weibull family), with `mle` its
      maximum-likelihood mean; the `kk` threshold is proven for these.
    score: optional score(n, stats, m) -> sum over the rewards summarised by
      (n, stats) of d/dm log pi(x | m), elementwise in the arms; None: the
      simulator accumulates d/dm log_density reward by reward instead.
    sample_block: optional sample_block(key, m, n) -> [S] the summed sufficient
      statistics of n >= 1 rewards of mean m (scalar m and int32 n), drawn from
      their exact law in one go (a binomial for Bernoulli rewards), for rules
      that pull an arm many times in a row (`jbai.rules.base.Rule.pulls`).
    split_block: optional split_block(key, n, stats, m) -> [S] the summed
      sufficient statistics of the first m of n >= m >= 1 rewards whose statistics
      sum to `stats` ([S]), drawn from their exact conditional law given that sum
      (a hypergeometric for Bernoulli rewards, a Brownian bridge for Gaussian
      ones); m = n gives `stats` itself. The engine takes blocks of pulls in one
      step only for a family with both, and splits a block by this law wherever
      it must stop inside (a checkpoint, a reward at a time with scores), so that
      a block's rewards do not depend on where it is cut (`jbai.core.lane`).
    pair_costs: optional pair_costs(w [..., K], means [..., K], leader [...], stats)
      -> [..., K], the transport costs from the leader to every arm (+inf at the
      leader), for a model whose arms are not independent or whose costs need
      more than the means (a linear bandit's shared theta, a variance estimated
      from `stats`, [..., K, S] or None); None: the pair costs of `kl`
      (`jbai.transport.pair_costs` dispatches to it).
    solve: optional solve(means [K]) -> (w [K], gamma []), the oracle of such a
      model (`jbai.oracle.exact_solve` dispatches to it); None: the nested
      bisection on `kl`.
    sample_arm: optional sample_arm(key, means [K], arm []) -> one reward of arm
      `arm`, for a model whose arms' laws differ beyond their means (a standard
      deviation per arm); None: sample(key, means[arm]). The engine draws
      every reward through `draw`.
  """

  name: str
  lo: float
  hi: float
  kl: Callable[[jax.Array, jax.Array], jax.Array]
  sample: Callable[[jax.Array, jax.Array], jax.Array]
  stat_dim: int
  stat: Callable[[jax.Array], jax.Array]
  mean: Callable[[jax.Array, jax.Array], jax.Array]
  mle: Callable[[jax.Array, jax.Array], jax.Array]
  fisher: Callable[[jax.Array], jax.Array]
  log_density: Callable[[jax.Array, jax.Array], jax.Array]
  transport_x: Optional[Callable[..., jax.Array]] = None
  posterior_sample: Optional[Callable[..., jax.Array]] = None
  curvature: Optional[float] = None
  params: tuple = ()
  exponential: bool = False
  score: Optional[Callable[..., jax.Array]] = None
  sample_block: Optional[Callable[..., jax.Array]] = None
  split_block: Optional[Callable[..., jax.Array]] = None
  pair_costs: Optional[Callable[..., jax.Array]] = None
  solve: Optional[Callable[..., tuple]] = None
  sample_arm: Optional[Callable[..., jax.Array]] = None

  def __repr__(self):
    extra = "".join(f", {k}={v}" for k, v in self.params)
    return f"{self.name}(lo={self.lo}, hi={self.hi}{extra})"

  def __hash__(self):
    return hash((self.name, self.lo, self.hi, self.params))

  def __eq__(self, other):
    # Equal fields, the functions the same objects (jbai.builders): two calls of
    # a factory are equal, a user's family that reuses a name is not.
    return isinstance(other, Family) and fields_equal(self, other)

  def __ne__(self, other):
    return not self == other


def draw(family: Family, key: jax.Array, means: jax.Array, arm: jax.Array) -> jax.Array:
  """One reward of arm `arm` of the instance `means` [K]: `Family.sample_arm` where the
  family has one, else sample(key, means[arm]) (the same bits as before the hook)."""
  if family.sample_arm is None:
    return family.sample(key, means[arm])
  return family.sample_arm(key, means, arm)


def project(family: Family, m: ArrayLike) -> jax.Array:
  """Projects means on Theta = [lo, hi]."""
  return jnp.clip(m, family.lo, family.hi)


@cached
def sample_mean(family_lo: float, family_hi: float):
  """Builds `mean(n, stats)`: the projected sample mean (0/0 -> lo)."""

  def mean(n, stats):
    n = jnp.asarray(n)
    total = stats[..., 0]
    m = total / jnp.maximum(n, 1).astype(total.dtype)
    return jnp.clip(jnp.where(n > 0, m, family_lo), family_lo, family_hi)

  return mean


def weighted_mean(w_a, m_a, w_b, m_b):
  """Closed-form transport minimiser of exponential families (x is sufficient).

  For a one-parameter exponential family in its mean parameterisation,
  d/dx [w_a KL(m_a, x) + w_b KL(m_b, x)] = (w_a + w_b)(x - xbar) / V(x) with
  V the variance function, so the minimiser is the weighted mean xbar.
  """
  total = w_a + w_b
  safe = jnp.where(total > 0, total, 1)
  return jnp.where(total > 0, (w_a * m_a + w_b * m_b) / safe, 0.5 * (m_a + m_b))


@cached
def exponential_family(*, name, lo, hi, kl, sample, fisher, log_density,
                       posterior_sample, curvature=None, params=(),
                       sample_block=None, split_block=None) -> Family:
  """A one-parameter exponential family with the reward x as sufficient statistic.

  Its MLE is the sample mean, and its transport minimiser is the weighted mean.
  In the mean parameterisation d/dm log pi(x | m) = (x - m) I(m), I the Fisher
  information, so the score of n rewards summing to S is (S - n m) I(m).
  """
  mean = sample_mean(lo, hi)

  def score(n, stats, m):
    return (stats[..., 0] - n * m) * fisher(m)

  return Family(
      name=name, lo=float(lo), hi=float(hi), kl=kl, sample=sample, stat_dim=1,
      stat=lambda x: jnp.asarray(x)[..., None], mean=mean, mle=mean,
      fisher=fisher, log_density=log_density, transport_x=weighted_mean,
      posterior_sample=posterior_sample, curvature=curvature,
      params=tuple(params), exponential=True, score=score, sample_block=sample_block,
      split_block=split_block)


def _series(u: jax.Array):
  """(near, u s, atanh(s) - s) for s = u / (2 + u): near where |s| <= 1/3 (u in
  [-1/2, 1]), and there atanh(s) - s by its series s^3 sum_k s^(2k) / (2k + 3),
  which has no cancellation (7 terms reach float32's rounding, 15 float64's)."""
  s = u / (2 + u)
  near = jnp.abs(s) <= 1 / 3
  s = jnp.where(near, s, 0.0)
  s2 = s * s
  series = jnp.zeros_like(s)
  for k in reversed(range(7 if jnp.finfo(s.dtype).bits <= 32 else 15)):
    series = series * s2 + 1 / (2 * k + 3)
  return near, u * s, s * s2 * series


def bregman_xlogx(u: ArrayLike, ratio: Optional[ArrayLike] = None) -> jax.Array:
  """(1 + u) log(1 + u) - u for u >= -1, to a few units of roundoff for every u.

  The Bregman divergence of x log x between 1 + u and 1: KL(Poisson(l (1 + u)),
  Poisson(l)) / l, and each half of the Bernoulli KL. Written directly it loses
  its digits as u -> 0, where it is u^2 / 2 and its terms are u. For u in
  [-1/2, 1] it is u s + 2 (1 + u) (atanh(s) - s) with s = u / (2 + u), two terms
  of one sign (`_series`); beyond, ratio log(ratio) - u, which loses at most a
  few units there.

  Args:
    u: ratio - 1, computed as a difference over a quotient ((m - m2) / m2), which
      is accurate where it is small.
    ratio: 1 + u, computed as a quotient (m / m2), which is accurate where u is
      near -1 or large (default 1 + u).
  """
  u = jnp.asarray(u) * 1.0
  ratio = 1 + u if ratio is None else jnp.asarray(ratio) * 1.0
  near, us, excess = _series(u)
  far = jnp.where(ratio > 0, ratio * jnp.log(jnp.where(ratio > 0, ratio, 1.0)), 0.0) - u
  return jnp.where(near, us + 2 * (1 + u) * excess, far)


def bregman_log(u: ArrayLike, ratio: Optional[ArrayLike] = None) -> jax.Array:
  """u - log(1 + u) for u > -1, to a few units of roundoff for every u.

  The Bregman divergence of -log x between 1 + u and 1: KL between exponential
  laws of means m (1 + u) and m. Written directly it loses its digits as u -> 0,
  where it is u^2 / 2. For u in [-1/2, 1] it is u s - 2 (atanh(s) - s) with
  s = u / (2 + u), whose second term is at most a sixth of the first (`_series`);
  beyond, u - log(ratio). `u` and `ratio` as in `bregman_xlogx`.
  """
  u = jnp.asarray(u) * 1.0
  ratio = 1 + u if ratio is None else jnp.asarray(ratio) * 1.0
  near, us, excess = _series(u)
  return jnp.where(near, us - 2 * excess, u - jnp.log(jnp.where(near, 1.0, ratio)))


def tiny(x: ArrayLike) -> jax.Array:
  """A small positive number of the dtype of x, safe inside logs."""
  x = jnp.asarray(x)
  dtype = x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jnp.float32
  return jnp.asarray(jnp.finfo(dtype).tiny ** 0.5, dtype)


def check_means(family: Family, means, dtype=None, best_arm: bool = True) -> np.ndarray:
  """Validates bandit means at the Python boundary.

  Ties are judged in float64 and in `dtype`, the float dtype the simulation
  runs in (default: JAX's default float dtype, float32 unless x64 is enabled):
  means distinct in float64 but equal in float32 (1 and 1 + 1e-8) would run
  every trial to the cap.

  Args:
    family: the reward family.
    means: [K] or [I, K] arm means.
    dtype: the float dtype of the simulation (default: JAX's default float).
    best_arm: refuse a tie for the best arm (the other questions of
      `jbai.problems` check their own ties).

  Returns:
    The means as a float numpy array.

  Raises:
    ValueError: naming the bad value, for fewer than two arms or no instance, a
      NaN or infinite mean, a mean outside Theta, or a tie for the best arm.
    TypeError: for means that are not numbers.
  """
  try:
    arr = np.asarray(means, dtype=float)
  except (TypeError, ValueError):
    raise TypeError(f"means must be a [K] or [I, K] array of numbers, got {means!r}"[:200]) \
        from None
  if arr.ndim not in (1, 2):
    raise ValueError(f"means must have shape [K] or [I, K], got shape {arr.shape}")
  if arr.shape[-1] < 2:
    raise ValueError(f"need at least two arms, got K={arr.shape[-1]}: {arr.tolist()}")
  rows = arr.reshape(-1, arr.shape[-1])
  if rows.shape[-1] < 2:
    raise ValueError(f"need at least two arms, got K={rows.shape[-1]}: {arr.tolist()}")
  if rows.shape[0] == 0:
    raise ValueError(f"means must hold at least one instance, got shape {arr.shape}")
  dtype = np.dtype(dtype or jnp.result_type(float))
  for row in rows:
    if np.isnan(row).any():
      raise ValueError(f"means contain NaN: {row.tolist()}")
    if not np.isfinite(row).all():
      raise ValueError(f"means must be finite, got {row.tolist()}")
    bad = row[(row < family.lo) | (row > family.hi)]
    if bad.size:
      raise ValueError(
          f"mean {float(bad[0])!r} is outside Theta = [{family.lo}, {family.hi}] of the "
          f"{family.name} family (means {row.tolist()})")
    for typed in (row, row.astype(dtype)) if best_arm else ():
      top = typed.max()
      if np.sum(typed == top) > 1:
        where = "" if typed is row else f" in {dtype.name}"
        raise ValueError(
            f"tie for the best arm at mean {float(top)!r}{where}: arms "
            f"{np.flatnonzero(typed == top).tolist()} of {row.tolist()}; the best arm "
            "must be unique")
  return arr
