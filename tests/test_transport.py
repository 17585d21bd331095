"""Transport costs and Gamma(nu, w): closed form against golden section, and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import families
from jbai.transport import gamma, golden_section, pair_costs, transport_cost

FAMILIES = {
    "gaussian": families.gaussian(),
    "bernoulli": families.bernoulli(),
    "poisson": families.poisson(),
    "exponential": families.exponential(),
}
NAMES = sorted(FAMILIES)


def random_means(key, family, shape):
  """Means spread over Theta (log-uniform for the exponential family's wide Theta)."""
  u = jax.random.uniform(key, shape)
  if family.name == "exponential":
    return family.lo * (family.hi / family.lo) ** u
  return family.lo + (family.hi - family.lo) * u


def random_pairs(name, n=2000):
  fam = FAMILIES[name]
  k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
  m = random_means(k1, fam, (2, n))
  w = jax.random.uniform(k2, (2, n), minval=1e-3, maxval=1.0)
  # Half of the pairs close together (gaps down to 1e-3 of the distance to the
  # lower end of Theta), to test small costs. Closer still, the KL formulas of the
  # Bernoulli and Poisson families lose relative accuracy (about eps / gap^2), so
  # closed form and golden section can no longer be told apart to 1e-6.
  u = jax.random.uniform(k3, (2, n))
  m_close = m[0] - (m[0] - fam.lo) * 10 ** (-3 * u[0])
  m_b = jnp.where(u[1] < 0.5, m_close, m[1])
  return fam, w[0], m[0], w[1], m_b


@pytest.mark.parametrize("name", NAMES)
def test_closed_form_matches_golden_section(name):
  fam, w_a, m_a, w_b, m_b = random_pairs(name)
  closed = transport_cost(fam, w_a, m_a, w_b, m_b, method="closed")
  golden = transport_cost(fam, w_a, m_a, w_b, m_b, method="golden")
  np.testing.assert_allclose(golden.value, closed.value, rtol=1e-6, atol=0)
  ordered = m_a > m_b
  assert np.all(np.asarray(closed.value)[~np.asarray(ordered)] == 0)
  # The minimiser lies between the two means.
  lo, hi = jnp.minimum(m_a, m_b), jnp.maximum(m_a, m_b)
  assert np.all((closed.x >= lo) & (closed.x <= hi))


@pytest.mark.parametrize("name", NAMES)
def test_auto_method_uses_the_closed_form_and_falls_back_to_golden(name):
  fam, w_a, m_a, w_b, m_b = random_pairs(name, n=50)
  auto = transport_cost(fam, w_a, m_a, w_b, m_b)
  np.testing.assert_array_equal(
      auto.value, transport_cost(fam, w_a, m_a, w_b, m_b, method="closed").value)
  general = fam._replace(transport_x=None)
  np.testing.assert_array_equal(
      transport_cost(general, w_a, m_a, w_b, m_b).value,
      transport_cost(fam, w_a, m_a, w_b, m_b, method="golden").value)
  with pytest.raises(ValueError, match="closed-form"):
    transport_cost(general, w_a, m_a, w_b, m_b, method="closed")
  with pytest.raises(ValueError, match="'newton'"):
    transport_cost(fam, w_a, m_a, w_b, m_b, method="newton")


def test_gamma_of_a_hand_computed_gaussian_instance():
  # sigma = 2, means [2, 1, 0], w = [1/2, 1/4, 1/4]. For Gaussian arms the pair cost
  # is w_a w_i / (w_a + w_i) * (mu_a - mu_i)^2 / (2 sigma^2): (1/6) (1/8) = 1/48 for
  # arm 1 and (1/6) (4/8) = 1/12 for arm 2, so Gamma = 1/48.
  fam = families.gaussian(sigma=2.0)
  means = jnp.array([2.0, 1.0, 0.0])
  w = jnp.array([0.5, 0.25, 0.25])
  np.testing.assert_allclose(pair_costs(fam, w, means, jnp.array(0)),
                             [np.inf, 1 / 48, 1 / 12], rtol=1e-14)
  np.testing.assert_allclose(gamma(fam, means, w), 1 / 48, rtol=1e-14)
  np.testing.assert_allclose(gamma(fam, means, w, method="golden"), 1 / 48, rtol=1e-12)
  # The best arm need not be first.
  np.testing.assert_allclose(gamma(fam, means[::-1], w[::-1]), 1 / 48, rtol=1e-14)


def test_pair_costs_with_a_leader_that_is_not_the_best_arm():
  fam = families.gaussian()
  means = jnp.array([0.0, 1.0, -1.0])
  costs = pair_costs(fam, jnp.array([0.5, 0.25, 0.25]), means, jnp.array(0))
  assert costs[0] == np.inf and costs[1] == 0 and costs[2] > 0


def test_pair_costs_read_the_leader_alike_by_mask_and_by_gather(monkeypatch):
  """Below GATHER_AT arms pair_costs reads the leader's weight and mean by a masked
  sum, from it on by a gather: the costs and their gradients are the same bit for bit
  either way, for a batch of leaders over a batch of means and one weight vector,
  and under vmap."""
  fam, num_arms = FAMILIES["gaussian"], 20
  means = random_means(jax.random.PRNGKey(5), fam, (7, num_arms))
  w = jax.random.uniform(jax.random.PRNGKey(6), (num_arms,), minval=1.0, maxval=50.0)
  leader = jnp.argmax(means, axis=-1)
  runs = []
  for gather_at in (10**9, 1):  # masked sums everywhere, gathers everywhere
    monkeypatch.setattr(jbai.transport, "GATHER_AT", gather_at)
    costs = lambda w, means: pair_costs(fam, w, means, leader)  # new functions: new traces
    total = lambda w, means: jnp.sum(jnp.nan_to_num(costs(w, means), posinf=0.0))
    one = jax.vmap(lambda m, i: pair_costs(fam, w, m, i))
    assert ("gather" in str(jax.make_jaxpr(costs)(w, means))) == (gather_at == 1)
    runs.append((jax.jit(costs)(w, means), jax.grad(total, argnums=(0, 1))(w, means),
                 jax.jit(one)(means, leader)))
  (c0, g0, v0), (c1, g1, v1) = runs
  assert c0.shape == (7, num_arms) and np.all(np.isinf(c0[np.arange(7), leader]))
  for a, b in [(c0, c1), (v0, v1), (c0, v1), (g0[0], g1[0]), (g0[1], g1[1])]:
    np.testing.assert_array_equal(a, b)


def test_gamma_is_batched_over_leading_axes():
  fam = families.bernoulli()
  means = random_means(jax.random.PRNGKey(3), fam, (4, 6, 5))
  w = jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(4), (4, 6, 5)))
  batched = gamma(fam, means, w)
  assert batched.shape == (4, 6)
  single = jax.jit(jax.vmap(jax.vmap(lambda m, v: gamma(fam, m, v))))(means, w)
  np.testing.assert_allclose(batched, single, rtol=1e-14)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("method", ["closed", "golden"])
