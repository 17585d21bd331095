"""Adaptive UCB-E (Audibert, Bubeck & Munos 2010): UCB-E with H_1 estimated in phases.

"Best Arm Identification in Multi-Armed Bandits" (COLT 2010). UCB-E
(`jbai.rules.ucb_e`) needs a = c n / H_1, with H_1 = sum_{i != *} 1 / Delta_i^2
unknown; the adaptive version estimates H_1 from the sample means, in the phases
of Successive Rejects. With a budget n, K arms, log-bar(K) = 1/2 + sum_{i=2}^K
1/i and n_k = ceil((n - K) / (log-bar(K) (K + 1 - k))) for k = 1, ..., K - 1,
the phases end at

  t_0 = 0,   t_k = n_1 + ... + n_{k-1} + (K - k + 1) n_k   (k = 1, ..., K - 1),

and phase K - 1 runs to n. At the start of phase k (after t_k rewards) the rule
estimates

  H_hat_0 = K,   H_hat_k = max_{K - k + 1 <= i <= K} i / Delta_hat_<i>^2,

where Delta_hat_i = max_j mu_hat_j - mu_hat_i and Delta_hat_<1> <= ... <=
Delta_hat_<K> are the estimated gaps sorted (Delta_hat_<1> = 0, the empirical
best arm's). Within phase k it pulls, after one pull of each arm,

  argmax_i  mu_hat_i + sqrt(c n / (H_hat_k T_i(t))),

ties to the lowest index, and it recommends the empirical best arm. c > 0 is the
rule's parameter (a runtime value), in the units of the mean squared. Where a
phase starts with an estimated gap of 0 among the arms of its max (a tie of
sample means with the best), H_hat_k is infinite and the phase samples greedily
(a = 0), as the formula says. Phases of no length (n_{k+1} = n_k) pass at once,
each estimate made where its phase starts. The budget n is a runtime value of
the state (`jbai.stops.budget`): every budget shares one compiled program.

The index is Hoeffding's for bounded rewards: the rule runs on Bernoulli and
Gaussian arms (the sub-Gaussian families) and refuses the others. It never stops
by itself: it runs only to a budget (`Rule.budget`; `jbai.budget`).

Sources: the phases and the estimate as the paper's adaptive UCB-E states them,
as read from a public Python implementation of it (a function
`UCBE_adaptive`, found with the code search: H_hat_0 = K, H_hat_k = max over i
from K - k + 1 of i / Delta_hat_<i>^2, a = n / H_hat_k) and from this project's
Successive Rejects (`jbai.rules.successive_rejects`, the same n_k). The paper's
text itself was not available here (its abstract only).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jbai.builders import cached
from jbai.rules.base import Rule, hyper
from jbai.rules.successive_rejects import min_budget, phase_lengths
from jbai.rules.ucb_e import check_positive, ucb_index
from jbai.state import count_dtype
from jbai.stops import bounds as bounds_lib


class AdaptiveUcbeState(NamedTuple):
  c: jax.Array       # [] float, the exploration rate c > 0 (a runtime value)
  budget: jax.Array  # [] count_dtype(), the budget n (a runtime value)
  phase: jax.Array   # [] int32, the current phase k (0 to K - 1)
  inv_h: jax.Array   # [] float, 1 / H_hat_k of the current phase (0: H_hat_k infinite)
  ends: jax.Array    # [K - 1] count_dtype(), t_1, ..., t_{K-1} (`phase_ends`, runtime values)

  def with_budget(self, budget) -> "AdaptiveUcbeState":
    """The state for a run to budget n (`jbai.stops.budget.with_budget`): n and
    the ends of the phases it gives."""
    return self._replace(budget=jnp.asarray(budget, self.budget.dtype),
                         ends=jnp.asarray(phase_ends(budget, self.ends.shape[-1] + 1),
                                          self.ends.dtype))


def phase_ends(budget: int, num_arms: int) -> np.ndarray:
  """[K - 1] int64 t_1, ..., t_{K-1}: t_k = n_1 + ... + n_{k-1} + (K - k + 1) n_k,
  with Successive Rejects' n_k computed on the host (`phase_lengths`, exact in
  float64 where a float32 run could put n_k one off)."""
  n = phase_lengths(budget, num_arms)[1:]                     # [K - 1] n_k
  k = np.arange(1, num_arms)
  return np.cumsum(n) - n + (num_arms - k + 1) * n


def inverse_complexity(mean: jax.Array, phase: jax.Array) -> jax.Array:
  """1 / H_hat_k = min_{K - k + 1 <= i <= K} Delta_hat_<i>^2 / i (1 / K for k = 0):
  finite, and 0 where an estimated gap of the min is 0 (H_hat_k infinite)."""
  num_arms = mean.shape[-1]
  gaps = jnp.sort(jnp.max(mean) - mean)                       # Delta_hat_<1> <= ...
  i = jnp.arange(1, num_arms + 1)
  terms = jnp.where(i >= num_arms - phase + 1, gaps**2 / i.astype(mean.dtype), jnp.inf)
  return jnp.where(phase > 0, jnp.min(terms), 1 / jnp.asarray(num_arms, mean.dtype))


def complexity(mean: jax.Array, phase: jax.Array) -> jax.Array:
  """H_hat_k = max_{K - k + 1 <= i <= K} i / Delta_hat_<i>^2 (K for k = 0)."""
  return 1 / inverse_complexity(mean, phase)


def _advance(arm_stats, state: AdaptiveUcbeState) -> AdaptiveUcbeState:
  """The state in the phase of the next pull: k = #{t_k <= t}, with H_hat_k
  estimated now where the phase has changed."""
  phase = jnp.sum(state.ends <= arm_stats.t).astype(jnp.int32)
  moved = phase > state.phase
  return state._replace(phase=jnp.maximum(phase, state.phase),
                        inv_h=jnp.where(moved, inverse_complexity(arm_stats.mean, phase),
                                        state.inv_h))


@cached
def _select_fn():
  def select(key, family, arm_stats, state):
    del key
    bounds_lib.checked_variance(family, "adaptive-ucb-e")  # bounded or sub-Gaussian rewards
    state = _advance(arm_stats, state)
    a = state.c * state.budget.astype(state.inv_h.dtype) * state.inv_h
    return ucb_index(arm_stats, a), state
  return select


def adaptive_ucb_e(c: float = 1.0) -> Rule:
  """Adaptive UCB-E (Audibert, Bubeck & Munos 2010): UCB-E with a = c T / H_hat, H_1 estimated at each phase of Successive Rejects; runs to a budget.

  Args:
    c: the exploration rate c > 0 (a = c T / H_hat_k in phase k).

  Returns:
    The rule (it never stops by itself: `jbai.budget` runs it to a budget).

  Example:
    >>> import jax, jbai
    >>> res = jbai.budget(jax.random.key(0), "bernoulli", [0.5, 0.45, 0.3], "adaptive-ucb-e",
    ...                   budget=500, n_trials=64)
  """
  c = check_positive("c", c)

  def init(num_arms):
    smallest = min_budget(num_arms)
    return AdaptiveUcbeState(c=hyper(c), budget=jnp.asarray(smallest, count_dtype()),
                             phase=jnp.asarray(0, jnp.int32), inv_h=hyper(1 / num_arms),
                             ends=jnp.asarray(phase_ends(smallest, num_arms), count_dtype()))

  return Rule("adaptive-ucb-e", init, _select_fn(), (("c", c),), runtime=("c",),
              budget=min_budget)
