"""TTTS: Top-Two Thompson Sampling (Russo 2016).

Leader: L = argmax of one posterior draw. With probability beta pull L; else
draw the means from the posterior again until the argmax J of a draw differs from
L, and pull J. Each arm is pulled once first; posterior sampling explores.

The re-sampling loop is capped at `max_redraws` draws (a lax.while_loop, so it
ends under vmap; REDRAW_BATCH draws per pass). When no draw within the cap has an
argmax other than L, which happens once the posterior is concentrated on L (P(J != L) is about
exp(-t Gamma) late in a trial), the challenger falls back to T3C's transport-cost
challenger argmin_{j != L} W_t(L, j): both target the arm that the posterior
finds most likely to beat L, and T3C was designed as TTTS's cheap substitute
(Shang et al. 2020). Under vmap the loop runs until the slowest lane is done, so
a step costs up to max_redraws posterior draws per lane late in the trials: TTTS
is by far the most expensive top-two rule to simulate.
"""

import jax
import jax.numpy as jnp

from jbai.rules.base import Rule
from jbai.rules.top_two import check_beta, tc_challenger, top_two_rule, ts_leader

REDRAW_BATCH = 10  # posterior draws per pass of the re-sampling loop


def resampling_challenger(max_redraws: int):
  """The re-sampling challenger with a cap, falling back to the TC challenger.

  The draws are made REDRAW_BATCH at a time (one pass of a lax.while_loop), and
  the challenger is the argmax of the first draw, in draw order, whose argmax is
  not the leader: the same law as drawing one at a time, with fewer passes of
  the loop (late in a trial every pass runs up to the cap).
  """
  n_passes = -(-max_redraws // REDRAW_BATCH)

  def challenger(key, family, arm_stats, lead, active):
    k_fallback, k_draws = jax.random.split(key)
    draw_argmax = jax.vmap(lambda k: ts_leader(k, family, arm_stats))

    def cond(carry):
      i, found, _ = carry
      return active & ~found & (i < n_passes)

    def body(carry):
      i, _, _ = carry
      arms = draw_argmax(jax.random.split(jax.random.fold_in(k_draws, i), REDRAW_BATCH))
      index = i * REDRAW_BATCH + jnp.arange(REDRAW_BATCH)
      hit = (arms != lead) & (index < max_redraws)
      return i + 1, jnp.any(hit), arms[jnp.argmax(hit)]

    init = (jnp.zeros((), jnp.int32), jnp.zeros((), bool), lead)
    _, found, arm = jax.lax.while_loop(cond, body, init)
    fallback = tc_challenger(k_fallback, family, arm_stats, lead, active)
    return jnp.where(found, arm, fallback)

  return challenger


def ttts(beta: float = 0.5, max_redraws: int = 100) -> Rule:
  """TTTS, top-two Thompson sampling with a re-sampled challenger (Russo 2016).

  Args:
    beta: probability of pulling the leader, in (0, 1).
    max_redraws: cap on the posterior re-draws for the challenger; at the cap the
      transport-cost challenger of T3C is used.

  Returns:
    The rule.

  Raises:
    ValueError: for beta outside (0, 1) or max_redraws < 1; when first used with
      a family that has no posterior_sample.
  """
  beta = check_beta(beta)
  if int(max_redraws) != max_redraws or max_redraws < 1:
    raise ValueError(f"max_redraws must be an integer >= 1, got {max_redraws!r}")
  max_redraws = int(max_redraws)
  return top_two_rule("ttts", (("beta", beta), ("max_redraws", max_redraws)),
                      leader_fn=ts_leader,
                      challenger_fn=resampling_challenger(max_redraws), beta=beta)
