"""Every rule at near-ties in float32: a valid arm and a finite state.

Near-ties of the empirical means are where a family's KL is rounding noise (it
can round below 0 in float32), and where FWS's iterate and the warm oracle's
allocation once became NaN (and a trial then pulled one arm until the step
cap). For each family, 1,024 states whose top two means differ by a relative
1e-5 to 1e-3, every rule's select, vmapped and jitted as in the engine.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai.cli import rule_refusal
from jbai.state import arm_stats
from jbai.stops.base import with_delta

N_STATES, K = 1024, 4


def near_tie_states(family_name, rng):
  n = rng.integers(1, 400, size=(N_STATES, K))
  if family_name == "bernoulli":
    sums = rng.binomial(n, 0.5).astype(float)
    sums[:, 1] = np.clip(np.round(sums[:, 0] / n[:, 0] * n[:, 1]) + rng.integers(-1, 2, N_STATES),
                         0, n[:, 1])
  else:
    level = {"poisson": 2.0, "exponential": 2.0, "gaussian": 0.0}[family_name]
    sums = n * (level + 0.02 * rng.normal(size=n.shape))
    sums[:, 1] = sums[:, 0] / n[:, 0] * n[:, 1] * (1 + 1e-5 * rng.normal(size=N_STATES))
  return jnp.asarray(n, jnp.int32), jnp.asarray(sums, jnp.float32)


@pytest.mark.slow
@pytest.mark.parametrize("family_name", ["bernoulli", "poisson", "exponential", "gaussian"])
def test_every_rule_at_near_ties(family_name):
  family = jbai.families.BUILTIN[family_name]()
  rng = np.random.default_rng(0)
  with jax.enable_x64(False):
    counts, sums = near_tie_states(family_name, rng)
    stats = jax.vmap(lambda c, s: arm_stats(family, c, s[:, None], jnp.sum(c)))(counts, sums)
    keys = jax.random.split(jax.random.key(0), N_STATES)
    for name, factory in jbai.rules.RULES.items():
      rule = factory()
      init = with_delta(name, rule.init(K), jnp.log(1 / 0.1))  # delta-dependent rules
      state = jax.tree.map(lambda x: jnp.broadcast_to(x, (N_STATES,) + jnp.shape(x)), init)
      if name == "fws":  # iterates anywhere on the simplex, not only the uniform start
        state = state._replace(x=jnp.asarray(rng.dirichlet(np.ones(K), N_STATES), jnp.float32))
      try:
        arm, new = jax.jit(jax.vmap(lambda k, s, st: rule.select(k, family, s, st)))(
            keys, stats, state)
      except ValueError:  # the rule refuses the family (sub-Gaussian rules), when traced
        assert rule_refusal(family, rule, K) is not None, name
        continue
      arm = np.asarray(arm)
      assert np.all((arm >= 0) & (arm < K)), name
      for leaf in jax.tree.leaves(new):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
          assert np.all(np.isfinite(leaf)), name
