"""The oracle: w(nu), Gamma(nu) and the beta-optimal allocation.

References: the paper's Table 1, the exact (nested bisection) solver, a
brute-force search for the beta-optimal allocation, and finite differences.

Compilation dominates the run time, so the instances are grouped in a few
batches of 16 (one per family and number of arms K), each solved once by each
method and shared by the tests: Table 1's instances and instances at the edges of
Theta sit in the first rows of the batch of their size, the rest are random.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import families, oracle

FAMILIES = {name: families.get(name) for name in families.BUILTIN}
NAMES = sorted(FAMILIES)

# Paper, Table 1. The paper rounds; the exact optimum of nu_3 has w_1 = 0.385348.
TABLE_1 = [
    ("gaussian", [100.0, 2.0, 1.0], [0.4143, 0.2979, 0.2878]),
    ("gaussian", [1.2, 1.0, 1.0, 1.0, 1.0], [1 / 3, 1 / 6, 1 / 6, 1 / 6, 1 / 6]),
    ("bernoulli", [0.8, 0.45, 0.45, 0.45], [0.3854, 0.2049, 0.2049, 0.2049]),
    ("bernoulli", [0.79, 0.29, 0.289], [0.426, 0.2880, 0.2860]),
]
# Instances at the edges of Theta and other hard cases, in the first rows of their batch.
EDGES = {
    "bernoulli": [[1.0, 0.0, 0.5], [0.02, 0.0, 0.01]],
    "exponential": [[1e3, 1e-3, 999.0]],
    # Most optimal weights of linspace(1, 0, 20) are below 0.01: hard for
    # Euclidean projected steps.
    "gaussian": [[1e4, -1e4, 9990.0], list(np.linspace(1.0, 0.0, 20))],
    "poisson": [[5.0, 0.0, 4.0, 1.0]],
}
SIZES = {"bernoulli": (3, 4, 9), "exponential": (3, 14), "gaussian": (2, 3, 5, 20),
         "logcosh": (4,), "poisson": (4, 20), "weibull": (11,)}
BATCH = 16


def random_instances(seed, family, n, k):
  """n instances of K arms spread over Theta; in every other one the two best arms
  are 1% to 30% of Theta apart. Where Theta spans decades (exponential, Weibull),
  means are log-uniform in half the rows."""
  rng = np.random.default_rng(seed)
  lo, hi = family.lo, family.hi
  mu = rng.uniform(lo, hi, (n, k))
  if family.name in ("exponential", "weibull"):
    mu[: n // 2] = np.exp(rng.uniform(np.log(lo), np.log(hi), (n // 2, k)))
  for row in range(0, n, 2):
    first, second = np.argsort(mu[row])[::-1][:2]
    gap = (hi - lo) * 10 ** rng.uniform(-2, np.log10(0.3))
    top = mu[row, first]
    mu[row, second] = top - gap if top - gap >= lo else min(top + gap, hi)
  return mu


def fixed_rows(name, k):
  rows = [means for fam, means, _ in TABLE_1 if fam == name and len(means) == k]
  return rows + [means for means in EDGES.get(name, []) if len(means) == k]


@functools.lru_cache(maxsize=None)
def batch(name, k):
  """The shared batch of name's family with K = k arms: [16, k] means."""
  means = random_instances(k, FAMILIES[name], BATCH, k)
  rows = fixed_rows(name, k)
  if rows:
    means[:len(rows)] = rows
  return jnp.asarray(means)


@functools.lru_cache(maxsize=None)
def solved(name, k, method):
  """optimal_allocation of the shared batch: (w, gamma, info)."""
  return oracle.optimal_allocation(FAMILIES[name], batch(name, k), method=method)


def row_of(result, i):
  return jax.tree.map(lambda v: v[i], result)


@pytest.mark.parametrize("method", oracle.METHODS)
@pytest.mark.parametrize("name, means, expected", TABLE_1)
def test_table_1_of_the_paper(method, name, means, expected):
  k = len(means)
  row = fixed_rows(name, k).index(means)
  w, gamma, info = row_of(solved(name, k, method), row)
  np.testing.assert_allclose(w, expected, atol=2e-4)
  np.testing.assert_allclose(jnp.sum(w), 1.0, rtol=1e-12)
  np.testing.assert_allclose(gamma, jbai.gamma(FAMILIES[name], jnp.array(means), w),
                             rtol=1e-10)
  assert info.iterations > 0 and info.gap >= 0


