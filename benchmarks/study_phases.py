"""A study's fixed cost, phase by phase: what `jbai study` spends outside its trials.

Runs `jbai study` on a small spec (TCB, two Gaussian instances with K = 5, 50 trials
each, delta = 0.01) in fresh processes, each timed phase by phase, CPU seconds (every
thread) and wall seconds:

  import      `import jbai.cli` (jax, jbai; matplotlib and pandas are imported
              where they are used)
  spec        reading and checking the spec
  jobs        the jobs not yet stored: tracing the chunk programs, loading them from
              JAX's persistent cache (or compiling them), the trials, the summaries
  tables      cells.csv and trials.csv (with T*(nu) of every instance)
  figures     the figures (`jbai.studies.figures_of`: drawn, or kept when study.json
              records the same digest)

for three runs: a small study (an empty folder, the compilation cache warm from a
first run that is not shown), a warm rerun that computes nothing new, and the same
rerun with one figure deleted, which draws them all again as every rerun did before
figures were kept (the baseline; the last line prints the ratio of the two reruns'
CPU seconds outside the import).

Usage: python benchmarks/study_phases.py [--trials 50] [--repeat 2]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

SPEC = """
[study]
seed = 1
trials = {trials}
delta = 0.01

[[instances]]
family = "gaussian"
means = [1.2, 1.0, 1.0, 1.0, 1.0]

[[instances]]
family = "gaussian"
means = [1.0, 0.8, 0.6, 0.4, 0.2]

[[rules]]
name = "tcb"
"""

# Run in a fresh process: times each phase by wrapping the function that does it.
CHILD = r"""
import json, sys, time
T = {}
def timed(mod, name, label):
  f = getattr(mod, name)
  def g(*a, **k):
    c, w = time.process_time(), time.perf_counter()
    try:
      return f(*a, **k)
    finally:
      old = T.get(label, (0.0, 0.0))
      T[label] = (old[0] + time.process_time() - c, old[1] + time.perf_counter() - w)
  setattr(mod, name, g)
c0, w0 = time.process_time(), time.perf_counter()
import jbai.cli
T["import"] = (time.process_time() - c0, time.perf_counter() - w0)
import jbai.studies as studies, jbai.studies.tables as tables, jbai.studies.spec as spec
timed(spec, "load", "spec"); timed(studies, "_ensure", "jobs")
timed(tables, "tables", "tables"); timed(studies, "figures_of", "figures")
jbai.cli.main(["study", sys.argv[1], "--out", sys.argv[2], "--quiet"])
T["total"] = (time.process_time(), time.perf_counter() - w0)
print(json.dumps(T))
"""

PHASES = ["import", "spec", "jobs", "tables", "figures", "total"]


def phases(spec: str, out: str) -> dict:
  """{phase: (CPU s, wall s)} of one `jbai study` in a fresh process."""
  done = subprocess.run([sys.executable, "-c", CHILD, spec, out], check=True,
                        capture_output=True, text=True)
  return {k: tuple(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def show(label: str, t: dict) -> None:
  cells = "".join(f"{t.get(p, (0.0, 0.0))[0]:6.2f} / {t.get(p, (0.0, 0.0))[1]:5.2f}  "
                  for p in PHASES)
  print(f"{label:<28} {cells}", flush=True)


def outside(t: dict) -> float:
  """CPU seconds outside the import and the jobs."""
  return t["total"][0] - t["import"][0] - t.get("jobs", (0.0, 0.0))[0]


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=50)
  parser.add_argument("--repeat", type=int, default=2, help="rounds of the three runs")
  args = parser.parse_args()
  tmp = tempfile.mkdtemp(prefix="jbai-study-phases-")
  try:
    spec = os.path.join(tmp, "small.toml")
    with open(spec, "w", encoding="utf-8") as f:
      f.write(SPEC.format(trials=args.trials))
    phases(spec, os.path.join(tmp, "warmup"))  # the compilation cache, warm
    print(f"{'run (CPU s / wall s)':<28} " + "".join(f"{p:>15}" for p in PHASES))
    for r in range(args.repeat):
      out = os.path.join(tmp, f"out-{r}")
      show("small study", phases(spec, out))
      kept = phases(spec, out)
      show("warm rerun, figures kept", kept)
      os.remove(os.path.join(out, "tau_box.png"))
      redrawn = phases(spec, out)
      show("warm rerun, figures redrawn", redrawn)
      print(f"  outside import and jobs, CPU: kept {outside(kept):.2f} s, redrawn "
            f"{outside(redrawn):.2f} s, ratio {outside(redrawn) / outside(kept):.1f}")
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
