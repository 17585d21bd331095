"""The defects of issue 38: a block rule's default cap, counts past 2^31, chex as a
test dependency only, and the front pages' versions against pyproject.toml."""

import ast
import json
import pathlib
import re
import tomllib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import cli
from jbai.core import inputs, lane
from jbai.random import prng
from jbai.state import count_dtype

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
KEY = jax.random.key(0)
ISSUE_MEANS = [0.66, 0.58, 0.5, 0.41, 0.3]  # the issue's Bernoulli instance


# ---------------------------------------------------------------- a block rule's cap

def test_default_cap_is_the_rules_own_where_it_pulls_in_blocks():
  exp_gap, tcb = jbai.rules.exp_gap(), jbai.rules.tcb()
  assert exp_gap.max_steps == 2**31 - 2 and tcb.max_steps is None
  assert inputs.default_max_steps(exp_gap) == 2**31 - 2
  assert inputs.default_max_steps(exp_gap, blocks=False) == inputs.DEFAULT_MAX_STEPS
  assert inputs.default_max_steps(tcb) == inputs.DEFAULT_MAX_STEPS == 1_000_000
  with jax.enable_x64(False):  # the command line's float32 runs take it too
    assert inputs.check_max_steps(inputs.default_max_steps(exp_gap)) == 2**31 - 2


def test_exp_gap_finishes_on_its_defaults():
  """At the default cap of 10^6 every trial of this instance hit the cap (its
  mean tau is about 4e6); with the rule's own cap none does."""
  res = jbai.simulate(KEY, "bernoulli", ISSUE_MEANS, "exp-gap", 0.1, 50)
  assert res.stats["max_steps"] == 2**31 - 2
  assert not res.hit_cap.any() and res.correct.all()
  assert 1e6 < res.tau.mean() < 1e8


def test_the_command_line_reports_the_cap_it_ran_with(capsys):
  code = cli.main(["run", "--family", "bernoulli", "--means", ",".join(map(str, ISSUE_MEANS)),
                   "--rule", "exp-gap", "--delta", "0.1", "--trials", "20", "--json"])
  rec = json.loads(capsys.readouterr().out)
  assert code == 0 and rec["hit_cap"] == 0 and rec["max_steps"] == 2**31 - 2


# ---------------------------------------------------------------- counts past 2^31

def test_counts_are_int64_with_x64_and_int32_without():
  assert count_dtype() == jnp.int64  # the tests run with x64 (conftest)
  with jax.enable_x64(False):
    assert count_dtype() == jnp.int32
    with pytest.raises(ValueError, match="32-bit counts.*JAX_ENABLE_X64=1"):
      inputs.check_max_steps(2**31 - 1)
  assert inputs.check_max_steps(2**53) == 2**53
  with pytest.raises(ValueError, match="2\\^53"):
    inputs.check_max_steps(2**53 + 1)


def test_keys_are_those_of_fold_in_below_2_32_and_do_not_wrap_above():
  data = jax.random.key_data(KEY)
  for t in (0, 5, 2**31 - 2):
    wide = lane.rule_key(data, jnp.asarray(t, jnp.int64))
    narrow = lane.rule_key(data, jnp.asarray(t, jnp.int32))
    assert np.array_equal(jax.random.key_data(wide), jax.random.key_data(narrow))
  for n in (0, 7, 2**32 - 1):
    got = lane.fold_in_count(prng.wrap(data), jnp.asarray(n, jnp.int64))
    want = jax.random.fold_in(prng.wrap(data), jnp.asarray(n, jnp.uint32))
    assert np.array_equal(jax.random.key_data(got), jax.random.key_data(want))
  # Where fold_in would wrap (2t and n mod 2^32), the keys stay apart.
  far = [lane.rule_key(data, jnp.asarray(t, jnp.int64)) for t in (3, 3 + 2**31)]
  assert not np.array_equal(*map(jax.random.key_data, far))
  arm = jnp.asarray(1, jnp.int32)
  far = [lane.reward_key(data, arm, jnp.asarray(n, jnp.int64)) for n in (9, 9 + 2**32)]
  assert not np.array_equal(*map(jax.random.key_data, far))


