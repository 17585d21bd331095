"""JAX's persistent compilation cache: opt-in, and what it changes.

Importing jbai changes no JAX setting; `jbai.enable_compilation_cache()` (which
the command line calls) turns the cache on. Each check runs in a fresh Python
process (JAX reads its cache settings once per process), with its own cache
directory.
"""

import json
import os
import subprocess
import sys

import jbai
from jbai.host import caches

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(jbai.__file__)))

# Compiles one small program after PRELUDE and prints the cache directory, the
# cache's cap and the compilation-cache hits and misses that JAX reported.
PROGRAM = """
import json, jax
counts = {"hits": 0, "misses": 0}
def listen(event, **kwargs):
  if event == "/jax/compilation_cache/cache_hits": counts["hits"] += 1
  if event == "/jax/compilation_cache/cache_misses": counts["misses"] += 1
jax.monitoring.register_event_listener(listen)
PRELUDE
BODY
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir,
                  "cap": jax.config.jax_compilation_cache_max_size, **counts, **extra}))
"""
SMALL = """
import jbai
jbai.enable_compilation_cache()
jax.jit(lambda x: jax.numpy.sin(x) * 3.0 + 1.0)(2.0).block_until_ready()
extra = {}
"""
# What the command line does: `jbai run` (which turns the cache on itself).
CLI = """
import contextlib, io
from jbai import cli
with contextlib.redirect_stdout(io.StringIO()) as printed:
  cli.main(["run", "--means", "1,0.5,0.4", "--rule", "itcb", "--trials", "20", "--json"])
extra = {"run": json.loads(printed.getvalue())}
"""


def run(env_update, prelude="", body=SMALL):
  env = {k: v for k, v in os.environ.items()
         if k not in (caches.ENV_DIR, caches.ENV_OFF, "JAX_COMPILATION_CACHE_DIR",
                      "JAX_ENABLE_X64")}
  env.update(env_update)
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  env["JAX_PLATFORMS"] = "cpu"
  program = PROGRAM.replace("PRELUDE", prelude).replace("BODY", body)
  out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                       text=True, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def files(path):
  return sorted(os.listdir(path)) if os.path.isdir(path) else []


def test_importing_jbai_changes_no_jax_setting():
  program = ("import json, jax\n"
             "before = {k: repr(v) for k, v in jax.config.values.items()}\n"
             "import jbai, jbai.cli, jbai.reproduce\n"
             "after = {k: repr(v) for k, v in jax.config.values.items()}\n"
             "print(json.dumps({k: [before.get(k), after.get(k)] for k in set(before) | set(after)"
             " if before.get(k) != after.get(k)}))")
  env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
  out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                       text=True, check=True)
  assert json.loads(out.stdout.strip().splitlines()[-1]) == {}


def test_a_second_process_loads_what_the_first_compiled_from_the_per_user_default(tmp_path):
  home = str(tmp_path / "xdg")
  first = run({"XDG_CACHE_HOME": home})
  cache = os.path.join(home, "jbai", "compiled")
  assert first["dir"] == cache and first["cap"] == caches.MAX_BYTES
  assert first["misses"] >= 1 and first["hits"] == 0
  assert files(cache)
  second = run({"XDG_CACHE_HOME": home})
  assert second["hits"] >= 1 and second["misses"] == 0


def test_the_command_lines_second_run_loads_its_programs(tmp_path):
  """`jbai run` turns the cache on; a second run compiles nothing, with the same
  results as the run that compiled its programs (the cache switched off: below)."""
  cache = str(tmp_path / "cache")
  first = run({caches.ENV_DIR: cache}, body=CLI)
  assert first["dir"] == cache and first["misses"] >= 1
  second = run({caches.ENV_DIR: cache}, body=CLI)
  assert second["misses"] == 0 and second["hits"] >= 1
  same = lambda r: (r["run"]["mean_tau"], r["run"]["error_rate"], r["run"]["tau_ci95"])
  assert same(first) == same(second)


def test_switched_off_by_the_environment(tmp_path):
  home = str(tmp_path / "xdg")
  out = run({caches.ENV_OFF: "1", "XDG_CACHE_HOME": home})
  assert out["dir"] is None and out["hits"] == out["misses"] == 0
  assert not os.path.exists(home)


def test_a_directory_the_user_configured_is_kept(tmp_path):
  """jbai leaves JAX's cache settings alone where the user set the directory."""
  mine, theirs = str(tmp_path / "mine"), str(tmp_path / "theirs")
  out = run({caches.ENV_DIR: mine},
            prelude=f"jax.config.update('jax_compilation_cache_dir', {theirs!r})")
  assert out["dir"] == theirs and out["cap"] == -1 and not os.path.exists(mine)
  out = run({caches.ENV_DIR: mine, "JAX_COMPILATION_CACHE_DIR": theirs})
  assert out["dir"] == theirs


def test_default_dir(monkeypatch):
  monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
  assert caches.default_dir() == os.path.join("/somewhere", "jbai", "compiled")
  monkeypatch.delenv("XDG_CACHE_HOME")
  assert caches.default_dir() == os.path.join(
      os.path.expanduser("~"), ".cache", "jbai", "compiled")
