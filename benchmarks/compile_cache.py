"""Compile seconds of a first and a second process, with JAX's persistent cache.

Runs the same simulation (ITCB, Gaussian [1.2, 1, 1, 1, 1], delta = 1e-8, 200
trials, float32) in two fresh Python processes that share an empty cache
directory, and prints for each, from `jax.monitoring`'s events: XLA compilation
(or loading from the cache), tracing and lowering, and the run's own
`compile_seconds` (the first chunk: tracing, lowering, compiling or loading, and
running it).

Usage: python benchmarks/compile_cache.py
"""

import json
import os
import subprocess
import sys
import tempfile

CHILD = """
import collections, json, jax, jax.monitoring
events = collections.defaultdict(float)
jax.monitoring.register_event_duration_secs_listener(
    lambda name, secs, **kw: events.__setitem__(name, events[name] + secs))
import jbai
res = jbai.simulate(jax.random.key(0), "gaussian", [1.2, 1, 1, 1, 1], "itcb", 1e-8, 200)
print(json.dumps({"compile_seconds": res.stats["compile_seconds"], **events}))
"""

ROWS = [("XLA compile or cache load", "/jax/core/compile/backend_compile_duration"),
        ("tracing", "/jax/core/compile/jaxpr_trace_duration"),
        ("lowering", "/jax/core/compile/jaxpr_to_mlir_module_duration"),
        ("run's compile_seconds", "compile_seconds")]

if __name__ == "__main__":
  with tempfile.TemporaryDirectory() as cache:
    env = dict(os.environ, JBAI_COMPILATION_CACHE_DIR=cache)
    env.pop("JBAI_NO_COMPILATION_CACHE", None)
    runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD], env=env, check=True,
                                      capture_output=True, text=True).stdout.splitlines()[-1])
            for _ in range(2)]
  print(f"{'seconds':<28} {'first process':>14} {'second process':>15}")
  for label, key in ROWS:
    print(f"{label:<28} {runs[0].get(key, 0.0):>14.2f} {runs[1].get(key, 0.0):>15.2f}")
