"""jbai on an accelerator against the compiled loop on every CPU core of the same
machine, in one call (under 8 minutes on one GPU), with a table.

  1. TCB and ITCB on Gaussian and Bernoulli K = 5 (delta = 1e-8, gk16, float32):
     the chunk program (`jbai.host.programs`) on a pool sized from the device's
     memory (up to --max-lanes lanes, 2^18 by default), for each number of steps per
     loop iteration (--unroll), timed in the steady state: every lane recycles
     trials of a stream of --trials trials, and the useful steps of the timed
     calls count (no tail); the best S is kept;
  2. TCB and ITCB on Bernoulli K = 5, the whole run of --trials trials with
     `jbai.simulate` (its default S; tail included), with the mean stopping time;
  3. every registered rule on Gaussian K = 5 at a smaller pool (--rule-lanes),
     steady state, until --budget seconds have passed since the start (the rules
     left are marked skipped);
  4. the numba loop of `benchmarks/loop_kernels.py` on every core (numba.prange)
     on the cases of 1, for about --loop-seconds each, with its mean stopping time;
  5. the host's CPU: jbai on N CPU devices against the loop on N threads for each N
     of --cpu-devices (1, 2, 4, 8, 16 up to the usable cores; `benchmarks/cores.py`).
It writes gpu.md (markdown) and gpu.json (rows) into --out, and prints the table:
useful steps per second, jbai / the loop, and each rule / TCB.

With --smoke every size is tiny, so that the code paths run on a CPU in a minute
or two (a test of the script, not a measurement).

Usage: python benchmarks/gpu.py [--out results/] [--trials 1000000]
         [--unroll 1,8] [--max-lanes 262144] [--seconds 8] [--smoke]
"""

import argparse
import json
import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loop_kernels as lk  # noqa: E402
from compiled_loop import DELTA, FAMILY, INSTANCES, RULE, mean_ci  # noqa: E402

import jbai  # noqa: E402
from jbai.core import pool as pool_lib  # noqa: E402
from jbai.core.lane import Config  # noqa: E402
from jbai.host import programs  # noqa: E402

CASES = [("tcb", "gaussian-5"), ("itcb", "gaussian-5"), ("tcb", "bernoulli-5"),
         ("itcb", "bernoulli-5")]
WORK_PER_STATE = 64  # device bytes a step needs per byte of lane state (a guess, generous)


def lane_bytes(family, rule, num_arms):
  """Bytes of one lane's state and its output slots (`initial_pool`'s shapes)."""
  config = _config(family, rule, [0.5] * num_arms, 1, 1e-8)
  shapes = jax.eval_shape(
      lambda c: pool_lib.initial_pool(family, rule, c, num_arms, 1, 64), config)
  return sum(math.prod(s.shape) * s.dtype.itemsize for s in jax.tree.leaves(shapes)) / 64


