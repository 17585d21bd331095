"""Checks under the caller's jit on request (`checks=True`, `jbai.checks`):
each bad value that passes a traced computation unchecked by default raises the
boundary's one-line message through `jax.experimental.checkify`."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

import jbai

KEY = jax.random.key(0)
GAUSSIAN = jbai.families.gaussian()
GOOD = [1.0, 0.5, 0.0]


def raised(fn, *args):
  """The message of the check that failed in checkify(fn)(*args), or None."""
  error, _ = checkify.checkify(fn)(*args)
  try:
    error.throw()
  except checkify.JaxRuntimeError as e:
    assert isinstance(e, ValueError)
    return str(e)
  return None


@pytest.fixture(scope="module")
def tcb_rollout():
  return jax.jit(lambda m, d: jbai.rollout(KEY, GAUSSIAN, m, "tcb", d, 8, max_steps=500,
                                           checks=True).tau)


@pytest.mark.parametrize("means, delta, message", [
    ([np.nan, 0.5, 0.0], 0.1, "means contain NaN"),
    ([np.inf, 0.5, 0.0], 0.1, "means must be finite"),
    ([1e5, 0.5, 0.0], 0.1, "mean 100000.0 is outside Theta"),
    ([1.0, 1.0, 0.0], 0.1, "tie for the best arm at mean 1.0"),
    (GOOD, np.nan, r"delta must be in \(0, 1\), got nan"),
    (GOOD, 0.0, r"delta must be in \(0, 1\), got 0.0"),
    (GOOD, 1.5, r"delta must be in \(0, 1\), got 1.5"),
    (GOOD, 0.1, None),
])
def test_rollout_checks_traced_means_and_delta(tcb_rollout, means, delta, message):
  dtype = jnp.zeros(()).dtype
  got = raised(tcb_rollout, jnp.asarray(means, dtype), jnp.asarray(delta, dtype))
  if message is None:
    assert got is None
  else:
    assert got is not None and __import__("re").search(message, got), got
    assert "\n" not in got


def test_a_batch_names_its_bad_instance(tcb_rollout):
  table = jnp.asarray([GOOD, [0.3, 0.3, 0.0]])
  assert "(means [0.3 0.3 0. ])" in raised(tcb_rollout, table, jnp.asarray(0.1))


def test_without_checks_the_trials_are_the_same_and_nothing_is_raised():
  """checks=True changes no trial; checks=False traces no check (the caller's jit
  needs no checkify)."""
  run = lambda checks: jax.jit(lambda m: jbai.rollout(
      KEY, GAUSSIAN, m, "t3c", 0.1, 8, max_steps=500, checks=checks))
  plain = run(False)(jnp.asarray(GOOD))
  error, checked = checkify.checkify(run(True))(jnp.asarray(GOOD))
  assert error.get() is None
  for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(checked)):
    np.testing.assert_array_equal(a, b)


def test_estimate_and_finite_difference_check_runtime_parameters():
  est = jax.jit(lambda b: jbai.estimate(KEY, GAUSSIAN, GOOD, "t3c", 0.1, 8, max_steps=500,
                                        params={"beta": b}, checks=True).mean_tau)
  assert "beta must be in (0, 1), got 1.5" in raised(est, 1.5)
  assert raised(est, 0.5) is None
  # The gradient under checkify too.
  grad = jax.grad(lambda m: jbai.estimate(KEY, GAUSSIAN, m, "tcb", 0.1, 8, max_steps=500,
                                          checks=True).mean_tau)
  assert "means contain NaN" in raised(jax.jit(grad), jnp.asarray([np.nan, 0.5, 0.0]))
  # A traced point x + h outside (0, 1): beta + h = 1.1.
  fd = jax.jit(lambda b: jbai.finite_difference(KEY, GAUSSIAN, GOOD, "t3c", 0.1, 8, "beta",
                                                0.3, max_steps=500, params={"beta": b},
                                                checks=True).mean_tau)
  assert "beta must be in (0, 1), got 1.1" in raised(fd, 0.8)


class LateBadArm:
  """A user's rule that selects arm K once its first 40 steps are past: later than
  the eager check of a rule's first steps (`inputs.check_rule_arms`) looks."""

  name = "late-bad-arm"

  def init(self, num_arms):
    return ()

  def select(self, key, family, arm_stats, state):
    del key, family
    arm = jnp.where(arm_stats.t >= 40, arm_stats.counts.shape[-1],
                    jnp.argmin(arm_stats.counts))
    return arm.astype(jnp.int32), state


def test_a_users_arm_out_of_range_is_caught_on_every_step_eagerly_and_under_jit():
  rule = LateBadArm()
  message = ("rule 'late-bad-arm' selected an arm outside 0 to 2 in trial 0 (its counts sum "
             "to 40 of its 200 steps)")
  with pytest.raises(ValueError, match=re.escape(message)):
    jbai.rollout(KEY, GAUSSIAN, GOOD, rule, 0.1, 4, max_steps=200, checks=True)
  run = jax.jit(lambda m: jbai.rollout(KEY, GAUSSIAN, m, rule, 0.1, 4, max_steps=200,
                                       checks=True).tau)
  assert message in raised(run, jnp.asarray(GOOD))


def test_the_oracle_checks_traced_means_and_gamma():
  bern = jbai.families.bernoulli()
  solve = jax.jit(lambda m: jbai.oracle.optimal_allocation(bern, m, checks=True)[1])
  assert "mean 1.5 is outside Theta" in raised(solve, jnp.asarray([1.5, 0.2, 0.1]))
  # Gamma rounds to 0 in float32: KL = 0.09 / (2 sigma^2) is below its smallest number.
  # (Bernoulli [0.5, 0.499999, 0.3] has Gamma = 5e-13 in float32, its KL computed to
  # a few units of roundoff: `jbai.families.base.bregman_xlogx`.)
  wide = jbai.families.gaussian(sigma=1e19)
  got = raised(jax.jit(lambda m: jbai.oracle.optimal_allocation(
      wide, m, method="exact", checks=True)[1]), jnp.asarray([0.5, 0.2, 0.1], jnp.float32))
  assert "cannot be told apart in float32" in got
  assert raised(solve, jnp.asarray([0.5, 0.2, 0.1])) is None


def test_a_users_rule_runs_inside_the_callers_jit_over_the_key_or_delta():
  """Inside the caller's jit every value is traced, a user's rule's arms too: the
  eager check of its first steps is skipped (checks=True checks them instead)."""
  base = jbai.rules.tcb()
  mine = jbai.Rule("mine", base.init, lambda k, f, s, st: base.select(k, f, s, st))
  run = lambda k, rule, d: jbai.rollout(k, GAUSSIAN, GOOD, rule, d, 4, scores=False).tau
  over_key_and_delta = jax.jit(lambda k, d: run(k, mine, d))
  np.testing.assert_array_equal(over_key_and_delta(KEY, 0.1), run(KEY, "tcb", 0.1))


def test_checks_of_traced_instances_name_the_bad_row():
  """Instances as one traced [I, K] array run in one loop, and checks=True flags
  the bad row: the way to check a batch (checkify refuses a while loop that
  jax.vmap batches, so rollout under the caller's vmap cannot be checkified)."""
  run = jax.jit(lambda m: jbai.rollout(KEY, GAUSSIAN, m, "tcb", 0.1, 4, checks=True).tau)
  assert raised(run, jnp.asarray([GOOD, [1.0, 0.2, 0.0]])) is None
  assert "tie for the best arm" in raised(run, jnp.asarray([GOOD, [1.0, 1.0, 0.0]]))
