"""Tests of the warm-started oracle (jbai.oracle.warm) against the exact one.

`exact_solve` (nested bisection, from scratch) is the reference. The tests run in
float64 (tests/conftest.py) unless they say float32, the engine's default. The
fixed-cost solver (`newton_steps`, what the rules run) is held to stated
distances from it along trajectories.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai.oracle import exact_solve, warm_solve, warm_start

from helpers import trajectory

INSTANCES = [
    ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0]),
    ("gaussian", [100.0, 2.0, 1.0]),
    ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06]),
    ("bernoulli", [0.79, 0.29, 0.289]),
    ("bernoulli", [1.0, 0.5, 0.0]),          # the edges of Theta
    ("poisson", [3.0, 2.0, 1.5]),
    ("exponential", [1.0, 2.0, 3.0]),
    ("weibull", [2.0, 1.5, 1.0]),            # closed-form transport point
    ("logcosh", [0.5, 0.0, -0.3]),           # golden-section transport point
]

solve = jax.jit(warm_solve, static_argnums=0)
exact = jax.jit(exact_solve, static_argnums=0)



def run_warm(family, mus, newton_steps=None):
  """warm_solve along a sequence of means, each solve starting from the last one."""
  k = mus.shape[-1]

  def body(start, mu):
    sol = warm_solve(family, mu, start, newton_steps=newton_steps)
    return sol.start, (sol.w, sol.gamma, sol.evaluations)

  start = warm_start(k, mus.dtype)
  _, out = jax.jit(lambda m: jax.lax.scan(body, start, m))(mus)
  return out


@pytest.mark.parametrize("name,means", INSTANCES)
def test_cold_start_reaches_the_exact_solution(name, means):
  fam = jbai.families.get(name)
  means = jnp.asarray(means)
  sol = solve(fam, means, warm_start(len(means)))
  w, gamma = exact(fam, means)
  # logcosh: the exact solver's balance condition uses golden-section transport
  # points, accurate to sqrt(eps) only (warm refines them by a Newton step).
  atol = 1e-7 if name == "logcosh" else 1e-10
  np.testing.assert_allclose(sol.w, w, atol=atol)
  np.testing.assert_allclose(sol.gamma, gamma, rtol=1e-10)
  assert np.isclose(float(jnp.sum(sol.w)), 1.0)
  assert int(sol.start.top) == int(jnp.argmax(means))


@pytest.mark.parametrize("name,means", [
    ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06]),
    ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0]),
    ("bernoulli", [0.8] + list(np.linspace(0.6, 0.05, 19))),
    ("poisson", [3.0, 2.0, 1.5]),
])
def test_warm_starts_track_the_exact_solver_along_a_trajectory(name, means):
  """Along 800 steps of a simulated trajectory (each solve warm-started from the
  previous one), w agrees with exact_solve to 1e-9 at every step, and a step with
  a unique best arm costs few transport evaluations: at most three for most
  (two Newton steps and a last one that squares the residual below sqrt(eps)),
  against the nested bisection's 64 x 64."""
  fam = jbai.families.get(name)
  mus = trajectory(fam, means, 800)
  w, gamma, evals = run_warm(fam, mus)
  w_ref, gamma_ref = exact(fam, mus)
  np.testing.assert_allclose(w, w_ref, atol=1e-9)
  np.testing.assert_allclose(gamma, gamma_ref, rtol=1e-9, atol=1e-300)
  evals = np.asarray(evals)[np.asarray(gamma_ref) > 0]
  assert np.median(evals) <= 3 and evals.max() <= 40


def test_float32_warm_is_as_accurate_as_float32_exact():
  """In float32 (the engine's dtype) both solvers are limited by rounding: against
  the float64 solution, after the first 200 steps, warm's error is below 2e-5 and
  within a factor 4 of the exact solver's."""
  fam = jbai.families.bernoulli()
  mus = trajectory(fam, [0.8, 0.5, 0.3, 0.29, 0.06], 2000)[200:]
  ref, _ = exact(fam, mus)
  mus32 = mus.astype(jnp.float32)
  w32, _, _ = run_warm(fam, mus32)
  e32, _ = exact(fam, mus32)
  err_warm = float(np.max(np.abs(np.asarray(w32, float) - ref)))
  err_exact = float(np.max(np.abs(np.asarray(e32, float) - ref)))
  assert w32.dtype == jnp.float32
  assert err_warm < 2e-5 and err_warm < 4 * err_exact


