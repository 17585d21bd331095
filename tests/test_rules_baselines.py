"""Tests of the baseline sampling rules: top-two (T3C, TTTS, EB-TC, EB-TCI, TS-TCI,
T3C with beta tuning), Track-and-Stop (C- and D-tracking) and Frank-Wolfe sampling.

Statistical checks state their confidence: the binomial tolerances of the unit
tests are z = 4 standard deviations (two-sided level about 6e-5); the delta-PAC
tests are one-sided binomial tests at level 1%. Tests that run simulations are
marked slow.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog

import jbai
from jbai.families import bernoulli, gaussian
from jbai.rules import (ebtc, ebtci, fws, t3c, t3c_tuned, tas_c, tas_d, top_two, tstci,
                        ttts)
from jbai.rules.fws import FWSState, fw_direction, is_square, solve_bai_game
from jbai.rules.t3c_tuned import tuned_beta
from jbai.rules.tas import eps_projection
from jbai.rules.ttts import resampling_challenger
from jbai.state import arm_stats, empty_stats, observe

from helpers import assert_delta_correct

NAMES = ["t3c", "ttts", "ebtc", "ebtci", "tstci", "t3c-tuned", "tas-c", "tas-d", "fws"]
FACTORIES = {name: jbai.rules.RULES[name] for name in NAMES}
TOP_TWO_FIXED_BETA = ["t3c", "ttts", "ebtc", "ebtci", "tstci"]
Z = 4.0  # binomial tolerance in standard deviations


def make_stats(family, counts, means):
  """ArmStats whose sample means are exactly `means` (sum of rewards = n * mean)."""
  counts = jnp.asarray(counts, jnp.int32)
  means = jnp.asarray(means, float)
  stats = (counts * means)[:, None]
  return arm_stats(family, counts, stats, jnp.sum(counts))


def pulls(rule, family, stats, n_keys, state=None, seed=0):
  """Arms chosen by `rule` at `stats` over n_keys independent keys (vmapped, jitted)."""
  state = rule.init(stats.counts.shape[0]) if state is None else state
  keys = jax.random.split(jax.random.key(seed), n_keys)
  fn = jax.jit(jax.vmap(lambda k: rule.select(k, family, stats, state)[0]))
  return np.asarray(fn(keys))


def select(rule, family, stats, state=None, key=None):
  """One jitted call of rule.select (jit: eager loops in the oracle are slow)."""
  state = rule.init(stats.counts.shape[0]) if state is None else state
  key = jax.random.key(0) if key is None else key
  return jax.jit(lambda k, s, st: rule.select(k, family, s, st))(key, stats, state)


def oracle_w(family, means):
  """w(nu) from the exact oracle, jitted."""
  return jax.jit(jbai.oracle.exact_solve, static_argnums=0)(family, jnp.asarray(means))[0]


def binomial_tol(p, n):
  return Z * math.sqrt(p * (1 - p) / n)


# ---------------------------------------------------------------- all rules


@pytest.mark.parametrize("name", list(FACTORIES))
def test_jit_vmap_state_and_determinism(name):
  """Every rule jits and vmaps over keys and statistics, keeps its state's
  structure, shapes and dtypes, returns a valid int32 arm, and is a function of
  its key; while some count is 0 it pulls the least-sampled arm (lowest index)."""
  rule = FACTORIES[name]()
  fam = gaussian()
  num_arms, batch = 4, 6
  state0 = rule.init(num_arms)
  rng = np.random.default_rng(0)
  counts = rng.integers(1, 30, (batch, num_arms))
  counts[0] = [3, 0, 2, 0]
  means = rng.uniform(-1.0, 1.0, (batch, num_arms))
  stats = jax.vmap(lambda c, m: make_stats(fam, c, m))(jnp.asarray(counts), jnp.asarray(means))
  states = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)), state0)
  keys = jax.random.split(jax.random.key(1), batch)
  step = jax.jit(jax.vmap(lambda k, s, st: rule.select(k, fam, s, st)))
  arms, new_states = step(keys, stats, states)
  assert arms.shape == (batch,) and arms.dtype == jnp.int32
  assert np.all((np.asarray(arms) >= 0) & (np.asarray(arms) < num_arms))
  assert int(arms[0]) == 1
  assert jax.tree.structure(new_states) == jax.tree.structure(states)
  for new, old in zip(jax.tree.leaves(new_states), jax.tree.leaves(states)):
    assert new.shape == old.shape and new.dtype == old.dtype
  again, _ = step(keys, stats, states)
  np.testing.assert_array_equal(arms, again)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_runs_a_short_trial(name):
  """A 300-step trajectory on Gaussian [1, 0.5, 0] from no data: the first K pulls
  are 0, 1, ..., K-1, every arm keeps being sampled, and the best arm more than the
  worst."""
  rule = FACTORIES[name]()
  fam = gaussian()
  means = jnp.array([1.0, 0.5, 0.0])

  def body(carry, t):
    s, state, key = carry
    k_rule, k_reward = jax.random.split(jax.random.fold_in(key, t))
    arm, state = rule.select(k_rule, fam, s, state)
    s = observe(fam, s, arm, fam.sample(k_reward, means[arm]))
    return (s, state, key), arm

  run = jax.jit(lambda key: jax.lax.scan(
      body, (empty_stats(fam, 3), rule.init(3), key), jnp.arange(300)))
  (s, _, _), arms = run(jax.random.key(3))
  np.testing.assert_array_equal(arms[:3], [0, 1, 2])
  counts = np.asarray(s.counts)
  assert counts.sum() == 300 and counts.min() >= 5
  assert counts[0] > counts[2]


# ------------------------------------------------------------- validation


@pytest.mark.parametrize("name", TOP_TWO_FIXED_BETA)
@pytest.mark.parametrize("beta", [0.0, 1.0, -0.1, 1.5])
def test_bad_beta_raises(name, beta):
  with pytest.raises(ValueError, match="beta"):
    FACTORIES[name](beta=beta)


@pytest.mark.parametrize("name", TOP_TWO_FIXED_BETA)
def test_beta_is_a_runtime_parameter(name):
  """beta lives in the state, in the default float dtype, and rules that differ
  in beta alone share a program identity."""
  factory = FACTORIES[name]
  state = factory(beta=0.3).init(3)
  assert float(state.beta) == np.float64(0.3).astype(jnp.result_type(float))
  assert state.beta.dtype == jnp.result_type(float)
  assert factory(beta=0.3) != factory(beta=0.7)
  assert factory(beta=0.3).program() == factory(beta=0.7).program()
  assert factory(beta=0.3).program() != jbai.rules.tcb().program()


def test_structural_parameters_stay_in_the_program():
  assert ttts(max_redraws=10).program() != ttts(max_redraws=20).program()
  assert ttts(beta=0.2).program() == ttts(beta=0.6).program()
  assert tas_d(lazy_factor=1.5).program() != tas_d(lazy_factor=2.0).program()
  # TCB's eps is a runtime value (Rule.runtime), not structural: one program.
  assert jbai.rules.tcb(eps=1.0).program() == jbai.rules.tcb(eps=2.0).program()


def test_bad_parameters_raise():
  with pytest.raises(ValueError, match="max_redraws"):
    ttts(max_redraws=0)
  with pytest.raises(ValueError, match="max_redraws"):
    ttts(max_redraws=2.5)
  for factory in (tas_c, tas_d):
    with pytest.raises(ValueError, match="lazy_factor"):
      factory(lazy_factor=1.0)


@pytest.mark.parametrize("name", ["t3c", "ttts", "tstci", "t3c-tuned"])
def test_thompson_rules_need_a_posterior(name):
  fam = gaussian()._replace(posterior_sample=None)
  rule = FACTORIES[name]()
  stats = make_stats(fam, [5, 5, 5], [1.0, 0.5, 0.0])
  with pytest.raises(ValueError, match="posterior_sample"):
    select(rule, fam, stats)


def test_empirical_best_rules_need_no_posterior():
  fam = gaussian()._replace(posterior_sample=None)
  stats = make_stats(fam, [5, 5, 5], [1.0, 0.5, 0.0])
  for name in ("ebtc", "ebtci"):
    rule = FACTORIES[name]()
    select(rule, fam, stats)


# ---------------------------------------------------------------- top-two


# Gaussian, counts 2000 per arm: the posterior sd is 0.022, so the Thompson leader
# is arm 0 in all but ~1e-200 of draws, and t = 6000 leaves forced exploration off.
CONCENTRATED = ([2000, 2000, 2000], [1.0, 0.0, -1.0])


@pytest.mark.parametrize("name", TOP_TWO_FIXED_BETA)
@pytest.mark.parametrize("beta", [0.3, 0.5])
def test_leader_pulled_with_probability_beta(name, beta):
  """The leader (arm 0 here) is pulled in a fraction beta of 4000 keys (z = 4)."""
  fam = gaussian()
  stats = make_stats(fam, *CONCENTRATED)
  n = 4000
  arms = pulls(FACTORIES[name](beta=beta), fam, stats, n)
  share = np.mean(arms == 0)
  assert abs(share - beta) < binomial_tol(beta, n)
  # The challenger is the closest arm: TC and TCI (equal counts) give arm 1, and
  # so does TTTS's exact challenger (arm 2 has probability about e^-1500 here).
  assert set(arms) <= {0, 1}


def test_tuned_beta_is_the_plug_in_top_weight():
  """T3C-tuned pulls the leader with probability w_0(nu_hat), from the exact oracle."""
  fam = gaussian()
  counts, means = [2000, 2000, 2000, 2000], [1.0, 0.0, 0.0, -0.5]
  stats = make_stats(fam, counts, means)
  beta = float(oracle_w(fam, means)[0])
  assert 0.3 < beta < 0.5  # differs from the default 0.5 of T3C
  n = 4000
  arms = pulls(t3c_tuned(), fam, stats, n)
  assert abs(np.mean(arms == 0) - beta) < binomial_tol(beta, n)
  assert np.isclose(float(jax.jit(lambda s: tuned_beta(fam, s))(stats)), beta)
  # The exact oracle gives the same beta to 1e-12, hence the same pulls.
  np.testing.assert_array_equal(arms, pulls(t3c_tuned(solver="exact"), fam, stats, n))


# Leader arm 0 (for TS leaders too: arms 1 and 2 are 6.3 and 7.1 posterior sds
# below it); W(0, 1) = 19.98 < W(0, 2) = 25.03, but T(1) = 10^6 >> T(2) = 100, so
# the log T penalty makes arm 2 the TCI challenger: 19.98 + 13.82 > 25.03 + 4.61.
PENALTY_CASE = ([10**6, 10**6, 100], [1.0, 1.0 - 0.00894, 1.0 - 0.7075])


def test_tci_penalty_changes_the_challenger():
  fam = gaussian()
  stats = make_stats(fam, *PENALTY_CASE)
  lead = jnp.asarray(0)
  key, active = jax.random.key(0), jnp.asarray(True)
  costs = np.asarray(top_two.transport_costs(fam, stats, lead))
  np.testing.assert_allclose(costs[1:], [19.98, 25.03], atol=0.01)
  assert int(top_two.tc_challenger(key, fam, stats, lead, active)) == 1
  assert int(top_two.tci_challenger(key, fam, stats, lead, active)) == 2
  # Whole rules (no forced exploration in these three): TC rules never pull arm 2,
  # TCI rules never pull arm 1.
  assert set(pulls(t3c(), fam, stats, 500)) == {0, 1}
  assert set(pulls(ebtci(), fam, stats, 500)) == {0, 2}
  assert set(pulls(tstci(), fam, stats, 500)) == {0, 2}


def test_tc_challenger_takes_an_arm_above_the_leader():
  """W(L, j) = 0 when mu(j) >= mu(L): an arm beating the (sampled) leader is the challenger."""
  fam = bernoulli()
  stats = make_stats(fam, [50, 50, 50], [0.4, 0.6, 0.2])
  arm = top_two.tc_challenger(jax.random.key(0), fam, stats, jnp.asarray(0), jnp.asarray(True))
  assert int(arm) == 1


def test_ebtc_forced_exploration():
  """EB-TC pulls the least-sampled arm while some T_t(i) <= ceil(sqrt(t/K)), and only then."""
  fam = gaussian()
  # t = 6020, K = 3: bound ceil(sqrt(2006.7)) = 45 >= 20.
  stats = make_stats(fam, [3000, 3000, 20], [1.0, 0.95, 0.5])
  assert set(pulls(ebtc(), fam, stats, 200)) == {2}
  # Arm 2 at 60 > ceil(sqrt(6060 / 3)) = 45: leader or TC challenger again.
  stats = make_stats(fam, [3000, 3000, 60], [1.0, 0.95, 0.5])
  assert set(pulls(ebtc(), fam, stats, 200)) == {0, 1}
  # T(2) = 100 <= ceil(sqrt(2000100 / 3)) = 817: forced, where T3C, which has no
  # forced exploration, never pulls arm 2 (test_tci_penalty_changes_the_challenger).
  stats = make_stats(fam, *PENALTY_CASE)
  assert set(pulls(ebtc(), fam, stats, 200)) == {2}


def test_ttts_resampling_challenger_distribution():
  """The re-sampled challenger (TTTS for families whose posterior has no law) is
  distributed as argmax theta given argmax theta != L.

  Wide posterior (Gaussian, 2 pulls per arm): compare the challenger frequencies
  over 4000 keys with a direct Monte Carlo estimate from 200,000 posterior draws
  (z = 4 on the challenger's binomial frequency, plus the reference's own error).
  """
  fam = gaussian()
  stats = make_stats(fam, [2, 2, 2], [1.0, 0.6, 0.4])
  challenger = resampling_challenger(100)
  lead, active = jnp.asarray(0), jnp.asarray(True)
  n = 4000
  keys = jax.random.split(jax.random.key(5), n)
  arms = np.asarray(jax.jit(jax.vmap(
      lambda k: challenger(k, fam, stats, lead, active)))(keys))
  assert 0 not in set(arms)
  draws = jax.vmap(lambda k: fam.posterior_sample(k, stats.counts, stats.stats))(
      jax.random.split(jax.random.key(6), 200_000))
  best = np.asarray(jnp.argmax(draws, axis=-1))
  p1 = np.mean(best[best != 0] == 1)
  assert 0.55 < p1 < 0.8  # both arms are real challengers here (TC would say arm 1 only)
  assert abs(np.mean(arms == 1) - p1) < binomial_tol(p1, n) + 0.01


def test_ttts_falls_back_to_tc_at_the_cap():
  """With a concentrated posterior no re-draw beats the leader: the TC challenger is used."""
  fam = gaussian()
  stats = make_stats(fam, [10**6, 10**6, 10**6], [1.0, 0.0, 0.5])
  lead, active = jnp.asarray(0), jnp.asarray(True)
  arms = jax.jit(jax.vmap(
      lambda k: resampling_challenger(5)(k, fam, stats, lead, active)))(
          jax.random.split(jax.random.key(0), 200))
  assert set(np.asarray(arms)) == {2}  # argmin W(0, j): the closer arm 2 (mean 0.5)
  # Inactive (the leader is pulled): no re-draws, the fallback value is returned.
  inactive = resampling_challenger(5)(jax.random.key(1), fam,
                                           make_stats(fam, [2, 2, 2], [1.0, 0.6, 0.4]),
                                           lead, jnp.asarray(False))
  assert int(inactive) == 1


# ------------------------------------------------------------ Track-and-Stop


@pytest.mark.parametrize("solver", ["warm", "warm-converged"])
@pytest.mark.parametrize("name", ["tas-c", "tas-d"])
def test_tracked_allocation_is_the_exact_one_along_a_trajectory(name, solver):
  """Along 1,000 steps of the rule's own trajectory on the Bernoulli sensitivity
  instance, once every arm has been pulled, the allocation it tracks is
  exact_solve's at the step's sample means: to 1e-9 at every step with the
  converging warm oracle; with the default (two Newton steps per step), to 1e-12
  at the median step and, after the first 200 steps, to 1e-6 at every step but
  the 3 after a change of the empirical best arm (cold starts) or after a mean
  leaves the edge of Theta (the rarely pulled arm of mean 0.06 at 0: a jump of
  the KLs that takes the solver more than two steps)."""
  fam = bernoulli()
  means = jnp.array([0.8, 0.5, 0.3, 0.29, 0.06])
  rule = FACTORIES[name](solver=solver)

  def body(carry, t):
    s, state = carry
    k_rule, k_reward = jax.random.split(jax.random.fold_in(jax.random.key(5), t))
    arm, state = rule.select(k_rule, fam, s, state)
    out = (s.mean, state.w, jnp.min(s.counts))
    return (observe(fam, s, arm, fam.sample(k_reward, means[arm])), state), out

  run = jax.jit(lambda: jax.lax.scan(body, (empty_stats(fam, 5), rule.init(5)),
                                     jnp.arange(1000))[1])
  mus, w, pulled = run()
  mus, w = mus[np.asarray(pulled) > 0], w[np.asarray(pulled) > 0]
  w_ref = oracle_w(fam, mus)
  if solver == "warm-converged":
    np.testing.assert_allclose(w, w_ref, atol=1e-9)
    return
  err = np.max(np.abs(np.asarray(w) - np.asarray(w_ref)), -1)
  top = np.argmax(np.asarray(mus), -1)
  edge = np.any((np.asarray(mus) == 0) | (np.asarray(mus) == 1), -1)
  fresh = np.r_[True, (top[1:] != top[:-1]) | edge[:-1]].astype(float)
  cold = np.convolve(fresh, np.ones(3), "full")[:len(top)] > 0
  assert np.median(err) <= 1e-12
  assert np.all(err[200:][~cold[200:]] <= 1e-6)


def test_solver_parameter():
  for factory in (tas_c, tas_d, t3c_tuned):
    with pytest.raises(ValueError, match="solver"):
      factory(solver="newton")
    programs = {factory(solver=s).program() for s in ("warm", "warm-converged", "exact")}
    assert len(programs) == 3
    assert dict(factory().params)["solver"] == "warm"


def test_eps_projection():
  w = jnp.array([0.9, 0.1, 0.0])
  np.testing.assert_allclose(eps_projection(w, 0.05), [0.875, 0.075, 0.05], atol=1e-12)
  rng = np.random.default_rng(0)
  for _ in range(20):
    w = jnp.asarray(rng.dirichlet(np.full(5, 0.3)))
    eps = float(rng.uniform(0.0, 0.2))
    v = np.asarray(eps_projection(w, eps))
    assert np.isclose(v.sum(), 1.0) and v.min() >= eps - 1e-12
    if np.min(np.asarray(w)) >= eps:
      np.testing.assert_allclose(v, w, atol=1e-12)


def test_tas_d_pulls_the_most_under_tracked_arm():
  fam = gaussian()
  counts, means = np.array([40, 30, 30]), np.array([1.0, 0.5, 0.0])
  stats = make_stats(fam, counts, means)  # t = 100: forced if T < 10 - 1.5
  w = oracle_w(fam, means)
  deficit = 100 * np.asarray(w) - counts
  assert np.max(deficit) > np.sort(deficit)[-2] + 1e-6  # a unique most under-tracked arm
  # The converging warm oracle: one call from the cold start is exact (the default
  # takes two Newton steps per call, which a cold start needs more of).
  rule = tas_d(solver="warm-converged")
  arms = pulls(rule, fam, stats, 20)
  assert set(arms) == {int(np.argmax(deficit))}
  _, state = select(rule, fam, stats)
  np.testing.assert_allclose(state.w, w, rtol=1e-12)
  # Forced exploration: T(2) = 5 < sqrt(100) - 3/2, even though arm 2 is over-tracked.
  stats = make_stats(fam, [90, 5, 5], [1.0, 0.5, -5.0])
  assert set(pulls(rule, fam, stats, 20)) == {1}


def test_tas_c_tracks_the_cumulative_projected_allocation():
  fam = bernoulli()
  means = jnp.array([0.8, 0.5, 0.3, 0.29])
  stats = make_stats(fam, [40, 30, 20, 10], means)
  rule = tas_c(solver="warm-converged")  # exact from the cold start in one call
  deficit = jnp.array([0.3, -0.6, 0.5, -0.2])  # sums to 0, as it always does
  state = rule.init(4)._replace(deficit=deficit)
  arm, new = select(rule, fam, stats, state)
  w = oracle_w(fam, means)
  step = eps_projection(w, 0.5 / math.sqrt(16 + 100))
  expected = int(np.argmax(deficit + step))
  assert int(arm) == expected
  np.testing.assert_allclose(new.deficit, (deficit + step).at[expected].add(-1), atol=1e-12)
  assert abs(float(jnp.sum(new.deficit))) < 1e-12


def test_tas_lazy_recomputes_on_a_geometric_grid():
  fam = gaussian()
  means = jnp.array([1.0, 0.5, 0.0])
  stats = make_stats(fam, [40, 30, 30], means)  # t = 100
  rule = tas_d(lazy_factor=1.1, solver="warm-converged")  # exact in one call
  w_old = jnp.array([0.2, 0.2, 0.6])
  # Not due (next recomputation at t = 150): the stored w is tracked.
  state = rule.init(3)._replace(w=w_old, next_solve=jnp.asarray(150, jnp.int32))
  arm, new = select(rule, fam, stats, state)
  np.testing.assert_array_equal(new.w, w_old)
  assert int(new.next_solve) == 150
  assert int(arm) == int(np.argmax(100 * np.asarray(w_old) - np.array([40, 30, 30])))
  # Due: w(nu_hat) is recomputed and the next time is ceil(1.1 t) = 110.
  state = state._replace(next_solve=jnp.asarray(100, jnp.int32))
  _, new = select(rule, fam, stats, state)
  np.testing.assert_allclose(new.w, oracle_w(fam, means), rtol=1e-12)
  assert int(new.next_solve) == 110


# ------------------------------------------------------------ Frank-Wolfe


def lp_game_value(a, b, c, active, top):
  """Brute force: max_z min_{j active} <g_j, z> - c_j by scipy's LP solver."""
  k = len(a)
  rows = [j for j in range(k) if active[j]]
  # Variables (z_1..z_K, v); maximise v s.t. v - <g_j, z> <= -c_j.
  a_ub = np.zeros((len(rows), k + 1))
  for r, j in enumerate(rows):
    a_ub[r, top], a_ub[r, j], a_ub[r, k] = -a[j], -b[j], 1.0
  res = linprog(np.r_[np.zeros(k), -1.0], A_ub=a_ub, b_ub=-np.asarray(c)[rows],
                A_eq=np.r_[np.ones(k), 0.0][None], b_eq=[1.0],
                bounds=[(0, None)] * k + [(None, None)], method="highs")
  assert res.success
  return -res.fun


