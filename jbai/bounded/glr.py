"""The non-parametric GLR of best-arm identification on arms in [0, 1], and its stop.

For the empirical best arm a (largest empirical mean) and another arm b, with N_a,
N_b rewards and empirical laws F_a, F_b (`jbai.bounded.histogram`), the GLR
statistic against "b is better than a" is (Jourdan, Degenne, Baudry, de Heide &
Kaufmann, NeurIPS 2022, "Top Two Algorithms Revisited", Section 2; Agrawal,
Juneja & Koolen 2021 for the non-parametric GLR)

  Lambda(a, b) = inf_{m in [mu_b, mu_a]} N_a KL_inf^-(F_a, m) + N_b KL_inf^+(F_b, m)

(0 where mu_a <= mu_b). Both terms are convex in m, and by the envelope theorem
d/dm KL_inf^-(F_a, m) = -lambda_a(m), d/dm KL_inf^+(F_b, m) = +lambda_b(m), the
dual optima (`KLInf.lam`), so the infimum is the root of
N_b lambda_b(m) - N_a lambda_a(m), which increases in m: `jbai.transport.bisect_root`
finds it to the dtype's precision, each step two KL_inf solves.

The stop. The run stops when min_{b != a} Lambda(a, b) - c(N_a, N_b, delta) > 0,

  c(N_a, N_b, delta) = log((K - 1) / delta) + log(1 + N_a) + log(1 + N_b),

and recommends a. What is derived here (the paper's own threshold could not be
read in the session that wrote this module, so no equation of it is cited):
delta-correct for every law in [0, 1], whatever the sampling rule. Proof. If the
recommendation a is wrong, the true best arm b has mu*_b > mu*_a, and the true
laws are an alternative of the GLR's infimum, so
Lambda(a, b) <= N_a KL_inf^-(F_a, mu*_a) + N_b KL_inf^+(F_b, mu*_b). By the dual
form, N KL_inf^+(F, mu*) = max_{s in [0, 1]} log W_N(s) with
W_N(s) = prod_i ((1 - s) + s (1 - X_i) / (1 - mu*)) the wealth of a constant
rebalanced portfolio of two assets (cash and a return of mean 1), a martingale of
mean 1 under the truth for each s. Cover's universal portfolio with the uniform
prior (Cover & Ordentlich 1996, the two-asset case of their bound) has
max_s W_N(s) <= (N + 1) int_0^1 W_N(s) ds, and the mixture int W_N(s) ds is a
nonnegative martingale of mean 1; likewise for KL_inf^- with returns X_i / mu*_a.
The product of the two arms' mixtures is a nonnegative martingale in the trial's
time (each step changes one factor, by a ratio of conditional mean 1), so by Ville's
inequality P(exists t: mixture_a mixture_b >= (K - 1) / delta) <= delta / (K - 1),
and a union over the K - 1 wrong arms a bounds the error by delta. The histogram's
F~ has Lambda(F~) <= Lambda(F) (the histogram module's bound (1)), so the stop on F~
is delta-correct too. c is at most log((K - 1) / delta) + 2 log(1 + t), the form
of the parametric thresholds.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jbai.bounded import histogram
from jbai.bounded.kl_inf import kl_inf_pair
from jbai.transport import bisect_root


class PairGLR(NamedTuple):
  """Lambda(a, b) and where its infimum is."""
  value: jax.Array      # [...] float, Lambda(a, b) >= 0
  m: jax.Array          # [...] float, the common mean at the infimum
  converged: jax.Array  # [...] bool, both KL_inf solves at m converged


def pair_glr(values: ArrayLike, n_a: ArrayLike, probs_a: ArrayLike, n_b: ArrayLike,
             probs_b: ArrayLike) -> PairGLR:
  """Lambda(a, b) of the module docstring, elementwise over leading axes.

  Args:
    values: [..., P] the atoms (a trial's grid).
    n_a: [...] rewards of arm a.
    probs_a: [..., P] arm a's empirical law.
    n_b: [...] rewards of arm b.
    probs_b: [..., P] arm b's empirical law.

  Returns:
    PairGLR; value 0 where a's mean is not above b's.

  Example:
    >>> import jax.numpy as jnp
    >>> z = jnp.array([0.0, 1.0])
    >>> r = pair_glr(z, 10, jnp.array([0.2, 0.8]), 10, jnp.array([0.6, 0.4]))
    >>> round(float(r.m), 6)   # equal counts of Bernoulli laws: the midpoint
    0.6
  """
  values, probs_a, probs_b = (jnp.asarray(v) * 1.0 for v in (values, probs_a, probs_b))
  dtype = jnp.result_type(values, probs_a, probs_b)
  n_a, n_b = jnp.asarray(n_a, dtype), jnp.asarray(n_b, dtype)
  mean_a = jnp.sum(values * probs_a, axis=-1)
  mean_b = jnp.sum(values * probs_b, axis=-1)

  def slope(m):
    down, up = kl_inf_pair(values, probs_a, probs_b, m)
    return n_b * up.lam - n_a * down.lam

  ordered = mean_a > mean_b
  lo, hi = jnp.where(ordered, mean_b, mean_a), jnp.where(ordered, mean_a, mean_b)
  m = jax.lax.stop_gradient(bisect_root(slope, lo, hi))
  down, up = kl_inf_pair(values, probs_a, probs_b, m)
  value = jnp.where(ordered, n_a * down.value + n_b * up.value, 0)
  return PairGLR(value, m, down.converged & up.converged)


class Statistic(NamedTuple):
  """The GLR of a trial's bounded arms."""
  leader: jax.Array  # [] int, the empirical best arm a (the first of equal means)
  glr: jax.Array     # [K] float, Lambda(a, b); +inf at a
  converged: jax.Array  # [] bool, every KL_inf solve converged


def statistic(grid: jax.Array, hist: histogram.Histograms) -> Statistic:
  """Lambda(a, b) for the empirical best a and every b (one lane; vmap over lanes).

  Args:
    grid: [G] the histogram's grid.
    hist: the trial's histograms ([K] counts, [K, G] masses).

  Returns:
    Statistic.
  """
  probs = histogram.probabilities(hist)
  leader = jnp.argmax(jnp.sum(probs * grid, axis=-1))
  pair = pair_glr(grid, hist.counts[leader], probs[leader], hist.counts, probs)
  is_leader = jnp.arange(probs.shape[0]) == leader
  return Statistic(leader, jnp.where(is_leader, jnp.inf, pair.value),
                   jnp.all(pair.converged | is_leader))


def threshold(n_a: ArrayLike, n_b: ArrayLike, delta: ArrayLike, num_arms: int) -> jax.Array:
  """c(N_a, N_b, delta) = log((K - 1) / delta) + log(1 + N_a) + log(1 + N_b), the
  module docstring's threshold, delta-correct for every law in [0, 1].

  Example:
    >>> round(float(threshold(0, 0, 0.1, 2)), 6)   # log(1 / 0.1)
    2.302585
  """
  n_a, n_b = (jnp.asarray(n) * 1.0 for n in (n_a, n_b))
  return (jnp.log((num_arms - 1) / jnp.asarray(delta, n_a.dtype))
          + jnp.log1p(n_a) + jnp.log1p(n_b))


def should_stop(grid: jax.Array, hist: histogram.Histograms, delta: ArrayLike):
  """(stop, leader): whether Lambda(a, b) > c(N_a, N_b, delta) for every b != a.

  Args:
    grid: [G] the histogram's grid.
    hist: the trial's histograms.
    delta: the confidence level in (0, 1).

  Returns:
    ([] bool, [] int): stop now, and the arm it recommends.
  """
  stat = statistic(grid, hist)
  c = threshold(hist.counts[stat.leader], hist.counts, delta, hist.counts.shape[0])
  return jnp.all(stat.glr > c), stat.leader
