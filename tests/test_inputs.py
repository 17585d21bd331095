"""The shared validation layer (jbai/core/inputs/) and the output-path checks
(jbai/host/paths.py): each check alone, its message, and what passes through."""

import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai.cli.trials import output_paths
from jbai.core import inputs
from jbai.host.jsonlines import DamagedLine, JsonLines
from jbai.host.paths import check_folder, check_output


def test_parse_delta_carries_log_inv_delta_at_any_magnitude():
  levels = inputs.parse_delta(["0.1", 1e-300, "1e-400", "2.5e-100000"])
  assert levels.texts[2] == "1e-400" and levels.values[2] == 0.0
  np.testing.assert_allclose(levels.log_inv, [math.log(10), 300 * math.log(10),
                                              400 * math.log(10),
                                              100000 * math.log(10) - math.log(2.5)],
                             rtol=1e-12)
  assert inputs.check_delta(0.1).tolist() == [0.1]
  assert inputs.check_delta(np.float32(0.1)).dtype == np.float64
  assert inputs.check_delta(jnp.asarray([0.1, 0.2])).shape == (2,)


@pytest.mark.parametrize("delta, error, fragment", [
    (0.0, ValueError, "got 0.0 (a level below float64's range is given as text"),
    ("0", ValueError, "got 0"),
    ("1.0", ValueError, "got 1.0"),
    (float("nan"), ValueError, "got nan"),
    ("nan", ValueError, "got nan"),
    ("abc", ValueError, "got 'abc'"),
    ([], ValueError, "1-d list"),
    ([[0.1]], ValueError, "1-d list"),
    (True, TypeError, "got True"),
    (None, TypeError, "got None"),
])
def test_bad_deltas(delta, error, fragment):
  with pytest.raises(error) as e:
    inputs.parse_delta(delta)
  assert fragment in str(e.value)


def test_a_user_threshold_is_told_about_tiny_deltas():
  gk = jbai.thresholds.gk16()
  mine = jbai.thresholds.Threshold("mine", lambda d, k: {"x": -jnp.log(d)}, gk.value)
  assert inputs.threshold_params(mine, 0.1, 3, np.float32)["x"].dtype == np.float32
  with pytest.raises(ValueError, match="delta 1e-300 is below float32's smallest normal"):
    inputs.threshold_params(mine, 1e-300, 3, np.float32)


@pytest.mark.parametrize("value, error, fragment", [
    (2.5, ValueError, "whole number, got 2.5"),
    (float("nan"), TypeError, "whole number, got nan"),
    (float("inf"), TypeError, "whole number, got inf"),
    ("3", TypeError, "whole number, got '3'"),
    (True, TypeError, "whole number, got True"),
    (0, ValueError, ">= 1, got 0"),
    (2**31, ValueError, "<= 2147483647"),
])
def test_check_count(value, error, fragment):
  with pytest.raises(error, match=None) as e:
    inputs.check_count("x", value, 1, 2**31 - 1)
  assert fragment in str(e.value)


def test_counts_that_pass():
  assert inputs.check_count("x", 2.0) == 2 and inputs.check_count("x", np.int64(3)) == 3
  assert inputs.check_count("x", jnp.asarray(4)) == 4
  assert inputs.check_lanes(None) is None
  traced = jax.jit(lambda m: inputs.check_max_steps(m) + 0)  # passes through under jit
  assert traced(5) == 5


def test_check_key():
  assert inputs.check_key(jax.random.key(1)).shape == ()
  assert inputs.check_key(jax.random.PRNGKey(1)).shape == (2,)
  for bad in (0, "k", None, np.zeros(2), jax.random.split(jax.random.key(0), 3)):
    with pytest.raises((TypeError, ValueError), match="key"):
      inputs.check_key(bad)


def test_check_params_domains_and_pass_through():
  t3c, tcb = jbai.rules.t3c(), jbai.rules.tcb()
  assert inputs.check_params(t3c, {"beta": 0.3}) == {"beta": 0.3}
  assert inputs.check_params(t3c, None) == {}
  with pytest.raises(TypeError, match="params must be a dict"):
    inputs.check_params(t3c, 0.3)
  with pytest.raises(TypeError, match="must be a number"):
    inputs.check_params(tcb, {"eps": "1"})
  with pytest.raises(ValueError, match="eps must be > 0 and finite, got 0"):
    inputs.check_params(tcb, {"eps": 0})
  out = jax.jit(lambda b: inputs.check_params(t3c, {"beta": b})["beta"] * 2)(0.25)
  assert out == 0.5  # a traced value is not inspected


def test_memory_limit_from_the_environment(monkeypatch):
  monkeypatch.setenv(inputs.MEMORY_ENV, "2G")
  assert inputs.memory_limit() == (2 * 2**30, inputs.MEMORY_ENV)
  assert inputs.check_memory("a run", 1000, 100) == 300_000
  with pytest.raises(ValueError, match="needs about 3 GB .* limit of 2.15 GB"):
    inputs.check_memory("a run", 10**7, 100)
  monkeypatch.delenv(inputs.MEMORY_ENV)
  limit, source = inputs.memory_limit()
  assert limit > 0 and source


def test_output_paths_are_distinct_and_side_by_side():
  assert output_paths("a/r.json") == {"summary": "a/r.json", "arrays": "a/r.npz",
                                      "partial": "a/r.partial.jsonl"}
  assert output_paths("r.npz") == {"summary": "r.json", "arrays": "r.npz",
                                   "partial": "r.partial.jsonl"}
  assert len(set(output_paths("r").values())) == 3
  with pytest.raises(ValueError, match="names a file of finished trials"):
    output_paths("r.partial.jsonl")


def test_check_output(tmp_path):
  assert check_output(str(tmp_path / "new" / "deeper" / "r.json"))
  assert not (tmp_path / "new").exists()  # nothing created by the check
  (tmp_path / "f").write_text("x")
  for bad, fragment in [(str(tmp_path), "is a folder"), ("/dev/full", "not a regular file"),
                        (str(tmp_path / "f" / "r.json"), "which is a file"), ("", "is empty")]:
    with pytest.raises(ValueError, match=fragment):
      check_output(bad)
  with pytest.raises(ValueError, match="is a file; give a folder"):
    check_folder(str(tmp_path / "f"))
  assert check_folder(str(tmp_path / "out"))
  assert os.listdir(tmp_path) == ["f"]  # no probe left behind


def test_json_lines_modes(tmp_path):
  path = str(tmp_path / "s.jsonl")
  store = JsonLines(path)
  for name in "abc":
    store.add({"key": name})
  lines = open(path).read().splitlines()
  lines.insert(1, "not json")
  open(path, "w").write("\n".join(lines) + "\n")
  assert set(JsonLines(path).records) == {"a", "b", "c"}
  with pytest.raises(DamagedLine, match="s.jsonl line 2: is not JSON.*do this"):
    JsonLines(path, on_damage="raise", hint="; do this")
  cut = JsonLines(path, on_damage="truncate")
  assert set(cut.records) == {"a"} and cut.damaged[0].line == 2
  assert open(path).read().count("\n") == 1  # cut before the damaged line
  open(path, "a").write('{"key": "old"}\n')  # written before checksums: read as before
  assert "old" in JsonLines(path)
  with pytest.raises(DamagedLine, match="has no checksum"):
    JsonLines(path, on_damage="raise", require_sum=True)
