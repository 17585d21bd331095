"""A static randomized design: every pull drawn afresh from fixed proportions.

Each step pulls arm i with probability w_i = softmax(logits)_i, whatever the
rewards so far. With the GLLR stop, E[tau] log(1/delta)^-1 tends to 1 / Gamma(w)
as delta -> 0, where Gamma(w) = min_{b != a*} inf_{lambda in Alt_b} sum_i w_i
KL(mu_i, lambda_i) is the transport cost at proportions w (the oracle's
objective), so the best static design is the optimal allocation w*(nu) and its
E[tau] the lower bound T*(nu) log(1/delta) (Garivier & Kaufmann 2016): a design
problem with a known answer, on which optimisation through the simulator can be
checked (`experiments/design.py`).

The logits are a runtime parameter of shape [K] (`params={"logits": ...}`), so
every design runs the same compiled program, and the rule scores its choices:
d/dlogits log P(A_t) = e_{A_t} - w, summed over the steps (`Rule.score`), for
likelihood-ratio gradients in the logits (`jbai.estimate`).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.rules.base import Rule, hyper


class StaticState(NamedTuple):
  logits: jax.Array  # [K] float, w = softmax(logits)
  score: jax.Array   # [K] float, sum over the pulls so far of e_{A_t} - w


def static(logits: Optional[tuple] = None) -> Rule:
  """Static randomized design: each pull i.i.d. with probabilities softmax(logits)
  (default: uniform); its best proportions are w*(nu).

  Args:
    logits: [K] finite numbers, or None for equal proportions (the number of arms
      is then that of the instance).

  Example:
    >>> import jbai
    >>> jbai.rules.static((0.0, 1.0, 1.0))
    static(logits=(0.0, 1.0, 1.0))
  """
  if logits is not None:
    logits = tuple(float(v) for v in logits)
    if not all(jnp.isfinite(jnp.asarray(logits))):
      raise ValueError(f"logits must be finite, got {logits!r}")

  def init(num_arms):
    if logits is not None and len(logits) != num_arms:
      raise ValueError(f"static: {len(logits)} logits for {num_arms} arms")
    values = hyper(logits if logits is not None else [0.0] * num_arms)
    return StaticState(logits=values, score=jnp.zeros_like(values))

  params = () if logits is None else (("logits", logits),)
  return Rule("static", init, _select(), params, runtime=("logits",), score=logits_score)


def logits_score(state: StaticState) -> dict:
  """The policy score of the logits, accumulated in the state (`Rule.score`)."""
  return {"logits": state.score}


@cached
def _select():
  """The `select` of every static design (the logits are read from the state)."""

  def select(key, family, arm_stats, state):
    del family, arm_stats
    arm = jax.random.categorical(key, state.logits).astype(jnp.int32)
    w = jax.nn.softmax(state.logits)
    return arm, state._replace(score=state.score + (jnp.arange(w.shape[-1]) == arm) - w)

  return select
