"""Track-and-Stop for top-m: D-tracking of w*(nu_hat_t), warm-started pair solver.

For the m best arms (`jbai.problems.top_m`) w*(nu) maximises the smallest
transport cost over the pairs (i, j), i in the top m and j outside it, which has
no closed form (`jbai.oracle.pieces`). The rule tracks it at the projected sample
means as Track-and-Stop's D-tracking does (Garivier & Kaufmann 2016;
`jbai.rules.tas.d_tracking`): pull the arm furthest below t w_a, or the
least-sampled arm while some arm is unpulled or has T_t(a) < sqrt(t) - K/2. The
pairs are those of the empirical top m at each step.

The oracle runs warm (`jbai.oracle.pieces.pairs_warm`): one Newton step per step
on the log-barrier problem from the previous step's point, kept in the rule's
state with the barrier's gap, which follows the barrier's path: it shrinks by a
factor 3 while the point is near the barrier point (its Newton decrement below
1), down to a relative gap of 1e-3 in T, and grows when the means move it far
away (the full solver's twelve stages of eight Newton steps would cost about a
hundred times as much per step). The step's size comes from a line search on
the pieces' second-order models, which costs no evaluation of the pieces.
Where the empirical top m is tied across its edge (a pair of equal means, which
integer rewards give often, k / n = k' / n': no w* exists) the rule keeps its
last point and tracks its allocation; the uniform allocation there would keep the counts equal and the tie likely, and
stall the trial. The solver reads the tie off the means (its output there
would turn on the last bit, and float32 and float64 trials then changed with
the pool's width: docs/design/float32.md). The first point is uniform.

Optimality up to the solver's gap. The tracked point is not w*(nu_hat_t) but a
point of the barrier's path whose T(w) is within a relative gap of T*(nu_hat_t),
at least WARM_GAP = 1e-3 (`jbai.oracle.pieces`). With the top-m GLLR stop
(`jbai.stops.answer_gllr`), E[tau] / (T*(nu) log(1/delta)) therefore tends, as
delta goes to 0, to at most about 1 + 1e-3 (the ratio T(w) / T* of the points
it tracks), not to 1 exactly; Track-and-Stop's argument (Garivier & Kaufmann
2016) gives 1 for exact tracking of w*.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jbai.builders import cached
from jbai.oracle.pieces import pairs_warm
from jbai.problems.top_m import grid, top_m
from jbai.rules.base import Rule, hyper
from jbai.rules.tas import d_tracking


class TopMTrackingState(NamedTuple):
  v: jax.Array    # [K] float, the solver's last point (w = v / sum(v))
  gap: jax.Array  # [] float, the barrier's relative gap at the next step


def _init(num_arms: int) -> TopMTrackingState:
  return TopMTrackingState(jnp.ones(num_arms, jnp.result_type(float)), hyper(1.0))


@cached
def _select(m: int):
  def select_arm(key, family, arm_stats, state):
    counts, mean = arm_stats.counts, arm_stats.mean
    v, gap = pairs_warm(family, mean, grid(mean, m), state.v, state.gap.astype(mean.dtype))
    ok = jnp.all(jnp.isfinite(v) & (v > 0))  # else a tie across the top m's edge
    state = TopMTrackingState(jnp.where(ok, v, state.v).astype(state.v.dtype),
                              jnp.where(ok, gap, state.gap).astype(state.gap.dtype))
    w = state.v / jnp.sum(state.v)
    return d_tracking(key, counts, arm_stats.t, w, "strict"), state
  return select_arm


def tas_top_m(m: int) -> Rule:
  """Track-and-Stop (D-tracking) for top-m, with a warm-started pair solver.

  Args:
    m: the size of the answer (the run's `top_m(m)`).

  Example:
    >>> import jbai
    >>> jbai.rules.tas_top_m(2)
    tas-top-m(m=2)
  """
  top_m(m)  # checks m
  return Rule("tas-top-m", _init, _select(int(m)), (("m", int(m)),), answers=("top-m",))