def pool_lanes(family, rule, num_arms, max_lanes, trials):
  """The largest power of two of lanes whose working set fits in a quarter of the
  device's memory, at most max_lanes and trials / 4."""
  stats = jax.devices()[0].memory_stats() or {}
  limit = stats.get("bytes_limit", 2**30)
  fit = limit / 4 / (WORK_PER_STATE * lane_bytes(family, rule, num_arms))
  lanes = min(max_lanes, fit, max(trials // 4, 8))
  return 2 ** int(math.log2(lanes)), limit


def _config(family, rule, means, n_trials, delta):
  thr = jbai.thresholds.gk16()
  return Config(key=jax.random.key_data(jax.random.key(0)),
                means=jnp.asarray(np.asarray(means, np.float32)[None]),
                n_trials=jnp.asarray(n_trials, jnp.int32),
                max_steps=jnp.asarray(10**7, jnp.int32),
                thr_params=thr.init(jnp.asarray([delta], jnp.float32), len(means)),
                rule_state=rule.init(len(means)))


def steady_rate(rule_name, instance, lanes, unroll, trials, seconds, chunk):
  """Useful steps per second of the chunk program in the steady state (the pool
  recycling a stream of `trials` trials), after a call that compiles it."""
  family_name, means = INSTANCES[instance]
  family, rule = jbai.families.get(family_name), jbai.rules.get(rule_name)
  device = tuple(jax.local_devices()[:1])
  thr = jbai.thresholds.gk16()
  t0 = time.perf_counter()
  fn, sharding = programs.chunk_program(family, rule.program(), thr, len(means), 1, lanes,
                                        chunk, device, False, unroll)
  config = _config(family, rule, means, trials, DELTA)
  pool = programs.idle_pool(family, rule, config, len(means), 1, lanes, False, 1)
  pool = jax.device_put(pool, sharding)
  total = jnp.asarray(trials, jnp.int32)
  pool = jax.block_until_ready(fn(pool, config, total))  # compiles; lanes start trials
  compile_s = time.perf_counter() - t0
  useful, t0 = 0, time.perf_counter()
  while time.perf_counter() - t0 < seconds and int(pool.next_trial[0]) < trials:
    pool = fn(pool, config, total)
    useful += int(pool.useful[0])
  return useful / (time.perf_counter() - t0), compile_s


def full_run(rule_name, instance, lanes, trials, chunk):
  """The whole run of `trials` trials with `jbai.simulate` (its default steps per
  iteration, and the tail's smaller pools): (useful steps per second of the chunks
  that did not compile, tau)."""
  family, means = INSTANCES[instance]
  res = jbai.simulate(jax.random.key(0), family, means, rule_name, DELTA, trials,
                      lanes=lanes, chunk=chunk, max_steps=10**7)
  st = res.stats
  return st["timed_useful_steps"] / max(st["wall_seconds"], 1e-9), np.asarray(res.tau)


def loop_all_cores(rule_name, instance, seconds):
  """The numba loop on every core for about `seconds`: (steps per second, tau)."""
  family, means = INSTANCES[instance]
  args = (FAMILY[family], RULE[rule_name], np.asarray(means, float), math.log(1 / DELTA),
          1.0, 10**7)
  lk.run_parallel(*args, 4)  # compiles
  n = 8 * os.cpu_count()
  t0 = time.perf_counter()
  tau, _ = lk.run_parallel(*args, n)
  n = max(n, int(n * seconds / max(time.perf_counter() - t0, 1e-3)))
  t0 = time.perf_counter()
  tau, _ = lk.run_parallel(*args, n)
  return tau.sum() / (time.perf_counter() - t0), tau


def write(rows, out, header, show=True):
  """gpu.json and gpu.md in `out` (called after every row, so that a run cut short
  keeps what it measured)."""
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, "gpu.json"), "w") as f:
    json.dump({"header": header, "rows": rows}, f, indent=1)
  keys = list(dict.fromkeys(k for r in rows for k in r))
  lines = [f"<!-- {header} -->", "| " + " | ".join(keys) + " |",
           "|" + "---|" * len(keys)]
  for r in rows:
    lines.append("| " + " | ".join(_fmt(r.get(k, "")) for k in keys) + " |")
  text = "\n".join(lines) + "\n"
  with open(os.path.join(out, "gpu.md"), "w") as f:
    f.write(text)
  if show:
    print(text, flush=True)