def test_fws_game_matches_linear_programming():
  """The structured game solver attains the LP value on 200 random games."""
  rng = np.random.default_rng(0)
  solve = jax.jit(solve_bai_game)
  for trial in range(200):
    k = int(rng.integers(2, 7))
    top = int(rng.integers(k))
    a, b = rng.uniform(0.0, 2.0, k), rng.uniform(0.05, 2.0, k)
    c = rng.uniform(0.0, 1.0, k)
    active = rng.uniform(size=k) < 0.6
    active[top] = False
    if not active.any():
      active[(top + 1) % k] = True
    z, value = solve(*(jnp.asarray(v) for v in (a, b, c, active)), jnp.asarray(top))
    z = np.asarray(z)
    reference = lp_game_value(a, b, c, active, top)
    assert abs(float(value) - reference) < 1e-9, trial
    assert z.min() >= 0 and np.isclose(z.sum(), 1.0)
    payoff = [a[j] * z[top] + b[j] * z[j] - c[j] for j in range(k) if active[j]]
    assert abs(min(payoff) - reference) < 1e-9, trial


def test_fws_game_matches_linear_programming_with_many_arms_and_ties():
  """Games on 20 arms with up to 19 active, some with tied gradients or offsets,
  in float64 and in float32 (the engine's dtype): the LP value, to rounding."""
  rng = np.random.default_rng(1)
  k = 20
  solve = jax.jit(solve_bai_game)
  for trial in range(60):
    a, b = rng.uniform(0.0, 2.0, k), rng.uniform(0.05, 2.0, k)
    c = rng.uniform(0.0, 1.0, k)
    if trial % 3 == 0:  # ties: copies of one arm's gradient and offset
      a[1:6], b[1:6], c[1:6] = a[1], b[1], c[1]
    active = rng.uniform(size=k) < rng.uniform(0.1, 1.0)
    active[0] = False
    active[1] = True
    reference = lp_game_value(a, b, c, active, 0)
    for dtype, tol in ((jnp.float64, 1e-9), (jnp.float32, 1e-5)):
      z, value = solve(*(jnp.asarray(v, dtype) for v in (a, b, c)), jnp.asarray(active),
                       jnp.asarray(0))
      z = np.asarray(z, float)
      assert abs(float(value) - reference) < tol * max(1.0, abs(reference)), (trial, dtype)
      payoff = [a[j] * z[0] + b[j] * z[j] - c[j] for j in range(k) if active[j]]
      assert abs(min(payoff) - reference) < tol * max(1.0, abs(reference)), (trial, dtype)
      assert z.min() >= 0 and np.isclose(z.sum(), 1.0, atol=tol)