def test_the_best_arm_changes():
  """A start solved for best arm 0 is discarded when arm 1 becomes the best."""
  fam = jbai.families.bernoulli()
  first = solve(fam, jnp.array([0.7, 0.6, 0.2]), warm_start(3))
  means = jnp.array([0.6, 0.7, 0.2])
  sol = solve(fam, means, first.start)
  np.testing.assert_allclose(sol.w, exact(fam, means)[0], atol=1e-10)
  assert int(sol.start.top) == 1


def test_ties_follow_the_exact_convention_and_keep_the_start():
  fam = jbai.families.gaussian()
  first = solve(fam, jnp.array([1.0, 0.5, 0.0]), warm_start(3))
  tied = jnp.array([1.0, 1.0, 0.0])
  sol = solve(fam, tied, first.start)
  w_ref, gamma_ref = exact(fam, tied)
  np.testing.assert_allclose(sol.w, [0.5, 0.5, 0.0])
  np.testing.assert_allclose(sol.w, w_ref)
  assert float(sol.gamma) == float(gamma_ref) == 0.0
  for new, old in zip(sol.start, first.start):
    np.testing.assert_array_equal(new, old)
  assert int(sol.evaluations) == 0


def test_no_update_keeps_the_start():
  fam = jbai.families.bernoulli()
  first = solve(fam, jnp.array([0.7, 0.5, 0.2]), warm_start(3))
  sol = solve(fam, jnp.array([0.72, 0.5, 0.2]), first.start, False)
  for new, old in zip(sol.start, first.start):
    np.testing.assert_array_equal(new, old)
  assert int(sol.evaluations) == 0
  assert np.isclose(float(jnp.sum(sol.w)), 1.0) and np.all(np.asarray(sol.w) > 0)


def test_capped_iterations_resume_at_the_next_call():
  """With one step per loop, a cold solve stops early; calling again from its
  result converges to the exact solution."""
  fam = jbai.families.bernoulli()
  means = jnp.array([0.9, 0.2, 0.15, 0.1])
  capped = jax.jit(lambda m, s: warm_solve(fam, m, s, max_iters=1))
  sol = capped(means, warm_start(4))
  assert np.all(np.isfinite(np.asarray(sol.w)))
  for _ in range(10):
    sol = capped(means, sol.start)
  np.testing.assert_allclose(sol.w, exact(fam, means)[0], atol=1e-9)


def test_batched_matches_one_by_one():
  fam = jbai.families.bernoulli()
  means = jnp.array([[[0.8, 0.5, 0.3], [0.6, 0.5, 0.1]],
                     [[0.3, 0.9, 0.2], [0.5, 0.5, 0.1]]])  # the last one tied
  start = jax.tree.map(lambda x: jnp.broadcast_to(x, (2, 2) + x.shape), warm_start(3))
  sol = solve(fam, means, start)
  assert sol.w.shape == (2, 2, 3) and sol.gamma.shape == (2, 2)
  assert sol.start.q.shape == (2, 2, 3) and sol.evaluations.shape == (2, 2)
  for i in range(2):
    for j in range(2):
      one = solve(fam, means[i, j], warm_start(3))
      np.testing.assert_allclose(sol.w[i, j], one.w, atol=1e-12)
  np.testing.assert_allclose(sol.w, exact(fam, means)[0], atol=1e-10)


def test_float32_near_ties_give_a_finite_allocation_and_start():
  """Poisson means whose top two differ by a few 1e-4 (relative): in float32 the
  KLs between them are rounding noise and the Newton iterate can fail. Every lane
  still gets an allocation on the simplex and a finite start."""
  rng = np.random.default_rng(0)
  n = rng.integers(1, 400, size=(4096, 4))
  sums = n * 2.0 * (1 + 0.01 * rng.normal(size=n.shape))
  sums[:, 1] = sums[:, 0] / n[:, 0] * n[:, 1] * (1 + 1e-5 * rng.normal(size=len(n)))
  fam = jbai.families.poisson()
  with jax.enable_x64(False):
    means = jnp.asarray(np.round(sums) / n, jnp.float32)
    means = means.at[:, 1].set(jnp.asarray(sums[:, 1] / n[:, 1], jnp.float32))
    sol = jax.jit(lambda m: warm_solve(fam, m, warm_start(4, jnp.float32)))(means)
  assert np.all(np.isfinite(sol.w)) and np.allclose(np.sum(sol.w, -1), 1, atol=1e-5)
  assert np.all(np.isfinite(sol.gamma)) and np.all(sol.gamma >= 0)
  assert all(np.all(np.isfinite(x)) for x in (sol.start.v, sol.start.q))


# ---------------------------------------------------------------- fixed cost

FIXED_STEPS = 2  # jbai.rules.tas.NEWTON_STEPS


