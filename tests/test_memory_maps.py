"""`jbai.host.memory_maps`: a process stays under the kernel's limit on mappings."""

import os

import jax
import numpy as np
import pytest

import jbai
from jbai.host import memory_maps

LINUX = os.path.exists(memory_maps.MAPS) and os.path.exists(memory_maps.MAX_MAP_COUNT)


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_count_and_limit_are_read_from_proc():
  held, cap = memory_maps.count(), memory_maps.limit()
  assert 0 < held < cap
  with open(memory_maps.MAPS) as maps:
    assert abs(sum(1 for _ in maps) - held) < 50


@pytest.mark.skipif(not LINUX or jax.default_backend() != "cpu",
                    reason="reads /proc; XLA:CPU maps its programs into the process")
def test_relieve_frees_compiled_programs_above_the_fraction(monkeypatch):
  """A compiled rule program holds hundreds of mappings; above FRACTION of the
  limit `relieve` frees them, and the program still runs (compiled again). A GPU
  program adds none on the host (2 on an H200), so this is a CPU test."""
  def run():
    return jbai.simulate(jax.random.key(0), "bernoulli", [0.5, 0.4, 0.3], "ttts", 0.1, 8,
                         lanes=8, shrink=None).tau

  monkeypatch.setattr(memory_maps, "FRACTION", 1.0)  # no relief while compiling
  jax.clear_caches()  # so that the program is compiled (or loaded) here, whatever ran before
  before = memory_maps.count()
  tau = run()
  compiled = memory_maps.count()
  assert compiled > before + 100
  assert not memory_maps.relieve()
  monkeypatch.setattr(memory_maps, "FRACTION", 0.0)
  assert memory_maps.relieve()
  assert memory_maps.count() < compiled - 100
  monkeypatch.setattr(memory_maps, "FRACTION", 1.0)
  np.testing.assert_array_equal(run(), tau)


def test_relieve_does_nothing_without_proc(monkeypatch):
  monkeypatch.setattr(memory_maps, "MAPS", "/nonexistent/maps")
  monkeypatch.setattr(memory_maps, "FRACTION", 0.0)
  assert memory_maps.count() is None
  assert not memory_maps.relieve()


def test_simulate_and_trace_relieve_before_compiling(monkeypatch):
  calls = []
  monkeypatch.setattr(memory_maps, "relieve", lambda: calls.append(1) or False)
  jbai.simulate(jax.random.key(0), "gaussian", [1.0, 0.0], "tcb", 0.1, 4)
  jbai.trace(jax.random.key(0), "gaussian", [1.0, 0.0], "tcb", 16, 2, n_points=3)
  assert len(calls) == 2