def test_gradient_of_the_transport_cost(name, method):
  # By the envelope theorem dC/dw_a = KL(m_a, x*) and dC/dw_b = KL(m_b, x*); the
  # gradient in the means is checked against central finite differences of the
  # closed form. Golden section locates x* to about sqrt(eps) relative (the
  # objective is flat there), hence the looser tolerance for its mean gradient.
  fam = FAMILIES[name]
  k1, k2 = jax.random.split(jax.random.PRNGKey(1))
  m = random_means(k1, fam, (2, 20))
  w_a, w_b = jax.random.uniform(k2, (2, 20), minval=0.05, maxval=1.0)
  lo, hi = jnp.min(m, 0), jnp.max(m, 0)
  m_a, m_b = 0.9 * hi + 0.1 * lo, 0.1 * hi + 0.9 * lo  # inside Theta, ordered
  cost = lambda *args: transport_cost(fam, *args, method=method).value.sum()
  grads = jax.grad(cost, argnums=(0, 1, 2, 3))(w_a, m_a, w_b, m_b)
  x = transport_cost(fam, w_a, m_a, w_b, m_b, method="closed").x
  rtol = 1e-5 if method == "closed" else 1e-4
  np.testing.assert_allclose(grads[0], fam.kl(m_a, x), rtol=rtol)
  np.testing.assert_allclose(grads[2], fam.kl(m_b, x), rtol=rtol)
  for i, m in ((1, m_a), (3, m_b)):
    h = 1e-6 * (hi - lo)
    args = [w_a, m_a, w_b, m_b]
    up = list(args); up[i] = m + h
    down = list(args); down[i] = m - h
    fd = (transport_cost(fam, *up, method="closed").value -
          transport_cost(fam, *down, method="closed").value) / (2 * h)
    np.testing.assert_allclose(grads[i], fd, rtol=rtol)


@pytest.mark.parametrize("name", NAMES)
def test_gradient_of_gamma_in_w_matches_finite_differences(name):
  fam = FAMILIES[name]
  means = jnp.sort(random_means(jax.random.PRNGKey(5), fam, (4,)))[::-1]
  w = jnp.array([0.4, 0.3, 0.2, 0.1])
  g = jax.grad(lambda v: gamma(fam, means, v))(w)
  assert np.all(np.isfinite(g))
  h = 1e-7
  fd = [(gamma(fam, means, w.at[j].add(h)) - gamma(fam, means, w.at[j].add(-h))) / (2 * h)
        for j in range(4)]
  np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-12)


def test_golden_section_finds_the_minimum_of_a_unimodal_function():
  lo = jnp.array([0.0, -2.0, 1.0])
  hi = jnp.array([1.0, 3.0, 1.5])
  target = jnp.array([0.3, -1.999, 1.5])
  x = golden_section(lambda x: jnp.abs(x - target) ** 1.5, lo, hi)
  np.testing.assert_allclose(x, target, atol=1e-9)
  assert jbai.golden_section is golden_section
