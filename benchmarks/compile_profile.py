"""Where a test tier's time goes: a pytest plugin that sums, per test, JAX's
backend-compile, tracing and lowering durations (`jax.monitoring`) and the test's
wall time, and a report of the sums (docs/testing.md, "Where the slow tier's time
goes").

Each pytest process (each xdist worker) writes one JSON file to DIR at the end of
its session; the report reads them all:

  PYTHONPATH=benchmarks python -m pytest -m slow -n auto -p compile_profile
  python benchmarks/compile_profile.py [--top 40]

DIR is $JBAI_COMPILE_PROFILE_DIR (default: jbai-compile-profile in the temporary
directory); empty it between runs.
"""

import collections
import json
import os
import tempfile
import time

DIR = os.environ.get("JBAI_COMPILE_PROFILE_DIR",
                     os.path.join(tempfile.gettempdir(), "jbai-compile-profile"))
FIELDS = ("wall_s", "compile_s", "compiles", "trace_lower_s")

_test = ["<outside a test>"]
_sums = collections.defaultdict(collections.Counter)


def _on_duration(event: str, duration: float, **_):
  sums = _sums[_test[0]]
  if event.endswith("backend_compile_duration"):
    sums["compile_s"] += duration
    sums["compiles"] += 1
  elif event.endswith(("jaxpr_trace_duration", "jaxpr_to_mlir_module_duration")):
    sums["trace_lower_s"] += duration


def pytest_configure(config):
  del config
  import jax
  jax.monitoring.register_event_duration_secs_listener(_on_duration)


def pytest_runtest_protocol(item, nextitem):
  """Times the test (setup, call and teardown) as the current one; returns None,
  so that pytest's own protocol runs it."""
  del nextitem
  _test[0] = item.nodeid
  _sums[item.nodeid]["start"] = time.perf_counter()


def pytest_runtest_logfinish(nodeid, location):
  del location
  sums = _sums[nodeid]
  sums["wall_s"] += time.perf_counter() - sums.pop("start", time.perf_counter())
  _test[0] = "<outside a test>"


def pytest_sessionfinish(session):
  del session
  os.makedirs(DIR, exist_ok=True)
  name = f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}.json"
  with open(os.path.join(DIR, name), "w") as f:
    json.dump({k: dict(v) for k, v in _sums.items()}, f)


def load(directory: str = DIR) -> dict:
  """{node id: Counter of FIELDS} summed over the files of `directory`."""
  sums = collections.defaultdict(collections.Counter)
  for name in sorted(os.listdir(directory)):
    if name.endswith(".json"):
      with open(os.path.join(directory, name)) as f:
        for test, values in json.load(f).items():
          sums[test].update(values)
  return sums


def report(sums: dict, top: int) -> None:
  total = collections.Counter()
  for values in sums.values():
    total.update(values)
  wall = total["wall_s"] or 1.0
  print(f"{len(sums)} entries, {total['wall_s']:.0f} s of test time: compiling "
        f"{total['compile_s'] / wall:.0%} ({int(total['compiles'])} programs), tracing and "
        f"lowering {total['trace_lower_s'] / wall:.0%}")
  by_file = collections.defaultdict(collections.Counter)
  for test, values in sums.items():
    by_file[test.split("::")[0]].update(values)
  for title, rows in (("tests", sums), ("files", by_file)):
    print(f"\n| {title[:-1]} | wall s | share | compile s | programs | trace + lower s |")
    print("|---|---|---|---|---|---|")
    for name, v in sorted(rows.items(), key=lambda kv: -kv[1]["wall_s"])[:top]:
      print(f"| {name} | {v['wall_s']:.1f} | {v['wall_s'] / wall:.1%} | {v['compile_s']:.1f} | "
            f"{int(v['compiles'])} | {v['trace_lower_s']:.1f} |")


if __name__ == "__main__":
  import argparse

  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--dir", default=DIR)
  parser.add_argument("--top", type=int, default=40)
  args = parser.parse_args()
  report(load(args.dir), args.top)
