"""The boundary with a user's code: a rule of their own, calls under jax
transformations, and results as pytrees."""

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai


class RoundRobin(NamedTuple):
  """A user's rule as the docs describe it: a NamedTuple of two pure functions."""

  init: Callable
  select: Callable


def round_robin() -> RoundRobin:
  return RoundRobin(init=lambda num_arms: (),
                    select=lambda key, family, stats, state: (
                        (stats.t % stats.counts.shape[-1]).astype(jnp.int32), state))


def test_a_users_rule_runs_in_simulate_and_rollout():
  rule = round_robin()
  res = jbai.simulate(jax.random.key(0), "gaussian", [1.0, 0.0, -0.5], rule, 0.1, 12,
                      lanes=4)
  core = jbai.rollout(jax.random.key(0), "gaussian", [1.0, 0.0, -0.5], rule, 0.1, 12,
                      lanes=4, scores=False)
  np.testing.assert_array_equal(res.tau, np.asarray(core.tau))
  # round robin: the counts differ by at most one
  assert np.all(res.counts.max(-1) - res.counts.min(-1) <= 1)
  assert res.summary[0]["trials"] == 12


class BlockRobin(NamedTuple):
  """A user's rule that pulls each arm 7 times in a row (`Rule.pulls`)."""

  init: Callable
  select: Callable
  pulls: Callable


