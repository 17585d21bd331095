"""The empirical law a trial keeps of each bounded arm: a histogram on a fixed grid.

The grid is G points 0 = z_0 < z_1 < ... < z_{G-1} = 1 (`uniform_grid(G)`, or any
sorted points through `check_grid`). A reward x in [z_j, z_{j+1}] adds the mass
1 - r to bin j and r to bin j + 1, r = (x - z_j) / (z_{j+1} - z_j): the
deterministic (expected) version of randomised rounding to the two neighbours.
A trial keeps, per arm, its count N [K] (integers) and its masses [K, G] (floats
summing to N); its empirical law is F~ = masses / N on the grid.

What this keeps, exactly:
  * a reward on the grid goes to its own bin: for a discrete law whose values are
    grid points (Bernoulli on any grid), F~ is the exact empirical law;
  * the mean: sum_j z_j F~_j = the sample mean (up to float rounding);
  * the support: F~ lives on [0, 1].

The error, for rewards off the grid. F~ is the law of X + noise with
E[noise | X] = 0, a mean-preserving spread of the exact empirical law F (convex
order, F <=_cx F~). The dual form of KL_inf (`jbai.bounded.kl_inf`) is a maximum
over lambda of E[phi_lambda(X)] with phi_lambda concave, so for every lambda the
objective of F~ is at most that of F, and

  KL_inf(F~, mu) <= KL_inf(F, mu)   (both directions, every mu)   (1)

deterministically. So the GLR statistic computed on F~ is at most the exact one:
a stop on F~ is never earlier, and the GLR stop stays delta-correct for every law
in [0, 1] (its recommendation, the empirical best mean, is unchanged). The other
side: with t* in [0, 1] the optimum of F's dual in the scaled variable of
`kl_inf` (lambda = t / c, c = mu for KL_inf^-, 1 - mu for KL_inf^+) and h the
largest gap of the grid, a second-order Taylor bound of phi at lambda* on each
reward's cell (the conditional variance of the noise is at most h^2 / 4, and
1 + lambda*(xi - mu) >= 1 - t* on [0, 1]) gives

  KL_inf(F, mu) - KL_inf(F~, mu) <= h^2 t*^2 / (8 c^2 (1 - t*)^2)   (2)

(`rounding_bound`; infinite at t* = 1, where the optimal alternative puts mass on
the end of the support). With G = 101 (h = 0.01), c = 0.5 and t* = 0.5, (2) is
5e-5.

A reward outside [0, 1] (or NaN) is an error: `check_rewards` raises on the host,
and `split` gives NaN masses, which make the arm's empirical law NaN rather than
silently clipping the reward.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jbai.state import add_to_arm, count_dtype

DEFAULT_POINTS = 101  # grid step 0.01


class Histograms(NamedTuple):
  """What a trial keeps of its bounded arms."""
  counts: jax.Array  # [K] count_dtype(), N_k, rewards seen of arm k
  masses: jax.Array  # [K, G] float, per-bin masses, summing to counts


def uniform_grid(points: int = DEFAULT_POINTS, dtype=None) -> jax.Array:
  """The grid z_j = j / (points - 1), j = 0 .. points - 1 (points >= 2).

  Example:
    >>> [float(z) for z in uniform_grid(3)]
    [0.0, 0.5, 1.0]
  """
  if int(points) != points or points < 2:
    raise ValueError(f"grid points = {points} must be an integer >= 2")
  # j / (points - 1), one correctly rounded division each: 0.3 is the float 0.3 (a
  # linspace would give 0.30000000000000004), so a reward typed as 0.3 is on the grid.
  return jnp.asarray(np.arange(int(points)) / (int(points) - 1), dtype or jnp.zeros(()).dtype)


def check_grid(points: ArrayLike, dtype=None) -> jax.Array:
  """A grid given by its points: strictly increasing, first 0 and last 1.

  Example:
    >>> [float(z) for z in check_grid([0, 0.3, 1])]
    [0.0, 0.3, 1.0]
  """
  z = np.asarray(points, np.float64).ravel()
  if z.size < 2 or z[0] != 0.0 or z[-1] != 1.0:
    raise ValueError(f"grid {z.tolist()} must start at 0 and end at 1 (at least 2 points)")
  bad = np.nonzero(np.diff(z) <= 0)[0]
  if bad.size:
    raise ValueError(f"grid point {z[bad[0] + 1]} does not exceed the one before it")
  return jnp.asarray(z, dtype or jnp.zeros(()).dtype)


def check_rewards(rewards: ArrayLike) -> None:
  """ValueError naming the first reward outside the support [0, 1] (or NaN)."""
  x = np.asarray(rewards, np.float64).ravel()
  bad = np.nonzero(~((x >= 0) & (x <= 1)))[0]
  if bad.size:
    raise ValueError(f"reward {x[bad[0]]} is outside the declared support [0, 1]")


def empty(num_arms: int, grid: jax.Array) -> Histograms:
  """The histograms of a trial that has seen nothing, in the grid's dtype."""
  return Histograms(jnp.zeros(num_arms, count_dtype()),
                    jnp.zeros((num_arms, grid.shape[-1]), grid.dtype))