def test_fws_game_single_active_is_a_vertex():
  a, b, c = jnp.array([0.0, 0.3, 0.9]), jnp.array([0.0, 0.7, 0.2]), jnp.zeros(3)
  active = jnp.array([False, True, False])
  z, value = solve_bai_game(a, b, c, active, jnp.asarray(0))
  np.testing.assert_allclose(z, [0.0, 1.0, 0.0], atol=1e-9)  # argmax(a_1, b_1) = own arm
  assert np.isclose(float(value), 0.7)


def test_fws_direction_on_a_symmetric_instance():
  """Gaussian [1, 0, 0] at x = (1/2, 1/4, 1/4): f_1 = f_2, both active; the game
  puts equal weight on arms 1 and 2 (the instance's symmetry)."""
  fam = gaussian()
  z = np.asarray(jax.jit(lambda x, m: fw_direction(fam, x, m, jnp.asarray(0), 1e-3))(
      jnp.array([0.5, 0.25, 0.25]), jnp.array([1.0, 0.0, 0.0])))
  assert np.isclose(z.sum(), 1.0) and np.isclose(z[1], z[2], atol=1e-9)


def test_fws_near_tie_in_float32_keeps_a_finite_iterate():
  """Bernoulli means 78/153 and 77/151 (a relative gap of 3e-4). The state is from
  a trial of the delta-PAC test whose iterate became NaN there (and pulled arm 0
  until the step cap) when the float32 KL of the two rounded below 0; the KL is now
  a Bregman divergence that stays >= 0, and the iterate must stay finite either way."""
  fam = bernoulli()
  with jax.enable_x64(False):
    counts = jnp.asarray([153, 151, 26, 30], jnp.int32)
    stats = jnp.asarray([[78.0], [77.0], [1.0], [11.0]], jnp.float32)
    s = arm_stats(fam, counts, stats, jnp.sum(counts))
    assert float(fam.kl(s.mean[0], jnp.float32(0.5098686))) >= 0
    x = jnp.asarray([0.42501697, 0.42152873, 0.07172703, 0.08172722], jnp.float32)
    arm, new = select(fws(), fam, s, FWSState(x=x))
  assert np.all(np.isfinite(new.x)) and abs(float(jnp.sum(new.x)) - 1) < 1e-5
  assert 0 <= int(arm) < 4


