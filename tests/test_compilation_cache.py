"""Tests of jbai.compilation_cache (JAX's persistent compilation cache, on by
default) and jbai.program_cache (exported programs beside it).

Each check of a cache runs in a fresh Python process (the cache is set up when
jbai is imported, and JAX reads it once per process), with its own cache directory.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import jbai
from jbai import compilation_cache, program_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(jbai.__file__)))

# Imports jbai (which sets the cache up), compiles one small program and prints
# the cache directory and the compilation-cache hits and misses JAX reported.
PROGRAM = """
import json, jax
counts = {"hits": 0, "misses": 0}
def listen(event, **kwargs):
  if event == "/jax/compilation_cache/cache_hits": counts["hits"] += 1
  if event == "/jax/compilation_cache/cache_misses": counts["misses"] += 1
jax.monitoring.register_event_listener(listen)
PRELUDE
import jbai
jax.jit(lambda x: jax.numpy.sin(x) * 3.0 + 1.0)(2.0).block_until_ready()
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir, **counts}))
"""


def run(env_update, prelude=""):
  env = {k: v for k, v in os.environ.items()
         if k not in (compilation_cache.ENV_DIR, compilation_cache.ENV_OFF,
                      compilation_cache.ENV_MAX, "JAX_COMPILATION_CACHE_DIR")}
  env.update(env_update)
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  env["JAX_PLATFORMS"] = "cpu"
  out = subprocess.run([sys.executable, "-c", PROGRAM.replace("PRELUDE", prelude)],
                       env=env, capture_output=True, text=True, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def files(path):
  return sorted(os.listdir(path)) if os.path.isdir(path) else []


def test_a_second_process_loads_what_the_first_compiled(tmp_path):
  cache = str(tmp_path / "cache")
  first = run({compilation_cache.ENV_DIR: cache})
  assert first["dir"] == cache
  assert first["misses"] >= 1 and first["hits"] == 0
  written = files(cache)
  assert written
  second = run({compilation_cache.ENV_DIR: cache})
  assert second["hits"] >= 1 and second["misses"] == 0
  assert files(cache) == written


def test_the_default_is_per_user(tmp_path):
  home = str(tmp_path / "xdg")
  out = run({"XDG_CACHE_HOME": home})
  assert out["dir"] == os.path.join(home, "jbai", "jax")
  assert files(out["dir"])


def test_switched_off_by_the_environment(tmp_path):
  home = str(tmp_path / "xdg")
  out = run({compilation_cache.ENV_OFF: "1", "XDG_CACHE_HOME": home})
  assert out["dir"] is None and out["hits"] == out["misses"] == 0
  assert not os.path.exists(home)


def test_a_directory_the_user_configured_is_kept(tmp_path):
  """jbai leaves JAX's cache settings alone where the user set the directory."""
  mine, theirs = str(tmp_path / "mine"), str(tmp_path / "theirs")
  out = run({compilation_cache.ENV_DIR: mine},
            prelude=f"jax.config.update('jax_compilation_cache_dir', {theirs!r})")
  assert out["dir"] == theirs and not os.path.exists(mine)
  out = run({compilation_cache.ENV_DIR: mine, "JAX_COMPILATION_CACHE_DIR": theirs})
  assert out["dir"] == theirs


def test_default_dir(monkeypatch):
  monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
  assert compilation_cache.default_dir() == os.path.join("/somewhere", "jbai", "jax")
  monkeypatch.delenv("XDG_CACHE_HOME")
  assert compilation_cache.default_dir() == os.path.join(
      os.path.expanduser("~"), ".cache", "jbai", "jax")


def entry(folder, name, size, age_s):
  """Writes a file of `size` bytes into `folder`, last written `age_s` seconds ago."""
  path = os.path.join(folder, name)
  with open(path, "wb") as f:
    f.write(b"x" * size)
  when = time.time() - age_s
  os.utime(path, (when, when))