def block_robin() -> BlockRobin:
  return BlockRobin(init=lambda num_arms: (),
                    select=lambda key, family, stats, state: (
                        (stats.t // 7 % stats.counts.shape[-1]).astype(jnp.int32), state),
                    pulls=lambda family, stats, state, arm: 7 - stats.t % 7)


def test_a_users_block_rule_takes_its_blocks_in_one_step():
  """Gaussian rewards come 7 at a time, so the stopping rule, checked once a step,
  stops at multiples of 7; with scores, one pull per step, the same trials (the
  stop is consulted at a block's end, as without scores: issue 79)."""
  key, means = jax.random.key(0), [2.0, 0.0, -2.0]
  blocks, pulls = (jbai.rollout(key, "gaussian", means, block_robin(), 0.1, 16, lanes=4,
                                max_steps=10_000, scores=scores) for scores in (False, True))
  assert not np.asarray(blocks.hit_cap).any() and (np.asarray(blocks.tau) % 7 == 0).all()
  for field in ("tau", "answer", "counts"):
    np.testing.assert_array_equal(np.asarray(getattr(pulls, field)),
                                  np.asarray(getattr(blocks, field)), err_msg=field)


def test_a_users_block_rule_stops_at_the_cap():
  """Blocks of 7, cap 20: the last block is cut to 6, and every trial ends at
  t = 20 with counts (7, 7, 6), in blocks (Gaussian), pull by pull (with scores),
  and on a family without `sample_block` (Poisson)."""
  for family, means, scores in (("gaussian", [0.2, 0.1, 0.0], False),
                                ("gaussian", [0.2, 0.1, 0.0], True),
                                ("poisson", [3.0, 2.0, 1.0], False)):
    res = jbai.rollout(jax.random.key(0), family, means, block_robin(), 1e-9, 4, lanes=2,
                       max_steps=20, scores=scores)
    assert np.asarray(res.hit_cap).all() and (np.asarray(res.steps) == 20).all()
    np.testing.assert_array_equal(np.asarray(res.counts), [[7, 7, 6]] * 4)


def test_a_users_rule_is_the_same_program_every_call():
  from jbai.core import inputs
  rule = round_robin()
  assert inputs.as_rule(rule) == inputs.as_rule(rule)
  assert inputs.as_rule(rule) != inputs.as_rule(round_robin())  # other functions


def test_not_a_rule_is_refused_by_name():
  with pytest.raises(TypeError, match="init.*select"):
    jbai.simulate(jax.random.key(0), "gaussian", [1.0, 0.0], object(), 0.1, 4)


@pytest.mark.parametrize("call", ["simulate", "trace"])
def test_host_functions_under_jit_name_the_pure_one(call):
  def f(means):
    if call == "simulate":
      return jbai.simulate(jax.random.key(0), "gaussian", means, "tcb", 0.1, 4).tau
    return jbai.trace(jax.random.key(0), "gaussian", means, "tcb", 20, 2).gamma_t

  with pytest.raises(TypeError, match=r"jbai\.rollout"):
    jax.jit(f)(jnp.array([1.0, 0.0]))
  with pytest.raises(TypeError, match=r"traced 'means'"):
    jax.vmap(f)(jnp.array([[1.0, 0.0], [0.5, 0.0]]))


def test_result_is_a_pytree_of_arrays_with_its_summary_apart():
  res = jbai.simulate(jax.random.key(1), "bernoulli", [0.8, 0.4], "tcb", [0.1, 0.01], 10,
                      threshold="kk", lanes=4)
  leaves = jax.tree.leaves(res)
  assert leaves and all(isinstance(x, np.ndarray) for x in leaves)
  shapes = jax.tree.map(np.shape, res)
  assert shapes.tau == (10, 2) and shapes.counts == (10, 2)
  doubled = jax.tree.map(lambda x: 2 * x, res)
  np.testing.assert_array_equal(doubled.tau, 2 * res.tau)
  assert doubled.summary is res.summary and doubled.stats is res.stats
  assert res.trials.tau is res.tau


def test_optimal_allocation_runs_under_jit_and_grad():
  fam = jbai.families.gaussian()
  means = jnp.array([1.2, 1.0, 0.7])
  w, gam, _ = jbai.oracle.optimal_allocation(fam, means, method="exact")
  w_jit, gam_jit, _ = jax.jit(
      lambda m: jbai.oracle.optimal_allocation(fam, m, method="exact"))(means)
  np.testing.assert_allclose(w_jit, w, rtol=1e-6)
  np.testing.assert_allclose(gam_jit, gam, rtol=1e-6)
  grad = jax.grad(lambda m: jbai.oracle.optimal_allocation(fam, m, method="exact")[1])(means)
  np.testing.assert_allclose(
      grad, jax.grad(lambda m: jbai.oracle.exact_solve(fam, m)[1])(means), rtol=1e-6)


def test_beta_optimal_allocation_under_jit_names_the_pure_one():
  fam = jbai.families.gaussian()
  with pytest.raises(TypeError, match="exact_beta_solve"):
    jax.jit(lambda b: jbai.oracle.beta_optimal_allocation(fam, [1.0, 0.5], b)[1])(0.5)


@pytest.mark.parametrize("bad_arm", [3, -1])
def test_a_users_rule_that_selects_an_arm_out_of_range_is_refused(bad_arm):
  """On the eager path a user's rule runs on a trial's first steps before anything
  compiles: an arm outside [0, K) is one error naming the arm and the step."""
  rule = RoundRobin(init=lambda num_arms: (),
                    select=lambda key, family, stats, state: (
                        jnp.where(stats.t < 2, stats.t, bad_arm).astype(jnp.int32), state))
  for run in (jbai.simulate, jbai.rollout):
    with pytest.raises(ValueError, match=rf"rule 'RoundRobin' selected arm {bad_arm} at "
                       r"step 2 of a trial; the arms are 0 to 2"):
      run(jax.random.key(0), "gaussian", [1.0, 0.0, -0.5], rule, 0.1, 4)


def test_jbais_own_rules_are_not_run_by_the_arm_check(monkeypatch):
  """The check costs jbai's own rules nothing: their select is never called eagerly."""
  from jbai.core import inputs
  rule = jbai.rules.tcb()
  calls = []
  traced = rule._replace(select=lambda *a: calls.append(1) or rule.select(*a))
  inputs.check_rule_arms(jbai.families.gaussian(), rule, np.array([1.0, 0.0]))
  inputs.check_rule_arms(jbai.families.gaussian(), traced, np.array([1.0, 0.0]))
  assert len(calls) == 4  # only the look-alike, defined here, ran (2 K steps)