def test_is_square():
  n = jnp.arange(0, 2000)
  expected = np.isin(np.arange(2000), np.arange(45) ** 2)
  np.testing.assert_array_equal(is_square(n), expected)


def test_fws_step_updates_iterate_and_tracks():
  fam = gaussian()
  rule = fws()
  x = jnp.array([0.5, 0.3, 0.2])
  # t = 12, K = 3: floor(t / K) = 4 is a square: forced exploration, z uniform.
  stats = make_stats(fam, [6, 3, 3], [1.0, 0.5, 0.0])
  arm, new = select(rule, fam, stats, FWSState(x=x))
  expected_x = x * 11 / 12 + 1 / 36
  np.testing.assert_allclose(new.x, expected_x, atol=1e-12)
  assert int(arm) == int(np.argmax(expected_x / np.array([6, 3, 3])))
  # t = 15: floor(5) is no square: a Frank-Wolfe step toward z of the game.
  stats = make_stats(fam, [7, 4, 4], [1.0, 0.5, 0.0])
  arm, new = select(rule, fam, stats, FWSState(x=x))
  z = jax.jit(lambda m: fw_direction(fam, x, m, jnp.asarray(0), jnp.asarray(15.0 ** -0.9 / 3)))(
      stats.mean)
  np.testing.assert_allclose(new.x, x * 14 / 15 + z / 15, atol=1e-12)
  assert int(arm) == int(np.argmax(np.asarray(new.x) / np.array([7, 4, 4])))