def _fmt(v):
  if isinstance(v, float):
    return f"{v:.3g}"
  return str(v)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default="gpu-results")
  parser.add_argument("--trials", type=int, default=1_000_000)
  parser.add_argument("--unroll", default="1,8")
  parser.add_argument("--max-lanes", type=int, default=2**18)
  parser.add_argument("--rule-lanes", type=int, default=2**15)
  parser.add_argument("--seconds", type=float, default=8.0, help="steady-state timing")
  parser.add_argument("--loop-seconds", type=float, default=10.0)
  parser.add_argument("--chunk", type=int, default=2048)
  parser.add_argument("--rules", default=",".join(jbai.rules.RULES))
  parser.add_argument("--budget", type=float, default=420.0,
                      help="seconds after which part 3 skips the rules left")
  parser.add_argument("--smoke", action="store_true", help="tiny sizes (a CPU test)")
  parser.add_argument("--cpu-devices", default="1,2,4,8,16",
                      help="CPU device counts for the host's table (benchmarks/cores.py; "
                      "'' for none)")
  parser.add_argument("--cpu-trials", type=int, default=8000)
  args = parser.parse_args()
  if args.smoke:
    args.trials, args.max_lanes, args.rule_lanes = 64, 16, 8
    args.seconds, args.loop_seconds, args.chunk = 0.2, 0.2, 64
    args.unroll, args.rules = "1,8", "tcb,itcb,t3c"
    args.cpu_devices, args.cpu_trials = "1,2", 64
  import numba
  dev = jax.devices()[0]
  header = (f"{dev.platform} {dev.device_kind}, jax {jax.__version__}; numba "
            f"{numba.__version__} on {numba.get_num_threads()} threads; delta {DELTA:g}, "
            f"gk16, float32; {args.trials} trials" + (" (SMOKE: not a measurement)"
                                                       if args.smoke else ""))
  print(header, flush=True)
  t_start = time.perf_counter()
  unrolls = [int(u) for u in args.unroll.split(",")]
  rows, best = [], {}
  for rule_name, instance in CASES:  # 1. steady state, each S, pool from memory
    family_name, means = INSTANCES[instance]
    lanes, limit = pool_lanes(jbai.families.get(family_name), jbai.rules.get(rule_name),
                              len(means), args.max_lanes, args.trials)
    rates = {}
    for s in unrolls:
      rates[s], compile_s = steady_rate(rule_name, instance, lanes, s, args.trials,
                                        args.seconds, args.chunk)
      print(f"  {rule_name} {instance} lanes {lanes} S {s}: {rates[s]:.3g} steps/s "
            f"(compiled in {compile_s:.1f} s)", flush=True)
    s_best = max(rates, key=rates.get)
    best[(rule_name, instance)] = (lanes, s_best)
    loop, tau_loop = loop_all_cores(rule_name, instance, args.loop_seconds)
    rows.append({"what": "steady", "rule": rule_name, "instance": instance, "lanes": lanes,
                 **{f"S={s}": r for s, r in rates.items()}, "best S": s_best,
                 "jbai": rates[s_best], "loop all cores": loop,
                 "x loop": rates[s_best] / loop,
                 "loop tau": f"{mean_ci(tau_loop)[0]:.0f} ± {mean_ci(tau_loop)[1]:.0f}"})
    write(rows, args.out, header, show=False)
  for rule_name in ("tcb", "itcb"):  # 2. whole runs, Bernoulli K = 5
    lanes, s_best = best[(rule_name, "bernoulli-5")]
    rate, tau = full_run(rule_name, "bernoulli-5", lanes, args.trials, args.chunk)
    loop_row = next(r for r in rows if r["rule"] == rule_name and
                    r["instance"] == "bernoulli-5")
    rows.append({"what": f"whole run, {args.trials} trials", "rule": rule_name,
                 "instance": "bernoulli-5", "lanes": lanes,
                 "best S": pool_lib.default_unroll(), "jbai": rate,
                 "loop all cores": loop_row["loop all cores"],
                 "x loop": rate / loop_row["loop all cores"],
                 "jbai tau": f"{mean_ci(tau)[0]:.0f} ± {mean_ci(tau)[1]:.0f}",
                 "loop tau": loop_row["loop tau"]})
    write(rows, args.out, header, show=False)
  instance = "gaussian-5"  # 3. every rule, smaller pool
  s_best, base = best[("tcb", instance)][1], None
  for rule_name in args.rules.split(","):
    row = {"what": "every rule", "rule": rule_name, "instance": instance,
           "lanes": args.rule_lanes, "best S": s_best}
    if time.perf_counter() - t_start > args.budget:
      rows.append({**row, "jbai": "skipped (time)"})
      continue
    rate, _ = steady_rate(rule_name, instance, args.rule_lanes, s_best, args.trials,
                          args.seconds / 2, args.chunk)
    base = base or rate
    rows.append({**row, "jbai": rate, "TCB / rule": base / rate})
    print(f"  {rule_name} {instance}: {rate:.3g} steps/s", flush=True)
    write(rows, args.out, header, show=False)
  # 5. the host's CPU: jbai on N CPU devices against the loop on N threads, each N in
  # a fresh process (benchmarks/cores.py), on the same trials.
  counts = [int(n) for n in args.cpu_devices.split(",") if n]
  if counts:
    import cores
    usable = jbai.host.cores.usable_cores()
    for n in [n for n in counts if n <= usable]:
      for r in cores.run(n, args.cpu_trials, ["tcb", "itcb"]):
        rows.append({"what": f"CPU, {n} devices / threads, {args.cpu_trials} trials",
                     "rule": r["rule"], "instance": "gaussian-5", "jbai": r["jbai"],
                     "loop all cores": r["loop"], "x loop": r["jbai"] / r["loop"],
                     "jbai tau": f"{r['jbai_tau']:.0f}", "loop tau": f"{r['loop_tau']:.0f}"})
        print(f"  CPU x {n}: {r['rule']} jbai {r['jbai']:.3g}, loop {r['loop']:.3g}",
              flush=True)
        write(rows, args.out, header, show=False)
  header += f"; {time.perf_counter() - t_start:.0f} s in all"
  write(rows, args.out, header)


if __name__ == "__main__":
  main()
