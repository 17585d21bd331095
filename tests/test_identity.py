"""Equality of families, rules and thresholds: equal exactly when they compute
alike (jbai.identity.same), so that a cached program is reused only then."""

import jax
import numpy as np

import jbai
from jbai import families, rules, thresholds
from jbai.identity import same


def test_factories_give_equal_objects():
  assert families.bernoulli() == families.bernoulli()
  assert families.gaussian(sigma=2.0) != families.gaussian()
  assert rules.RULES["tas-d"]() == rules.RULES["tas-d"]()
  assert thresholds.THRESHOLDS["kk"]() == thresholds.THRESHOLDS["kk"]()
  # A runtime parameter is data: rules that differ in it share a program.
  assert rules.t3c(beta=0.3).program() == rules.t3c(beta=0.7).program()
  assert rules.t3c(beta=0.3) != rules.t3c(beta=0.7)


def test_a_name_reused_with_other_functions_is_another_object():
  gauss = families.gaussian()
  noisier = gauss._replace(sample=lambda key, m: m + 2.0 * jax.random.normal(key, m.shape))
  assert noisier != gauss and hash(noisier) == hash(gauss)
  tcb = rules.tcb()
  assert tcb._replace(select=rules.uniform().select) != tcb


def test_simulate_does_not_reuse_the_program_of_a_lookalike():
  """Two user families, same name and parameters, noise 2 and 3: in one process,
  the second run must not run the first one's compiled program."""
  gauss = families.gaussian()
  noisy = lambda s: gauss._replace(sample=lambda key, m: m + s * jax.random.normal(key, m.shape))
  run = lambda fam: jbai.simulate(jax.random.key(0), fam, [1.0, 0.0], "tcb", 0.1, 64,
                                  lanes=8, chunk=64)
  assert not np.array_equal(run(noisy(2.0)).tau, run(noisy(3.0)).tau)


def test_same_compares_code_closures_and_values():
  make = lambda c: (lambda x: x + c)
  assert same(make(1.0), make(1.0)) and not same(make(1.0), make(2.0))
  assert not same(make(0.0), make(-0.0))
  assert not same(lambda x: x + 1.0, make(1.0))
  assert same(np.arange(3), np.arange(3)) and not same(np.arange(3), np.arange(1, 4))
  assert not same(np.arange(3), np.arange(3.0))
  assert not same(0.0, -0.0) and same(float("nan"), float("nan"))
