"""The threshold of the non-parametric GLR stop on arms in [0, 1] (issue 76).

For the model "bounded" (`jbai.bounded.family`), whose GLLR statistic is the
non-parametric GLR Lambda(a, b) = inf_m N_a KL_inf^-(F_a, m) + N_b KL_inf^+(F_b, m)
(Jourdan, Degenne, Baudry, de Heide & Kaufmann, NeurIPS 2022, Section 2), the
threshold is `jbai.bounded.glr.threshold`,

  c(N_a, N_b, delta) = log(P / delta) + log(1 + N_a) + log(1 + N_b),

P = K - 1 pieces for the best arm (the union over the wrong arms), delta-correct
for every law in [0, 1] and every sampling rule (the proof is in
`jbai.bounded.glr`'s docstring: Cover's universal portfolio, Ville's inequality).

Departure. `jbai.bounded.glr.should_stop` asks Lambda(a, b) > c(N_a, N_b, delta)
for every b != a; the engine's GLLR stop compares the smallest Lambda(a, b) with
one value, the threshold of the pair (leader, cheapest challenger). The threshold
of that pair would not make the stop the proven one (a b of more rewards has a
higher c). So `value` returns c(N_a, max_{b != a} N_b, delta), the largest of the
pairs' thresholds: min_b Lambda(a, b) above it implies every Lambda(a, b) above its
own c, and the stop is delta-correct by the same proof, at most
log((1 + max N_b) / (1 + N_ch)) later.
"""

import jax.numpy as jnp

from jbai.builders import cached
from jbai.thresholds.base import Threshold, log_ratio, pieces_of

NAME = "bounded"


def _init(delta, num_arms, pieces=None):
  return {"log": log_ratio(pieces_of(num_arms, pieces), delta)}


def _value(params, family, arm_stats, top, ch):
  del family, ch  # the largest of the pairs' thresholds (module docstring)
  dtype = params["log"].dtype
  counts = arm_stats.counts.astype(dtype)
  others = jnp.where(jnp.arange(counts.shape[-1]) == top, 0, counts)
  return params["log"] + jnp.log1p(counts[top]) + jnp.log1p(jnp.max(others))


@cached
def bounded_threshold() -> Threshold:
  """The threshold c of the module docstring, for the bounded model's GLR stop.

  Example:
    >>> bounded_threshold().name
    'bounded'
  """
  return Threshold(NAME, _init, _value, union=True)


__all__ = ["bounded_threshold"]