def test_prune_removes_the_least_recently_written_entries(tmp_path):
  entry(tmp_path, "a-cache", 100, 300)
  entry(tmp_path, "a-atime", 8, 300)  # JAX's record of a-cache's last use
  entry(tmp_path, "b.jaxexport", 100, 200)
  entry(tmp_path, "c-cache", 100, 100)
  entry(tmp_path, "notes.txt", 1000, 400)  # not an entry
  # 300 bytes of entries over a cap of 250: the oldest go until at most 187.5 remain.
  assert compilation_cache.prune(str(tmp_path), 250) == 2
  assert files(tmp_path) == ["c-cache", "notes.txt"]


def test_prune_leaves_a_directory_within_its_cap(tmp_path):
  entry(tmp_path, "a-cache", 100, 300)
  entry(tmp_path, "b.jaxexport", 100, 100)
  assert compilation_cache.prune(str(tmp_path), 200) == 0
  assert files(tmp_path) == ["a-cache", "b.jaxexport"]


def test_importing_jbai_prunes_a_cache_past_its_cap_once_a_day(tmp_path):
  cache = tmp_path / "cache"
  programs = tmp_path / "cache-programs"
  for folder, suffix in ((cache, "-cache"), (programs, ".jaxexport")):
    folder.mkdir()
    for i in range(4):  # old3 is the oldest
      entry(folder, f"old{i}{suffix}", 1000, 1000 + i)
  env = {compilation_cache.ENV_DIR: str(cache), compilation_cache.ENV_MAX: "3000"}
  out = run(env)
  assert out["misses"] >= 1
  for folder, suffix in ((cache, "-cache"), (programs, ".jaxexport")):
    names = files(folder)
    assert f"old0{suffix}" in names and f"old1{suffix}" in names
    assert f"old2{suffix}" not in names and f"old3{suffix}" not in names
  assert any(n.endswith("-cache") and not n.startswith("old") for n in files(cache))
  # Checked less than a day ago: a second process leaves the directory alone.
  entry(cache, "huge-cache", 10_000, 5000)
  run(env)
  assert "huge-cache" in files(cache)


def test_the_cap_comes_from_the_environment(monkeypatch):
  monkeypatch.delenv(compilation_cache.ENV_MAX, raising=False)
  assert compilation_cache.max_bytes() == compilation_cache.MAX_BYTES
  monkeypatch.setenv(compilation_cache.ENV_MAX, "5000")
  assert compilation_cache.max_bytes() == 5000
  monkeypatch.setenv(compilation_cache.ENV_MAX, "0")
  assert compilation_cache.max_bytes() == 0
  for bad in ("1GB", "-5", "2.5"):
    monkeypatch.setenv(compilation_cache.ENV_MAX, bad)
    with pytest.warns(UserWarning, match=repr(bad)):
      assert compilation_cache.max_bytes() == compilation_cache.MAX_BYTES


# --------------------------------------------------------------------------
# The program cache (jbai.program_cache): exported chunk programs on disk.

# Runs one small simulation and prints how many times the chunk program was
# traced, its results and the exported programs on disk. FAMILY is replaced by
# the family's expression.
SIMULATE = """
import json, os, jax
import jbai
from jbai import engine, program_cache
traces = [0]
build = engine.build_chunk

def counting(*args):
  chunk_fn = build(*args)
  def traced(*a, **k):  # runs only when the chunk program is traced
    traces[0] += 1
    return chunk_fn(*a, **k)
  return traced

engine.build_chunk = counting
res = jbai.simulate(jax.random.key(1), FAMILY, [1.0, 0.5, 0.4], "itcb", 0.1, 20, lanes=LANES,
                    chunk=64)
folder = program_cache.directory()
print(json.dumps({"traces": traces[0], "tau": res.tau.tolist(), "counts": res.counts.tolist(),
                  "summary": res.summary, "dir": folder,
                  "programs": sorted(n for n in os.listdir(folder) if n.endswith(program_cache.SUFFIX))
                              if folder and os.path.isdir(folder) else []}))
"""