def test_exact_solver_digits_beyond_table_1():
  w, gamma, info = row_of(solved("bernoulli", 4, "exact"), 0)
  np.testing.assert_allclose(w[0], 0.385348, atol=1e-6)
  assert bool(info.converged) and float(info.gap) < 1e-10
  # Gaussian slippage instance: w = (1/3, 1/6, ...) and Gamma = w_a w_i / (w_a + w_i)
  # * 0.2^2 / 2 = 0.02 / 9.
  np.testing.assert_allclose(solved("gaussian", 5, "exact")[1][0], 0.02 / 9, rtol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_optax_solver_agrees_with_the_exact_solver(name):
  worst_w, worst_gamma = 0.0, 0.0
  for k in SIZES[name]:
    w_exact, g_exact, info_exact = solved(name, k, "exact")
    w_optax, g_optax, info_optax = solved(name, k, "optax")
    assert np.all(np.isfinite(w_optax)) and np.all(np.isfinite(w_exact))
    assert np.all(g_exact > 0)
    np.testing.assert_allclose(jnp.sum(w_exact, -1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(jnp.sum(w_optax, -1), 1.0, rtol=1e-12)
    # The exact solution is optimal up to the rounding of KL between close means
    # (about 1e-8 relative for Poisson means near 1000): its certified gap is
    # small, and the optax Gamma, a lower bound on Gamma(nu), does not beat it.
    assert np.all(info_exact.converged) and float(jnp.max(info_exact.gap)) < 1e-6
    assert np.all(info_optax.gap >= -1e-6)
    assert np.all(g_optax <= g_exact * (1 + 1e-6))
    worst_w = max(worst_w, float(jnp.max(jnp.abs(w_optax - w_exact))))
    worst_gamma = max(worst_gamma, float(jnp.max(jnp.abs(g_optax / g_exact - 1))))
  print(f"{name}: max |dw| = {worst_w:.2e}, max relative dGamma = {worst_gamma:.2e}")
  assert worst_w <= 5e-4, worst_w
  assert worst_gamma <= 1e-5, worst_gamma


def test_batch_of_instances_matches_one_at_a_time():
  w, gamma, info = solved("gaussian", 3, "exact")
  assert w.shape == (BATCH, 3) and gamma.shape == (BATCH,) and info.gap.shape == (BATCH,)
  for i in range(3):
    w_i, g_i, _ = oracle.optimal_allocation("gaussian", batch("gaussian", 3)[i],
                                            method="exact")
    np.testing.assert_allclose(w[i], w_i, rtol=1e-12)
    np.testing.assert_allclose(gamma[i], g_i, rtol=1e-12)


@pytest.mark.parametrize("bad, needle", [
    ([0.5], "two arms"),
    ([0.5, 0.5, 0.2], "tie"),
    ([0.5, 1.5], "1.5"),
    ([0.5, float("nan")], "NaN"),
    ([[0.5, 0.2], [0.3, 0.3]], "tie"),
])
def test_optimal_allocation_rejects_bad_means(bad, needle):
  with pytest.raises(ValueError, match=needle):
    oracle.optimal_allocation("bernoulli", bad)
  with pytest.raises(ValueError, match=needle):
    oracle.beta_optimal_allocation("bernoulli", bad, 0.5)


def test_optimal_allocation_rejects_bad_options():
  with pytest.raises(ValueError, match="'cauchy'"):
    oracle.optimal_allocation("cauchy", [1.0, 0.0])
  with pytest.raises(ValueError, match="'newton'"):
    oracle.optimal_allocation("gaussian", [1.0, 0.0], method="newton")
  with pytest.raises(ValueError, match="steps"):
    oracle.optimal_allocation("gaussian", [1.0, 0.0], steps=0)
  for beta in (0.0, 1.0, -0.2, float("nan")):
    with pytest.raises(ValueError, match="beta"):
      oracle.beta_optimal_allocation("gaussian", [1.0, 0.0], beta)


@pytest.mark.parametrize("solve", [oracle.exact_solve, oracle.projected_solve])
def test_raw_solvers_handle_ties_without_nan(solve):
  # Inside a simulation (float32) the empirical means may tie: Gamma(nu, w) = 0 for
  # every w, and the solvers return w uniform over the tied best arms, Gamma = 0,
  # and zero derivatives.
  fam = FAMILIES["bernoulli"]
  means = jnp.array([[0.5, 0.5, 0.2], [0.3, 0.3, 0.3], [0.79, 0.29, 0.289]], jnp.float32)
  w, gamma = solve(fam, means)
  assert w.dtype == jnp.float32 and gamma.dtype == jnp.float32
  np.testing.assert_allclose(w[0], [0.5, 0.5, 0.0])
  np.testing.assert_allclose(w[1], [1 / 3, 1 / 3, 1 / 3], rtol=1e-6)
  np.testing.assert_allclose(gamma[:2], 0.0)
  np.testing.assert_allclose(w[2], solved("bernoulli", 3, "exact")[0][0], atol=1e-4)
  if solve is oracle.exact_solve:
    grad = jax.grad(lambda m: solve(fam, m)[1].sum())(means)
    assert np.all(np.isfinite(grad)) and np.all(grad[:2] == 0) and np.any(grad[2] != 0)


def test_raw_solvers_run_inside_jit_and_vmap():
  fam = FAMILIES["gaussian"]

  @jax.jit
  def step(m):
    return jax.vmap(lambda row: oracle.exact_solve(fam, row))(m)

  w, gamma = step(batch("gaussian", 3))
  w_ref, gamma_ref, _ = solved("gaussian", 3, "exact")
  np.testing.assert_allclose(w, w_ref, rtol=1e-12)
  np.testing.assert_allclose(gamma, gamma_ref, rtol=1e-12)


def _central_difference(f, x, h):
  """(f(x + h e_j) - f(x - h e_j)) / 2h for each coordinate j of x [n], on a last axis of
  each of f's outputs: f vmapped over the 2n points."""
  steps = h * jnp.eye(x.size, dtype=x.dtype)
  up, down = jax.vmap(f)(x + steps), jax.vmap(f)(x - steps)
  return jax.tree.map(lambda u, d: jnp.moveaxis((u - d) / (2 * h), 0, -1), up, down)


GRADIENT_CASES = [
    ("gaussian", [1.0, 0.6, 0.3, -0.5]),
    ("bernoulli", [0.79, 0.29, 0.289, 0.5]),
    ("exponential", [2.0, 1.5, 0.2, 0.9]),
]


@pytest.mark.parametrize("name, means", GRADIENT_CASES)
def test_gradient_and_jacobian_match_finite_differences(name, means):
  fam = FAMILIES[name]
  means = jnp.array(means)
  solve = functools.partial(oracle.exact_solve, fam)
  h = 1e-6 * float(np.max(means) - np.min(means))

  @jax.jit
  def derivatives(means):
    optax = lambda m: oracle.projected_solve(fam, m)[1]
    return (jax.jacobian(solve)(means), _central_difference(solve, means, h),
            jax.grad(optax)(means) if name == "gaussian" else None)

  (jac_w, grad), (fd_w, fd), grad_optax = map(jax.device_get, derivatives(means))
  np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6 * float(np.max(np.abs(fd))))
  np.testing.assert_allclose(jac_w, fd_w, rtol=1e-4,
                             atol=1e-6 * float(np.max(np.abs(fd_w))))
  if name == "gaussian":  # the same implicit derivatives come with the optax solver
    np.testing.assert_allclose(grad_optax, grad, rtol=1e-4)


def test_derivatives_for_a_family_without_closed_form_transport():
  # The implicit derivatives need only the KL: a Bernoulli family whose transport
  # minimiser is found by golden section gives the closed form's derivatives. (Its
  # name differs because families compare, and hash for jit, by name and params.)
  closed = FAMILIES["bernoulli"]
  general = closed._replace(name="bernoulli-golden", transport_x=None)
  means = jnp.array([0.79, 0.29, 0.289, 0.5])
  jac_closed = jax.jacobian(functools.partial(oracle.exact_solve, closed))(means)
  jac_general = jax.jacobian(functools.partial(oracle.exact_solve, general))(means)
  for a, b in zip(jac_general, jac_closed):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_gamma_bounds_bracket_gamma_for_any_allocation():
  fam = FAMILIES["bernoulli"]
  means = batch("bernoulli", 9)
  g_star = solved("bernoulli", 9, "exact")[1]
  w = jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(0), (50,) + means.shape))
  lower, upper = oracle.gamma_bounds(fam, means, w)
  assert lower.shape == (50, BATCH)
  assert np.all(lower <= g_star * (1 + 1e-12))
  assert np.all(upper >= g_star * (1 - 1e-12))