def test_a_trial_runs_past_2_31_pulls():
  """exp-gap at a gap of 5e-4 takes about 7.5e9 pulls, in blocks: some 40 steps."""
  res = jbai.simulate(KEY, "bernoulli", [0.5, 0.4995], "exp-gap", 0.01, 2, max_steps=2**40,
                      lanes=2)
  assert res.tau.dtype == res.counts.dtype == res.steps.dtype == np.int64
  assert not res.hit_cap.any() and (res.tau > 2**32).all()
  np.testing.assert_array_equal(res.counts.sum(-1), res.steps)
  np.testing.assert_array_equal(res.tau, res.steps)


# ---------------------------------------------------------------- chex, a test dependency

def _name(requirement: str) -> str:
  return re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0).lower()


def _bounds(requirements) -> dict:
  """{name: lower bound} of requirements such as "jax>=0.9.0"."""
  out = {}
  for r in requirements:
    m = re.match(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?>=([0-9][0-9.]*)", r)
    assert m, f"pyproject.toml: {r!r} has no lower bound"
    out[m.group(1).lower()] = m.group(3)
  return out


def _same(a: str, b: str) -> bool:
  """Versions equal up to trailing zeros (2.0 == 2.0.0)."""
  pad = lambda v: tuple(int(x) for x in v.split(".")) + (0,) * (4 - len(v.split(".")))
  return pad(a) == pad(b)


def test_chex_is_a_test_dependency_only():
  project = PYPROJECT["project"]
  assert "chex" not in {_name(r) for r in project["dependencies"]}
  assert "chex" in {_name(r) for r in project["optional-dependencies"]["test"]}
  for path in (ROOT / "jbai").rglob("*.py"):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
      names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
               [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
      assert not any(n.split(".")[0] == "chex" for n in names), f"{path} imports chex"


def test_minimum_versions_pin_every_bound_of_pyproject():
  """.ci/minimum-versions.txt pins each dependency of the package, the test extra
  and the docs extra at its lower bound (the CI stage installs ".[test,docs]")."""
  project = PYPROJECT["project"]
  extras = project["optional-dependencies"]
  bounds = _bounds(project["dependencies"] + extras["test"] + extras["docs"])
  pins = dict(line.split("==") for line in
              (ROOT / ".ci" / "minimum-versions.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#"))
  pins = {k.strip().lower(): v.strip() for k, v in pins.items()}
  assert set(pins) == set(bounds), (
      f"pinned but not declared: {sorted(set(pins) - set(bounds))}; "
      f"declared but not pinned: {sorted(set(bounds) - set(pins))}")
  for name, bound in bounds.items():
    assert _same(pins[name], bound), f"{name}: pinned {pins[name]}, declared >={bound}"


# ---------------------------------------------------------------- the front pages

FRONT_PAGES = ("README.md", "docs/index.md")
VERSION = re.compile(r"\b(Python|jax|jaxlib|optax|numpy|chex|filelock) ([0-9]+(?:\.[0-9]+)+)")


def test_front_pages_state_the_versions_of_pyproject():
  project = PYPROJECT["project"]
  python = re.match(r">=([0-9.]+)$", project["requires-python"]).group(1)
  bounds = dict(_bounds(project["dependencies"]), python=python)
  for page in FRONT_PAGES:
    text = (ROOT / page).read_text()
    stated = VERSION.findall(text)
    assert any(name == "Python" for name, _ in stated), f"{page} states no Python version"
    for name, version in stated:
      assert name.lower() in bounds, f"{page}: {name} {version} is not a dependency"
      assert _same(version, bounds[name.lower()]), (
          f"{page} says {name} {version}; pyproject.toml requires >={bounds[name.lower()]}")


def test_front_pages_give_the_fast_tiers_time_of_the_testing_page():
  fast = re.compile(r"fast[^.]*?about (\d+)(?: to (\d+))? minutes")
  want = fast.findall((ROOT / "docs" / "testing.md").read_text())[0]
  for page in FRONT_PAGES:
    got = fast.findall((ROOT / page).read_text())
    assert got and all(g == want for g in got), f"{page}: {got}, docs/testing.md: {want}"
