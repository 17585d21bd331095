"""Equality of families, rules and thresholds: by fields, with functions compared by
identity (jbai.builders), so that a compiled program is reused only for jbai's own
objects built with the same parameters, never for a lookalike."""

import types

import jax
import numpy as np
import pytest

import jbai
from jbai import families, rules, thresholds
from jbai.builders import cached, fields_equal


def _copy(f):
  """Another function object with f's code, globals, defaults and closure."""
  return types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__,
                            f.__closure__)


def _assert_equal(a, b):
  assert a == b and not a != b and hash(a) == hash(b)


def test_factories_give_equal_objects():
  _assert_equal(families.bernoulli(), families.bernoulli())
  _assert_equal(families.gaussian(), families.gaussian())
  _assert_equal(families.gaussian(sigma=2.0), families.gaussian(2.0))
  assert families.gaussian(sigma=2.0) != families.gaussian()
  _assert_equal(families.weibull(shape=3.0), families.weibull(shape=3.0))
  _assert_equal(families.logcosh(), families.logcosh())
  _assert_equal(rules.RULES["tas-d"](), rules.RULES["tas-d"]())
  _assert_equal(thresholds.THRESHOLDS["kk"](), thresholds.THRESHOLDS["kk"]())
  _assert_equal(thresholds.paper(), thresholds.paper())
  _assert_equal(thresholds.paper(eps=0.5), thresholds.paper(0.5))
  assert thresholds.paper(eps=0.5) != thresholds.paper()


@pytest.mark.parametrize("name", sorted(rules.RULES))
def test_every_rule_factory_gives_equal_rules(name):
  _assert_equal(rules.get(name), rules.get(name))


def test_runtime_parameters_are_left_out_of_the_program():
  # A runtime parameter is data: rules that differ in it share a program.
  _assert_equal(rules.t3c(beta=0.3).program(), rules.t3c(beta=0.7).program())
  assert rules.t3c(beta=0.3) != rules.t3c(beta=0.7)
  assert rules.t3c(beta=0.3).select is rules.t3c(beta=0.7).select
  _assert_equal(rules.tcb(eps=1.0).program(), rules.tcb(eps=2.0).program())
  _assert_equal(rules.itcb(eps=1.0).program(), rules.itcb(eps=2.0).program())
  assert rules.tcb(eps=1.0) != rules.tcb(eps=2.0)
  # A structural parameter stays in the program.
  assert rules.ttts(max_redraws=5).program() != rules.ttts(max_redraws=6).program()


def test_factories_return_the_same_function_objects():
  assert families.gaussian().kl is families.gaussian().kl
  assert families.gaussian(sigma=2.0).kl is not families.gaussian().kl
  assert thresholds.paper().value is thresholds.paper().value
  assert rules.ebtc(beta=0.2).select is rules.ebtc(beta=0.6).select


def test_a_name_reused_with_other_functions_is_another_object():
  gauss = families.gaussian()
  noisier = gauss._replace(sample=lambda key, m: m + 2.0 * jax.random.normal(key, m.shape))
  assert noisier != gauss and hash(noisier) == hash(gauss)
  tcb = rules.tcb()
  assert tcb._replace(select=rules.uniform().select) != tcb


def test_a_lookalike_function_is_another_object():
  """The same code in another function object is not jbai's function."""
  t3c = rules.t3c()
  assert t3c._replace(select=_copy(t3c.select)) != t3c
  assert t3c._replace(select=_copy(t3c.select)).program() != t3c.program()
  gauss = families.gaussian()
  assert gauss._replace(kl=_copy(gauss.kl)) != gauss
  paper = thresholds.paper()
  assert paper._replace(value=_copy(paper.value)) != paper
  # A user's factory that makes new closures makes a new family at every call.
  gauss = families.gaussian()
  noisy = lambda: gauss._replace(sample=lambda key, m: m + 2.0 * jax.random.normal(key, m.shape))
  assert noisy() != noisy()


def test_simulate_does_not_reuse_the_program_of_a_lookalike():
  """Two user families, same name and parameters, noise 2 and 3: in one process,
  the second run must not run the first one's compiled program."""
  gauss = families.gaussian()
  noisy = lambda s: gauss._replace(sample=lambda key, m: m + s * jax.random.normal(key, m.shape))
  run = lambda fam: jbai.simulate(jax.random.key(0), fam, [1.0, 0.0], "tcb", 0.1, 64,
                                  lanes=8, chunk=64)
  assert not np.array_equal(run(noisy(2.0)).tau, run(noisy(3.0)).tau)


def test_cached_keys_on_bound_arguments_with_their_types():
  calls = []

  @cached
  def make(scale=1.0, *, shift=0.0):
    calls.append((scale, shift))
    return lambda x: scale * x + shift

  assert make() is make(1.0) is make(scale=1.0)
  assert make(1) is not make(1.0)            # int and float stay apart
  assert make(0.0) is not make(-0.0)         # so do the two zeros
  assert make(shift=2.0) is make(1.0, shift=2.0)
  assert make(np.ones(1)) is not make(np.ones(1))  # unhashable: built anew
  n = len(calls)
  make(1.0)
  assert len(calls) == n


def test_cached_does_not_keep_a_failed_call():
  tries = []

  @cached
  def make(x):
    tries.append(x)
    if x < 0:
      raise ValueError(x)
    return object()

  for _ in range(2):
    with pytest.raises(ValueError):
      make(-1)
  assert tries == [-1, -1]


def test_fields_equal_compares_functions_by_identity_and_values_by_equality():
  f = lambda x: x
  assert fields_equal((1.0, f, "a"), (1.0, f, "a"))
  assert not fields_equal((1.0, f), (1.0, _copy(f)))
  assert not fields_equal((1.0, f), (2.0, f))
  assert not fields_equal((f,), (f, f))