# ------------------------------------------------- simulations (jbai.simulate / trace)
# Long: marked slow. The delta-PAC instances have a close second arm and several
# arms between (gaps 0.2 and 0.15): a few thousand steps per trial at delta = 0.1.

PAC_INSTANCES = {"gaussian": (gaussian(), [1.0, 0.8, 0.6, 0.4, 0.2]),
                 "bernoulli": (bernoulli(), [0.6, 0.45, 0.3, 0.2])}


@pytest.mark.slow
@pytest.mark.parametrize("family_name", list(PAC_INSTANCES))
@pytest.mark.parametrize("name", list(FACTORIES))
def test_delta_pac_with_kk_threshold(name, family_name):
  """P(error) <= delta = 0.1 with the kk threshold, tested one-sided at 99% over 500
  or 2,000 trials, none at the step cap (`helpers.assert_delta_correct`).

  Runs in float32, the engine's default outside the tests.
  """
  fam, means = PAC_INSTANCES[family_name]
  rule = FACTORIES[name]()
  with jax.enable_x64(False):
    assert_delta_correct(lambda n: jbai.simulate(jax.random.key(11), fam, means, rule, 0.1, n,
                                                 threshold="kk", max_steps=100_000), 0.1)


CONVERGENCE_MEANS = [1.0, 0.5, 0.0]  # Gaussian; w(nu) = (0.469, 0.464, 0.067)


