"""Oracle derivatives in float32 near ties (`jbai.oracle.implicit`): the differentiated
solve runs in float64 at the float32 inputs, so that jax.grad, jacrev and jacfwd
agree with float64 and with finite differences where the float32 system has lost
its digits (a second arm one part in 1e6 below the best, at an end of Theta or not).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jbai import families, oracle

BERNOULLI = families.bernoulli()
# Near ties where the float32 implicit system had lost its digits: the derivative
# of Gamma came out about 1e-14 at the first, Gamma = 3.6e-5 at the last.
NEAR_TIES = [[1.0, 0.999999, 0.2], [0.6, 0.59999, 0.3], [0.5, 0.49, 0.48, 0.2]]


def gamma_of(means):
  return oracle.exact_solve(BERNOULLI, means)[1]


def w_of(means):
  return oracle.exact_solve(BERNOULLI, means)[0]


def float64(x):
  return jnp.asarray(np.asarray(x, np.float64))


@pytest.mark.parametrize("means", NEAR_TIES)
def test_float32_derivatives_near_ties_are_those_of_float64(means):
  m32 = jnp.asarray(means, jnp.float32)
  m64 = float64(m32)  # the same inputs
  grad32 = jax.grad(gamma_of)(m32)
  grad64 = jax.grad(gamma_of)(m64)
  assert grad32.dtype == jnp.float32
  np.testing.assert_allclose(grad32, grad64, rtol=1e-5, atol=1e-6 * np.abs(grad64).max())
  rev, fwd = jax.jacrev(w_of)(m32), jax.jacfwd(w_of)(m32)
  scale = float(np.abs(jax.jacrev(w_of)(m64)).max())
  np.testing.assert_allclose(rev, fwd, rtol=0, atol=1e-6 * scale)
  np.testing.assert_allclose(rev, jax.jacrev(w_of)(m64), rtol=0, atol=1e-5 * scale)
  # Central finite differences of the float64 solve, with a step far below the gap,
  # for arms inside Theta (at an end the derivative is the one 4 ulp inside).
  h = 1e-3 * float(m64[0] - m64[1])
  for i in np.flatnonzero((m64 > h) & (m64 < 1 - h)):
    e = jnp.zeros(len(means)).at[i].set(h)
    fd = (gamma_of(m64 + e) - gamma_of(m64 - e)) / (2 * h)
    assert abs(float(grad32[i]) - float(fd)) <= 1e-3 * np.abs(grad64).max(), (i, fd)

def test_float32_derivatives_under_jit_and_vmap_and_of_every_solver():
  m32 = jnp.asarray([NEAR_TIES[0], NEAR_TIES[1]], jnp.float32)
  expected = jnp.stack([jax.grad(gamma_of)(float64(m)) for m in m32])
  batched = jax.jit(jax.vmap(jax.grad(gamma_of)))(m32)
  np.testing.assert_allclose(batched, expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())
  summed = jax.jit(jax.grad(lambda m: gamma_of(m).sum()))(m32)  # the batched solve
  np.testing.assert_allclose(summed, expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())
  beta32 = jax.grad(lambda m: oracle.exact_beta_solve(BERNOULLI, m, 0.5)[1])(m32[0])
  beta64 = jax.grad(lambda m: oracle.exact_beta_solve(BERNOULLI, m, 0.5)[1])(float64(m32[0]))
  np.testing.assert_allclose(beta32, beta64, rtol=1e-5, atol=1e-6 * np.abs(beta64).max())
  slope32 = jax.grad(lambda b: oracle.exact_beta_solve(BERNOULLI, m32[0], b)[1])(
      jnp.float32(0.4))
  slope64 = jax.grad(lambda b: oracle.exact_beta_solve(BERNOULLI, float64(m32[0]), b)[1])(0.4)
  np.testing.assert_allclose(slope32, slope64, rtol=1e-5)


def test_a_second_float32_derivative_raises_rather_than_being_wrong():
  m32 = jnp.asarray(NEAR_TIES[0], jnp.float32)
  with pytest.raises(Exception, match="(?i)callback"):
    jax.hessian(gamma_of)(m32)