@pytest.mark.parametrize("name, means", [
    ("gaussian", [1.0, 0.7, -0.4]),
    ("bernoulli", [0.8, 0.5, 0.3]),
])
def test_beta_optimal_matches_brute_force(name, means):
  # With K = 3 and w_a = beta fixed, Gamma(nu, w) is a concave function of w_1 on
  # [0, 1 - beta]: a grid of 2,001 points brackets its maximum, and golden-section
  # search in the bracket finds it to rounding.
  fam = FAMILIES[name]
  means = jnp.array(means)
  betas = jnp.array([0.2, 0.5, 0.8])
  w, gamma_beta = oracle.beta_optimal_allocation(fam, jnp.tile(means, (3, 1)), betas)
  np.testing.assert_allclose(w[:, 0], betas, rtol=1e-12)
  np.testing.assert_allclose(jnp.sum(w, -1), 1.0, rtol=1e-12)

  def value(w1, beta):
    full = jnp.stack([jnp.full_like(w1, beta), w1, 1 - beta - w1], -1)
    return jbai.gamma(fam, means, full)

  for i, beta in enumerate(np.asarray(betas)):
    grid = jnp.linspace(0.0, 1 - beta, 2001)
    best = int(jnp.argmax(value(grid, beta)))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    w1 = jbai.golden_section(lambda v: -value(v, beta), lo, hi)
    np.testing.assert_allclose(gamma_beta[i], value(w1, beta), rtol=1e-9)
    np.testing.assert_allclose(w[i, 1], w1, atol=1e-7)