def final_proportions(name, horizon, n_trials, **params):
  tr = jbai.trace(jax.random.key(2), gaussian(), CONVERGENCE_MEANS, FACTORIES[name](**params),
                  horizon=horizon, n_trials=n_trials, n_points=3)
  assert tr.times[-1] == horizon
  return tr.proportions[:, -1], tr.top_share[:, -1]


@pytest.mark.slow
@pytest.mark.parametrize("name", TOP_TWO_FIXED_BETA)
def test_top_two_best_arm_share_converges_to_beta(name):
  """T_t(a*)/t -> beta: within 0.02 of beta = 0.3 at t = 1e5 in each of 4 trials."""
  _, share = final_proportions(name, 100_000, 4, beta=0.3)
  np.testing.assert_allclose(share, 0.3, atol=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tas-c", "tas-d", "fws", "t3c-tuned"])
def test_allocation_converges_to_optimal(name):
  """T_t/t -> w(nu) (T3C-tuned too, its beta tending to w_{a*}(nu)): every arm
  within 0.02 at t = 1e5 in each of 4 trials."""
  w = np.asarray(oracle_w(gaussian(), CONVERGENCE_MEANS))
  props, _ = final_proportions(name, 100_000, 4)
  assert np.max(np.abs(props - w)) < 0.02


@pytest.mark.slow
def test_lazy_tracking_converges_to_optimal():
  """D-tracking of w(nu_hat) recomputed on the grid t_{n+1} = ceil(1.1 t_n) only:
  T_t/t -> w(nu), every arm within 0.02 at t = 3e4 in each of 4 trials."""
  w = np.asarray(oracle_w(gaussian(), CONVERGENCE_MEANS))
  props, _ = final_proportions("tas-d", 30_000, 4, lazy_factor=1.1)
  assert np.max(np.abs(props - w)) < 0.02


# The sensitivity instances (delta = 1e-8) and Garivier & Kaufmann's (delta = 0.1).
ORACLE_INSTANCES = [
    ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06], 1e-8, 400),
    ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0], 1e-8, 100),
    ("bernoulli", [0.5, 0.45, 0.43, 0.4], 0.1, 100),
]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tas-c", "tas-d", "t3c-tuned"])
@pytest.mark.parametrize("family,means,delta,n", ORACLE_INSTANCES)
def test_fixed_cost_oracle_keeps_the_expected_stopping_time(family, means, delta, n,
                                                            name):
  """E[tau] with the default warm oracle (two Newton steps per step) equals E[tau]
  with the converging one (which is exact_solve's to 1e-9, above), trials paired
  by their keys: the mean paired difference is within Z = 4 standard errors of 0."""
  taus = [np.asarray(jbai.simulate(jax.random.key(1), family, means,
                                   FACTORIES[name](solver=solver), delta, n,
                                   threshold="gk16").tau, float)
          for solver in ("warm", "warm-converged")]
  diff = taus[0] - taus[1]
  se = diff.std(ddof=1) / math.sqrt(n)
  assert abs(diff.mean()) <= Z * se + 1e-9 * taus[1].mean()