GAUSSIAN = "jbai.families.gaussian()"
# Equal to the built-in Gaussian by name and parameters (Family.__eq__), but its own
# sampler (twice the noise): it must never load the built-in's program.
NOISIER = ("jbai.families.gaussian()._replace("
           "sample=lambda k, m: m + 2 * jax.random.normal(k, m.shape, m.dtype))")


def simulate(env_update, family=GAUSSIAN, lanes=4):
  env = {k: v for k, v in os.environ.items()
         if k not in (compilation_cache.ENV_DIR, compilation_cache.ENV_OFF,
                      "JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_X64")}
  env.update(env_update)
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  env["JAX_PLATFORMS"] = "cpu"
  program = SIMULATE.replace("FAMILY", family).replace("LANES", str(lanes))
  out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                       text=True, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def results(run):
  return run["tau"], run["counts"], run["summary"]


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
  """A cache directory after one run, and that run."""
  cache = str(tmp_path_factory.mktemp("programs") / "cache")
  return cache, simulate({compilation_cache.ENV_DIR: cache})


def test_a_second_process_loads_the_exported_chunk(filled):
  cache, first = filled
  assert first["dir"] == cache + "-programs"
  assert first["traces"] == 1 and len(first["programs"]) == 2  # the chunk, the oracle
  second = simulate({compilation_cache.ENV_DIR: cache})
  assert second["traces"] == 0  # loaded: not traced
  assert set(second["programs"]) == set(first["programs"])
  off = simulate({compilation_cache.ENV_OFF: "1"})
  assert off["traces"] == 1 and off["dir"] is None and off["programs"] == []
  assert results(second) == results(first) == results(off)  # bit for bit


def test_another_program_misses(filled):
  cache, first = filled
  other = simulate({compilation_cache.ENV_DIR: cache}, lanes=8)
  assert other["traces"] == 1
  assert len(set(other["programs"]) - set(first["programs"])) == 1  # its own chunk


def test_a_users_family_bypasses_the_cache(filled):
  cache, first = filled
  before = set(n for n in os.listdir(cache + "-programs") if n.endswith(program_cache.SUFFIX))
  mine = simulate({compilation_cache.ENV_DIR: cache}, family=NOISIER)
  assert mine["traces"] == 1 and set(mine["programs"]) == before
  assert mine["tau"] != first["tau"]


def test_builtin_tells_jbais_own_from_a_users():
  g = jbai.families.gaussian()
  for name, factory in jbai.families.BUILTIN.items():
    assert program_cache.builtin(factory(), jbai.families.BUILTIN), name
  for name in jbai.rules.RULES:
    rule = jbai.rules.get(name, beta=0.3, eps=0.5)
    assert program_cache.builtin(rule, jbai.rules.RULES), name
  for thr in (jbai.thresholds.gk16(), jbai.thresholds.kk(), jbai.thresholds.paper(eps=0.1)):
    assert program_cache.builtin(thr, jbai.thresholds.THRESHOLDS), thr
  assert program_cache.builtin(jbai.families.weibull(shape=0.7, curvature=0.2),
                               jbai.families.BUILTIN)
  users = [(g._replace(sample=lambda k, m: m), jbai.families.BUILTIN),
           (g._replace(stat_dim=2), jbai.families.BUILTIN),
           (g._replace(name="mine"), jbai.families.BUILTIN),
           (jbai.rules.itcb()._replace(select=jbai.rules.tcb().select), jbai.rules.RULES),
           (jbai.rules.Rule("mine", lambda k: (), lambda *a: (0, ())), jbai.rules.RULES),
           (jbai.thresholds.gk16()._replace(value=lambda *a: 1.0),
            jbai.thresholds.THRESHOLDS)]
  for obj, registry in users:
    assert not program_cache.builtin(obj, registry), obj
