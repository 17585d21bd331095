"""Tests of jbai.compilation_cache: JAX's persistent compilation cache, on by default.

Each check runs in a fresh Python process (the cache is set up when jbai is
imported, and JAX reads it once per process), with its own cache directory.
"""

import json
import os
import subprocess
import sys

import jbai
from jbai import compilation_cache

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
                      "JAX_COMPILATION_CACHE_DIR")}
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
