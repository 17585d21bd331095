"""The lil'UCB stop (Jamieson et al. 2014, Algorithm 1).

Stop at the first t where some arm has been pulled more than 1 + lambda times
all the others together,

  T_i(t) >= 1 + lambda sum_{j != i} T_j(t),

and answer that arm, once every arm has been pulled (the algorithm's
initialisation). lambda = ((2 + beta) / beta)^2 = 9 for lil'UCB's beta = 1
(their Theorem 2; best-arm's `LilUCBStoppingCondition` default). It reads only
the counts and does not depend on delta: delta acts through lil'UCB's sampling.
It makes sense only with a rule that concentrates its pulls on one arm (lil-ucb).

Sources checked: the condition and lambda = 9 agree with best-arm's
`LilUCBStoppingCondition` (stop when some T_i >= 1 + lambda (sum_j T_j - T_i)).
Algorithm 1 and Theorem 2 were not checked against the paper's text (the stored
copies here give only its abstract).
"""

import jax.numpy as jnp

from jbai.builders import cached
from jbai.stops.base import Stop
from jbai.thresholds.base import log_inv_delta


def _init(delta, num_arms):
  del num_arms
  return log_inv_delta(delta)


@cached
def _test_fn(lam: float):
  def test(params, family, arm_stats, rule_state):
    del family, rule_state
    counts = arm_stats.counts
    rest = (arm_stats.t - counts).astype(arm_stats.mean.dtype)
    ok = counts.astype(arm_stats.mean.dtype) >= 1.0 + lam * rest
    top = jnp.argmax(counts).astype(jnp.int32)
    ch = jnp.argmax(jnp.where(jnp.arange(counts.shape[-1]) == top, -1, counts))
    stop = jnp.any(ok) & jnp.all(counts > 0)  # after the first pull of every arm
    stat = jnp.broadcast_to(stop.astype(arm_stats.mean.dtype), jnp.shape(params))
    return top, ch.astype(jnp.int32), stat, jnp.full_like(stat, 0.5)
  return test


def lil(lam: float = 9.0) -> Stop:
  """The lil'UCB stop: one arm pulled at least 1 + lam times the others together.

  Args:
    lam: lambda > 0.

  Returns:
    The stop.
  """
  if not lam > 0:
    raise ValueError(f"lam must be > 0, got {lam!r}")
  return Stop("lil", _init, _test_fn(float(lam)), (("lam", float(lam)),),
              rules=("lil-ucb",))
