"""The heuristic threshold of Garivier & Kaufmann (2016), beta_t(delta) = log((1 + log t) / delta)."""

import jax.numpy as jnp

from jbai.builders import cached
from jbai.thresholds.base import Threshold, log_inv_delta


def _init(delta, num_arms):
  del num_arms
  return {"log_inv_delta": log_inv_delta(delta)}  # delta: [D] levels or a LogDelta


def _value(params, family, arm_stats, top, ch):
  del family, top, ch
  t = jnp.maximum(arm_stats.t, 1).astype(params["log_inv_delta"].dtype)
  return jnp.log1p(jnp.log(t)) + params["log_inv_delta"]


@cached
def gk16() -> Threshold:
  """beta_t(delta) = log((1 + log t) / delta), the heuristic of Garivier & Kaufmann (2016).

  Used in most experiments of the literature (and the paper's); not proven
  delta-correct.
  """
  return Threshold("gk16", _init, _value)