def split(grid: jax.Array, x: ArrayLike) -> jax.Array:
  """[..., G] the masses one reward x adds: 1 - r at its left neighbour z_j and r
  at z_{j+1}; all NaN where x is outside [0, 1] or NaN.

  Example:
    >>> [float(m) for m in split(uniform_grid(3), 0.75)]
    [0.0, 0.5, 0.5]
  """
  x = jnp.asarray(x, grid.dtype)
  size = grid.shape[-1]
  j = jnp.clip(jnp.searchsorted(grid, x, side="right") - 1, 0, size - 2)
  left, right = grid[j], grid[j + 1]
  r = jnp.clip((x - left) / (right - left), 0, 1)
  bins = jnp.arange(size)
  masses = (jnp.where(bins == j[..., None], 1 - r[..., None], 0)
            + jnp.where(bins == j[..., None] + 1, r[..., None], 0))
  inside = (x >= 0) & (x <= 1)
  return jnp.where(inside[..., None], masses, jnp.nan)


def observe(hist: Histograms, grid: jax.Array, arm: ArrayLike,
            reward: ArrayLike) -> Histograms:
  """Adds one reward of `arm` (an arm outside [0, K) changes nothing)."""
  counts = add_to_arm(hist.counts, arm, jnp.ones((), hist.counts.dtype))
  return Histograms(counts, add_to_arm(hist.masses, arm, split(grid, reward)))


def from_rewards(grid: jax.Array, rewards: ArrayLike, arms: ArrayLike,
                 num_arms: int) -> Histograms:
  """The histograms of a batch of (arm, reward) pairs at once (rewards [n], arms [n])."""
  arms = jnp.asarray(arms)
  one_hot = (arms[:, None] == jnp.arange(num_arms)).astype(grid.dtype)  # [n, K]
  masses = one_hot.T @ split(grid, rewards)
  return Histograms(jnp.sum(one_hot, axis=0).astype(count_dtype()), masses)


def probabilities(hist: Histograms) -> jax.Array:
  """[K, G] the empirical laws F~ = masses / N (zeros for an arm not yet pulled)."""
  n = hist.counts.astype(hist.masses.dtype)[..., None]
  return jnp.where(n > 0, hist.masses / jnp.maximum(n, 1), 0)


def means(hist: Histograms, grid: jax.Array) -> jax.Array:
  """[K] the sample means, sum_j z_j F~_j (0 for an arm not yet pulled)."""
  return jnp.sum(probabilities(hist) * grid, axis=-1)


def rounding_bound(grid: jax.Array, t: ArrayLike, mu: ArrayLike, up: bool) -> jax.Array:
  """Bound (2) of the module docstring on KL_inf(F, mu) - KL_inf(F~, mu) >= 0.

  t is the exact empirical law's dual optimum; the F~ a trial keeps gives its
  own (`KLInf.t` of F~), which estimates it (and equals it for rewards on the grid).

  Args:
    grid: [G] the grid.
    t: the scaled dual optimum t* in [0, 1] (`KLInf.t`).
    mu: the mean level.
    up: KL_inf^+ (c = 1 - mu) rather than KL_inf^- (c = mu).

  Returns:
    h^2 t^2 / (8 c^2 (1 - t)^2), h the largest gap of the grid (inf at t = 1).
  """
  h = jnp.max(jnp.diff(grid))
  t = jnp.asarray(t, grid.dtype)
  c = (1 - jnp.asarray(mu, grid.dtype)) if up else jnp.asarray(mu, grid.dtype)
  gap = jnp.maximum(1 - t, 0)
  return jnp.where(t >= 1, jnp.inf, h**2 * t**2 / (8 * c**2 * jnp.where(t >= 1, 1, gap) ** 2))
