"""Where a step's time goes, kernel by kernel (XLA:CPU).

Compiles the chunk program of `benchmarks/step_profile.py` for a rule and instance
(--lanes lanes, one step per loop iteration, delta = 1e-30 so that no trial stops),
times it untraced (best of --rounds calls of 512 steps), then runs one call under
`jax.profiler.trace` with XLA:CPU's per-kernel trace events on
(`--xla_cpu_enable_xprof_traceme`, set here before JAX starts) and prints:
  - the step's ns per lane-step untraced, and the sum of its kernels' traced times
    (each trace event adds its own cost, the same for every kernel);
  - the kernels that run at every step, by traced time: ns per lane-step, share of
    the traced sum, the output's shape, and the source line of its first op;
  - the traced time by the kernels' output size: [lanes, K] and larger (a pass over
    every arm of every lane), [lanes] (one number a lane), other.
The trace adds its own cost to every kernel, and a kernel's traced time is not what
removing it would save: the list points at candidates, and a timed change decides.

Usage: python benchmarks/kernel_times.py [--rule tcb] [--instance gaussian-20]
         [--lanes 256] [--top 30] [--rounds 5]
"""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_cpu_enable_xprof_traceme=true").strip()

import collections  # noqa: E402
import glob  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import jax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlo_fusions  # noqa: E402
import step_profile  # noqa: E402


def kernel_events(fn, pool, config, total) -> tuple:
  """({kernel name: (traced microseconds, calls)}, steps) of one call under the
  profiler."""
  with tempfile.TemporaryDirectory() as d:
    with jax.profiler.trace(d, create_perfetto_trace=True):
      steps = int(jax.block_until_ready(fn(pool, config, total)).steps.max())
    path = glob.glob(os.path.join(d, "**", "*perfetto_trace.json.gz"), recursive=True)[0]
    with gzip.open(path) as f:
      trace = json.load(f)
  events = trace["traceEvents"] if isinstance(trace, dict) else trace
  times, calls = collections.Counter(), collections.Counter()
  for e in events:
    if e.get("ph") == "X":
      times[e["name"]] += e["dur"]
      calls[e["name"]] += 1
  return {name: (times[name], calls[name]) for name in times}, steps


def describe(text: str) -> dict:
  """{instruction name: (output shape, 'file.py:line function' of its op)} of the
  compiled HLO's instructions."""
  t = hlo_fusions.tables(text.splitlines())
  out = {}
  for m in re.finditer(r"^\s*%([\w.\-]+) = (\S+) .*?stack_frame_id=(\d+)", text, re.M):
    out.setdefault(m.group(1), (m.group(2), hlo_fusions.source(t, int(m.group(3)))))
  return out


def size_class(shape: str, lanes: int, num_arms: int) -> str:
  dims = [math.prod(map(int, d.split(","))) if d else 1
          for d in re.findall(r"\[([\d,]*)\]", shape)]
  largest = max(dims, default=1)
  if largest >= lanes * num_arms:
    return "[lanes, K] or larger"
  return "[lanes]" if largest >= lanes else "other"


def main():
  parser = hlo_fusions.step_arguments(__doc__, 30)
  parser.add_argument("--rounds", type=int, default=5)
  args = parser.parse_args()
  means, (fn, pool, config, total) = hlo_fusions.steady_chunk(args)
  best = min(step_profile.lane_step_ns([(fn, pool, config, total, args.lanes)],
                                       args.rounds)[0])
  events, steps = kernel_events(fn, pool, config, total)
  info = describe(fn.lower(pool, config, total).compile().as_text())
  per_step = {n: us for n, (us, calls) in events.items() if n in info and calls >= steps}
  ns = {n: 1e3 * us / (steps * args.lanes) for n, us in per_step.items()}
  traced = sum(ns.values())
  print(f"{args.rule} on {args.instance}, {args.lanes} lanes, {jax.devices()[0].device_kind}")
  print(f"untraced step: {best:.0f} ns per lane-step; traced kernels: {traced:.0f} "
        f"({len(ns)} kernels run at every step)")
  print(f"\n{'ns':>7} {'share':>6}  {'kernel':<30} {'shape':<26} source")
  for name, value in sorted(ns.items(), key=lambda x: -x[1])[:args.top]:
    shape, where = info[name]
    print(f"{value:>7.1f} {value / traced:>6.1%}  {name:<30} {shape[:26]:<26} {where}")
  by_size = collections.Counter()
  count = collections.Counter()
  for name, value in ns.items():
    cls = size_class(info[name][0], args.lanes, len(means))
    by_size[cls] += value
    count[cls] += 1
  print("\nby output size:")
  for cls, value in by_size.most_common():
    print(f"{value:>7.1f} {value / traced:>6.1%}  {count[cls]:>3} kernels  {cls}")


if __name__ == "__main__":
  main()