def best_arm_changed(mus, within):
  """[T] bool: the best arm of mus[s] changed at some s in (t - within, t]
  (the first step counts as a change: a cold start)."""
  top = np.argmax(np.asarray(mus), -1)
  fresh = np.r_[True, top[1:] != top[:-1]].astype(float)
  return np.convolve(fresh, np.ones(within), "full")[:len(top)] > 0


@pytest.mark.parametrize("name,means", [
    ("bernoulli", [0.8, 0.5, 0.3, 0.29, 0.06]),
    ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0]),
    ("bernoulli", [0.8] + list(np.linspace(0.6, 0.05, 19))),
    ("poisson", [3.0, 2.0, 1.5]),
    ("bernoulli", [0.5, 0.45, 0.43, 0.4]),
    ("gaussian", [1.0, 0.85, 0.8, 0.7]),
])
def test_fixed_cost_tracks_the_exact_solver_along_a_trajectory(name, means):
  """Two Newton steps per call along 2,000 steps of a trajectory: every call costs
  two transport evaluations; w is exact_solve's to 1e-12 at the median step; after
  the first 200 steps (where the means jump by O(1/t) and hit the edges of
  Theta), w is within 1e-6 of it at all steps but those within 3 steps of a
  change of the best arm (a cold start) and under 2% of the others, which come
  in runs of at most 3 steps (a mean that jumps, e.g. leaves 0, a lane that
  needs more than two steps: the next calls go on from its iterate)."""
  fam = jbai.families.get(name)
  mus = trajectory(fam, means, 2000)
  w, gamma, evals = run_warm(fam, mus, FIXED_STEPS)
  w_ref, gamma_ref = exact(fam, mus)
  err = np.max(np.abs(np.asarray(w) - np.asarray(w_ref)), -1)
  solved = np.asarray(gamma_ref) > 0
  assert np.all(np.asarray(evals)[solved] == FIXED_STEPS)
  assert np.median(err) <= 1e-12
  far = (err > 1e-6) & ~best_arm_changed(mus, 3)
  far[:200] = False
  assert far.mean() < 0.02
  runs = "".join("1" if f else "0" for f in far).split("0")
  assert max(len(r) for r in runs) <= 3


@pytest.mark.parametrize("name,means", INSTANCES)
def test_fixed_cost_converges_from_a_cold_start(name, means):
  """At fixed means, calls of two Newton steps each, from the cold start, reach
  exact_solve's w (to 1e-9; 1e-7 for logcosh, see above) within 4 calls."""
  fam = jbai.families.get(name)
  means = jnp.asarray(means)
  step = jax.jit(lambda s: warm_solve(fam, means, s, newton_steps=FIXED_STEPS))
  start = warm_start(len(means))
  for _ in range(4):
    sol = step(start)
    start = sol.start
  atol = 1e-7 if name == "logcosh" else 1e-9
  np.testing.assert_allclose(sol.w, exact(fam, means)[0], atol=atol)


def test_fixed_cost_has_no_loop():
  """The fixed-cost solve is straight-line code: under vmap a lane never waits
  for another (the converging solve has while loops)."""
  fam = jbai.families.bernoulli()
  means, start = jnp.array([0.5, 0.45, 0.43, 0.4]), warm_start(4)
  fixed = str(jax.make_jaxpr(
      lambda m: warm_solve(fam, m, start, newton_steps=FIXED_STEPS))(means))
  converged = str(jax.make_jaxpr(lambda m: warm_solve(fam, m, start))(means))
  assert "while" not in fixed and "while" in converged


def test_fixed_cost_in_float32_is_as_accurate_as_float32_exact():
  """In float32, after the first 200 steps of a trajectory, the fixed-cost
  solve's error against the float64 solution is below 2e-5 and within a factor 4
  of the float32 exact solver's at 99.5% of the steps."""
  fam = jbai.families.bernoulli()
  mus = trajectory(fam, [0.8, 0.5, 0.3, 0.29, 0.06], 2000)[200:]
  ref, _ = exact(fam, mus)
  mus32 = mus.astype(jnp.float32)
  w32, _, _ = run_warm(fam, mus32, FIXED_STEPS)
  e32, _ = exact(fam, mus32)
  err_warm = np.max(np.abs(np.asarray(w32, float) - np.asarray(ref)), -1)
  err_exact = np.max(np.abs(np.asarray(e32, float) - np.asarray(ref)), -1)
  assert w32.dtype == jnp.float32
  assert np.quantile(err_warm, 0.995) < 2e-5
  assert np.quantile(err_warm, 0.995) < 4 * np.max(err_exact)


def test_newton_steps_must_be_positive():
  with pytest.raises(ValueError, match="newton_steps"):
    warm_solve(jbai.families.gaussian(), jnp.array([1.0, 0.0]), warm_start(2), newton_steps=0)