def test_beta_optimal_is_optimal_at_the_optimal_beta():
  fam = FAMILIES["poisson"]
  means = batch("poisson", 4)
  w_star, g_star, _ = solved("poisson", 4, "exact")
  top = jnp.argmax(means, -1)
  beta_star = jnp.take_along_axis(w_star, top[:, None], -1)[:, 0]
  w_b, g_b = oracle.beta_optimal_allocation(fam, means, beta_star)
  np.testing.assert_allclose(g_b, g_star, rtol=1e-9)
  np.testing.assert_allclose(w_b, w_star, atol=1e-7)
  for beta in (0.1, 0.3, 0.5, 0.7):
    _, g = oracle.beta_optimal_allocation(fam, means, beta)
    assert np.all(g <= g_star * (1 + 1e-9))
  # Gamma_beta is maximal at beta*, so its derivative in beta vanishes there.
  slope = jax.grad(lambda b: oracle.exact_beta_solve(fam, means, b)[1].sum())(beta_star)
  np.testing.assert_allclose(slope, 0.0, atol=1e-6 * float(jnp.max(g_star)))


# Instances at the edges of Theta and near-ties (issue 24): Bernoulli arms at 0 or 1,
# and, in float32, a second arm one part in 1e6 below a best arm at 1.
EDGE_GRADIENTS = [
    ([1.0, 0.5, 0.3], jnp.float64), ([0.9, 0.5, 0.0], jnp.float64),
    ([1.0, 0.0, 0.0], jnp.float64), ([1.0, 0.999999, 0.2], jnp.float64),
    ([1.0, 0.5, 0.3], jnp.float32), ([0.9, 0.5, 0.0], jnp.float32),
    ([1.0, 0.0, 0.0], jnp.float32), ([1.0, 0.999999, 0.2], jnp.float32),
]


@pytest.mark.parametrize("means, dtype", EDGE_GRADIENTS)
def test_values_and_gradients_are_finite_at_the_edges_of_theta(means, dtype):
  """Gamma, w and their derivatives in the means (exact_solve's implicit ones, and
  optimal_allocation's) are finite, never NaN, for arms at an end of Theta (the
  derivative there is the one 4 ulp inside) and at a float32 near-tie."""
  fam = FAMILIES["bernoulli"]
  mu = jnp.asarray(means, dtype)
  w, gamma = oracle.exact_solve(fam, mu)
  assert w.dtype == dtype and np.all(np.isfinite(w)) and np.isfinite(gamma) and gamma > 0
  outputs = {
      "exact gamma": jax.grad(lambda m: oracle.exact_solve(fam, m)[1])(mu),
      "exact w": jax.jacobian(lambda m: oracle.exact_solve(fam, m)[0])(mu),
      "optax gamma": jax.grad(lambda m: oracle.optimal_allocation(fam, m)[1])(mu),
      "exact-method gamma": jax.grad(
          lambda m: oracle.optimal_allocation(fam, m, method="exact")[1])(mu),
      "beta-optimal gamma": jax.grad(lambda m: oracle.exact_beta_solve(fam, m, 0.5)[1])(mu),
  }
  for name, value in outputs.items():
    assert np.all(np.isfinite(value)), (name, value)
