"""The `jbai` command line: run, oracle, rules, reproduce.

Bad input (a malformed list, an unknown rule, family or threshold, delta not in
(0, 1), a tie for the best arm, a mean outside Theta, a rule or threshold that
does not apply to the family) prints one line naming the value and exits with 2.
A refused (rule, family, threshold) combination is answered with options that
work. Negative numbers are values, not options: `--means -1,0,1`, `--lo -5`.

`jbai run` takes comma-separated lists for --rule, --threshold, --delta, --beta
and --eps and runs every combination on the same instance with the same key
(common random numbers), one trajectory per trial for all the deltas, one
compiled program for all the values of a runtime parameter (beta, eps). With
--out, finished trials are appended to `<out>.partial.jsonl` as they come:
Ctrl-C prints the summary of the finished trials, and the same command resumes.
"""

import argparse
import functools
import hashlib
import inspect
import json
import math
import os
import re
import sys
import time
from typing import NamedTuple, Optional

DEFAULT_RUN = {"family": "gaussian", "means": "1.2,1,1,1,1", "rule": "itcb",
               "delta": "1e-8", "trials": 1000, "threshold": "gk16"}
EXIT_INTERRUPTED = 130
Z95 = 1.959964  # two-sided 95% normal quantile

# Alternatives suggested when a rule does not apply to a family, in this order.
PREFERRED_RULES = ("ebtci", "ebtc", "itcb", "tcb")

INTERRUPTED_NOTE = (
    "interrupted: this summary covers only the trials that finished, and is "
    "biased towards short trials (the longest had not stopped yet)")


class UsageError(ValueError):
  """A command line that argparse cannot read (reported in one line, exit 2)."""


class Parser(argparse.ArgumentParser):
  """argparse with one-line errors, and negative numbers read as values.

  argparse takes a token such as `-1,0,1` for an option; `parse_known_args`
  first joins every `--option -1...` pair into `--option=-1...`, for every
  subcommand.
  """

  def parse_known_args(self, args=None, namespace=None):
    args = sys.argv[1:] if args is None else list(args)
    return super().parse_known_args(join_negative_values(args), namespace)

  def error(self, message):
    raise UsageError(f"{message} (see `{self.prog} --help`)")


_NEGATIVE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def join_negative_values(argv: list) -> list:
  """`--opt -1,0` -> `--opt=-1,0`: a token that starts like a negative number
  after a long option without '=' is that option's value.

  Example:
    >>> join_negative_values(["run", "--means", "-1,0,1", "--lo", "-5", "--json"])
    ['run', '--means=-1,0,1', '--lo=-5', '--json']
  """
  out, i = [], 0
  while i < len(argv):
    token = argv[i]
    if token == "--":
      return out + argv[i:]
    if (token.startswith("--") and "=" not in token and i + 1 < len(argv) and
        _NEGATIVE.match(argv[i + 1])):
      out.append(f"{token}={argv[i + 1]}")
      i += 2
    else:
      out.append(token)
      i += 1
  return out


# ---------------------------------------------------------------- value types

def _entries(text: str) -> list:
  """Comma-separated entries of `text`, stripped; raises on an empty one."""
  parts = [p.strip() for p in str(text).split(",")]
  if not any(parts):
    raise argparse.ArgumentTypeError(f"{text!r} is empty; give comma-separated values")
  for i, p in enumerate(parts):
    if not p:
      raise argparse.ArgumentTypeError(
          f"{text!r} has an empty entry (entry {i + 1} of {len(parts)})")
  return parts


def _float(entry: str, text: str) -> float:
  try:
    return float(entry)
  except ValueError:
    where = "" if entry == text.strip() else f" in {text!r}"
    raise argparse.ArgumentTypeError(f"{entry!r}{where} is not a number") from None


def number_list(text: str) -> list:
  """'1.2,-1,1e-3' -> [1.2, -1.0, 0.001]; one line naming the bad text otherwise."""
  return [_float(p, text) for p in _entries(text)]


def number(text: str) -> float:
  """One number (a list of one)."""
  values = number_list(text)
  if len(values) != 1:
    raise argparse.ArgumentTypeError(f"{text!r}: expected one number")
  return values[0]


def count(text: str) -> int:
  """A whole number; 1e6 is accepted."""
  value = number(text)
  if not (math.isfinite(value) and value == int(value)):
    raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
  return int(value)


def name_list(text: str) -> list:
  """'tcb,itcb' -> ['tcb', 'itcb'] (repeats dropped)."""
  return list(dict.fromkeys(_entries(text)))


# ---------------------------------------------------------------- options

def add_family_args(p):
  """--family, --means and the family's parameters."""
  p.add_argument("--family", default=DEFAULT_RUN["family"], help="reward family")
  p.add_argument("--means", type=number_list, default=DEFAULT_RUN["means"],
                 help="comma-separated arm means, e.g. -1,0,1")
  p.add_argument("--sigma", type=number, default=None, help="Gaussian standard deviation")
  p.add_argument("--shape", type=number, default=None, help="Weibull shape k")
  p.add_argument("--lo", type=number, default=None, help="lower end of Theta")
  p.add_argument("--hi", type=number, default=None, help="upper end of Theta")


def add_rule_args(p):
  """--rule, --threshold and the rules' runtime parameters, each a list."""
  p.add_argument("--rule", type=name_list, default=DEFAULT_RUN["rule"],
                 help="sampling rule(s), comma-separated: compared side by side "
                 "(see `jbai rules`)")
  p.add_argument("--threshold", type=name_list, default=DEFAULT_RUN["threshold"],
                 help="stopping threshold(s): gk16, kk, paper")
  p.add_argument("--beta", type=number_list, default=None,
                 help="top-two parameter(s) beta, e.g. 0.3,0.5 (one compiled program)")
  p.add_argument("--eps", type=number_list, default=None,
                 help="TCB/ITCB look-ahead(s) r_t = eps/t")


def add_run_args(p):
  """--delta, --trials, --seed, --max-steps, --chunk."""
  p.add_argument("--delta", type=number_list, default=DEFAULT_RUN["delta"],
                 help="confidence level(s), e.g. 1e-2,1e-8: one trajectory per trial "
                 "for all of them")
  p.add_argument("--trials", type=count, default=DEFAULT_RUN["trials"],
                 help="trials per rule (1e4 accepted)")
  p.add_argument("--seed", type=count, default=0, help="PRNG seed, the same for every rule")
  p.add_argument("--max-steps", type=count, default=1_000_000,
                 help="cap on the length of a trial")
  p.add_argument("--chunk", type=count, default=2048,
                 help="steps between progress reports and saves of finished trials")


def add_output_args(p):
  """--json, --out, --progress."""
  p.add_argument("--json", action="store_true",
                 help="print JSON: one object for one rule and one delta, else a list")
  p.add_argument("--out", default=None,
                 help="also write the JSON here, the per-trial arrays as .npz, and "
                 "finished trials as they come (to resume after Ctrl-C)")
  p.add_argument("--progress", action="store_true", help="show progress even when not a tty")


# ---------------------------------------------------------------- building blocks

def family_from_args(args):
  """Builds the family from --family and its parameter options."""
  from jbai import families
  params = {"sigma": args.sigma, "lo": args.lo, "hi": args.hi,
            "shape": getattr(args, "shape", None)}
  if args.family not in families.BUILTIN:
    raise ValueError(f"unknown family {args.family!r}; choose from {sorted(families.BUILTIN)}")
  accepted = inspect.signature(families.BUILTIN[args.family]).parameters
  for name, value in params.items():
    if value is not None and name not in accepted:
      raise ValueError(f"family {args.family!r} takes no parameter --{name}")
  return families.get(args.family, **{k: v for k, v in params.items() if v is not None})


_RULE_HINT = re.compile(r";\s*use\b.*$")


@functools.lru_cache(maxsize=256)
def rule_refusal(family, rule) -> Optional[str]:
  """Why `rule` does not apply to `family` (None when it does), found by tracing
  its `select` on abstract values (no compilation): a rule refuses a family with
  a ValueError when it is traced. The rule's own advice is dropped (the caller
  suggests options checked against the whole command)."""
  import jax
  from jbai.state import empty_stats
  num_arms = 3
  try:
    jax.eval_shape(lambda key: rule.select(key, family, empty_stats(family, num_arms),
                                           rule.init(num_arms)), jax.random.key(0))
  except ValueError as e:
    return _RULE_HINT.sub("", str(e).splitlines()[0])
  return None


class Run(NamedTuple):
  """One row group of a comparison: a rule and a threshold (every delta)."""

  label: str   # the rule's name, or its repr when a name appears twice
  rule: object
  threshold: object
  key: str = ""  # identifies the run's finished trials in a TrialLog


def make_rule(name: str, beta=None, eps=None):
  from jbai import rules
  return rules.get(name, beta=beta, eps=eps)


def plan_runs(args, family) -> list:
  """The runs of --rule x --threshold x --beta x --eps (repeats dropped), after
  checking that every rule and threshold applies to the family.

  Raises:
    ValueError: one line naming each rule and threshold that does not apply,
      and the --rule / --threshold values that would (each checked).
  """
  from jbai import thresholds
  thr_objs = [thresholds.get(t) for t in args.threshold]
  betas, epss = args.beta or [None], args.eps or [None]
  rule_objs = {}
  for name in args.rule:
    for b in betas:
      for e in epss:
        rule = make_rule(name, b, e)
        rule_objs.setdefault(repr(rule), (name, rule))
  check_combinations(family, args.rule, args.threshold, betas, epss)
  names = [n for n, _ in rule_objs.values()]
  runs = []
  for name, rule in rule_objs.values():
    label = name if names.count(name) == 1 else repr(rule)
    for thr in thr_objs:
      runs.append(Run(label, rule, thr))
  return runs


def _refused_rules(family, rule_names, betas, epss) -> dict:
  out = {}
  for name in rule_names:
    for b in betas:
      for e in epss:
        reason = rule_refusal(family, make_rule(name, b, e))
        if reason:
          out.setdefault(name, reason)
  return out


def _refused_thresholds(family, threshold_names) -> dict:
  from jbai import thresholds
  out = {}
  for name in threshold_names:
    reason = thresholds.refusal(thresholds.get(name), family)
    if reason:
      out[name] = reason
  return out


def check_combinations(family, rule_names, threshold_names, betas=(None,),
                       epss=(None,)) -> None:
  """Raises ValueError when a rule or a threshold does not apply to the family.

  The message gives the reasons, then `use --rule ... --threshold ...`: each
  refused name replaced by the first that applies (thresholds: kk, paper, gk16;
  rules: ebtci, ebtc, itcb, tcb, then the others), with the same beta and eps.
  Rules and thresholds are refused independently (a rule by the family, a
  threshold by the family), so the suggested values run together.
  """
  from jbai import rules, thresholds
  bad_rules = _refused_rules(family, rule_names, betas, epss)
  bad_thr = _refused_thresholds(family, threshold_names)
  if not bad_rules and not bad_thr:
    return
  fixes = []
  if bad_rules:
    order = list(PREFERRED_RULES) + [r for r in rules.RULES if r not in PREFERRED_RULES]
    good = [r for r in order if r not in bad_rules and
            not _refused_rules(family, [r], betas, epss)]
    fixes.append("--rule " + _replace(rule_names, bad_rules, good))
  if bad_thr:
    good = [t for t in thresholds.PREFERRED if t not in bad_thr and
            not _refused_thresholds(family, [t])]
    fixes.append("--threshold " + _replace(threshold_names, bad_thr, good))
  reasons = list(bad_rules.values()) + list(bad_thr.values())
  raise ValueError("; ".join(reasons) + "; use " + " ".join(fixes))


def _replace(names: list, bad: dict, good: list) -> str:
  """`names` with each bad entry replaced by the first good name not yet used."""
  out = []
  spare = [g for g in good if g not in names]
  for n in names:
    if n not in bad:
      out.append(n)
    elif spare:
      out.append(spare.pop(0))
  return ",".join(dict.fromkeys(out))


# ---------------------------------------------------------------- finished trials

class TrialLog:
  """Finished trials of every run of a command, kept in memory and, with a path,
  appended to a JSON-lines file as they come.

  Lines: {"run": key, "spec": {...}} once per run, then {"run": key, "index":
  [...], "tau": [[...]], "answer": [[...]], "counts": [[...]], "steps": [...]}
  per chunk (the engine's `on_chunk` records). A line is written whole and
  flushed, so a kill leaves at most a truncated last line, which loading drops.
  """

  FIELDS = ("index", "tau", "answer", "counts", "steps")

  def __init__(self, path: Optional[str], specs: dict):
    self.path, self.specs = path, specs
    self.chunks = {key: [] for key in specs}
    self.loaded = 0
    if path and os.path.exists(path):
      self._load()

  def _load(self):
    import numpy as np
    with open(self.path, "rb") as f:
      data = f.read()
    end = data.rfind(b"\n") + 1  # a truncated last line is dropped
    if end < len(data):
      with open(self.path, "r+b") as f:
        f.truncate(end)
    for line in data[:end].decode().splitlines():
      row = json.loads(line)
      key = row["run"]
      if key not in self.specs:
        spec = row.get("spec", {})
        raise ValueError(
            f"{self.path} holds finished trials of another command "
            f"({spec.get('rule', '?')}, {spec.get('threshold', '?')}, "
            f"trials={spec.get('trials', '?')}, seed={spec.get('seed', '?')}); "
            f"rerun that command to resume it, or delete {self.path}")
      if "index" in row:
        self.chunks[key].append({k: np.asarray(row[k], np.int64) for k in self.FIELDS})
        self.loaded += len(row["index"])

  def _append(self, row: dict):
    if self.path:
      with open(self.path, "a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()

  def done(self, key: str):
    """The finished trials of a run (the engine's `done=` layout), or None."""
    import numpy as np
    chunks = self.chunks[key]
    if not chunks:
      return None
    out = {k: np.concatenate([c[k] for c in chunks]) for k in self.FIELDS}
    _, first = np.unique(out["index"], return_index=True)
    return {k: v[first] for k, v in out.items()}

  def saver(self, key: str):
    """The `on_chunk` callback of a run."""
    import numpy as np
    if self.path and not self.chunks[key]:
      self._append({"run": key, "spec": self.specs[key]})

    def on_chunk(records):
      if len(records["index"]) == 0:
        return
      row = {k: np.asarray(records[k]).tolist() for k in self.FIELDS}
      self._append({"run": key, **row})
      self.chunks[key].append({k: np.asarray(records[k], np.int64) for k in self.FIELDS})

    return on_chunk

  def count(self) -> int:
    """Finished trials held, over every run."""
    return sum(len(c["index"]) for chunks in self.chunks.values() for c in chunks)

  def remove(self):
    if self.path and os.path.exists(self.path):
      os.remove(self.path)


def partial_path(out: str) -> str:
  """Where `jbai run --out OUT` keeps finished trials until the run completes."""
  return os.path.splitext(out)[0] + ".partial.jsonl"


def run_spec(args, family, means, deltas, run: Run) -> dict:
  import jax.numpy as jnp
  return {"family": repr(family), "means": list(means), "rule": repr(run.rule),
          "threshold": repr(run.threshold), "delta": [float(d) for d in deltas],
          "trials": args.trials, "seed": args.seed, "max_steps": args.max_steps,
          "dtype": str(jnp.zeros(()).dtype)}


def spec_key(spec: dict) -> str:
  return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


# ---------------------------------------------------------------- summaries

def run_summary(res, d: int = 0) -> dict:
  """The JSON record of one delta of a complete run."""
  out = dict(res.summary[d])
  out.update({k: res.stats[k] for k in ("wall_seconds", "compile_seconds", "utilisation",
                                        "useful_steps", "rule", "family", "threshold")})
  out["steps_per_second"] = (res.stats["timed_useful_steps"] / res.stats["wall_seconds"]
                             if res.stats["wall_seconds"] > 0 else None)
  out["complete"] = True
  return out


def partial_summaries(family, means, deltas, done: dict, run: Run, n_trials: int) -> list:
  """Records of the finished trials of an interrupted run (biased towards short
  trials: see INTERRUPTED_NOTE), one per delta, from the engine's raw records
  (tau = 0 where a level never crossed: the trial hit the cap)."""
  import numpy as np
  from jbai import engine
  flat = engine._finish(np, done, np.asarray([means]), len(done["index"]))
  tau, correct, hit_cap = flat["tau"], flat["correct"], flat["hit_cap"]
  optimum = engine.optimal(family, means)
  out = []
  for d, delta in enumerate(deltas):
    s = engine.summarize(family, means, delta, tau[:, d], correct[:, d], hit_cap[:, d],
                         optimum=optimum)
    s.update({"rule": repr(run.rule), "family": repr(family),
              "threshold": repr(run.threshold), "steps_per_second": None,
              "complete": False, "trials_requested": n_trials})
    out.append(s)
  return out


def _fmt(x, spec: str, missing: str = "-") -> str:
  return missing if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def print_single(rec: dict, means, max_steps: int):
  """The vertical table of one rule at one delta."""
  lo, hi = rec["tau_ci95"]
  elo, ehi = rec["error_ci95"]
  rows = [("rule", rec["rule"]), ("family", rec["family"]), ("means", means),
          ("threshold", rec["threshold"]), ("delta", f"{rec['delta']:g}"),
          ("trials", rec["trials"] if rec["complete"] else
           f"{rec['trials']} finished of {rec['trials_requested']}"),
          ("mean tau", f"{rec['mean_tau']:.1f}  (95% CI {lo:.1f} .. {hi:.1f})"),
          ("median / max tau", f"{rec['median_tau']:.0f} / {rec['max_tau']}"),
          ("error rate", f"{rec['error_rate']:.4f}  (Wilson 95% CI {elo:.4f} .. {ehi:.4f})"),
          ("trials at the cap", f"{rec['hit_cap']}  (max_steps = {max_steps})"),
          ("T*(nu)", f"{rec['t_star']:.2f}"),
          ("T*(nu) log(1/delta)", f"{rec['t_star_log']:.1f}"),
          ("E[tau] / T* log(1/delta)", f"{rec['ratio']:.3f}"),
          ("w(nu)", "[" + ", ".join(f"{x:.4f}" for x in rec["w_star"]) + "]")]
  if rec["complete"]:
    rows += [("compile / run seconds",
              f"{rec['compile_seconds']:.2f} / {rec['wall_seconds']:.2f}"),
             ("trial-steps per second", _fmt(rec["steps_per_second"], ".3g")),
             ("lane utilisation", f"{rec['utilisation']:.3f}")]
  for k, v in rows:
    print(f"{k:<26} {v}")


def print_table(records: list, labels: list, means, args):
  """One row per (rule, threshold, delta); constant columns go to the header."""
  first = records[0]
  thresholds = list(dict.fromkeys(r["threshold"] for r in records))
  deltas = list(dict.fromkeys(r["delta"] for r in records))
  print(f"family      {first['family']}")
  print(f"means       {means}")
  if len(thresholds) == 1:
    print(f"threshold   {thresholds[0]}")
  if len(deltas) == 1:
    print(f"delta       {deltas[0]:g}")
  print(f"trials      {args.trials} per rule, seed {args.seed}, the same key for every "
        f"rule (common random numbers), max_steps {args.max_steps}")
  print(f"T*(nu)      {first['t_star']:.4g}   w(nu) = ["
        + ", ".join(f"{x:.4f}" for x in first["w_star"]) + "]")
  print("ratio       E[tau] / (T*(nu) log(1/delta)); 95% CIs: normal for the mean tau, "
        "Wilson for the error rate")
  print()
  head = ["rule"] + (["threshold"] if len(thresholds) > 1 else []) + \
         (["delta"] if len(deltas) > 1 else []) + \
         ["mean tau (95% CI)", "error rate (95% CI)", "at cap", "ratio", "steps/s"]
  rows = []
  for label, r in zip(labels, records):
    lo, hi = r["tau_ci95"]
    elo, ehi = r["error_ci95"]
    row = [label + ("" if r["complete"] else "*")]
    if len(thresholds) > 1:
      row.append(r["threshold"])
    if len(deltas) > 1:
      row.append(f"{r['delta']:g}")
    row += [f"{r['mean_tau']:.1f} ({_fmt(lo, '.1f')} .. {_fmt(hi, '.1f')})",
            f"{r['error_rate']:.4f} ({elo:.4f} .. {ehi:.4f})",
            str(r["hit_cap"]), f"{r['ratio']:.3f}", _fmt(r["steps_per_second"], ".3g")]
    rows.append(row)
  widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
  left = 1 + (len(thresholds) > 1) + (len(deltas) > 1)
  for row in [head] + rows:
    cells = [str(x).ljust(w) if i < left else str(x).rjust(w)
             for i, (x, w) in enumerate(zip(row, widths))]
    print("  ".join(cells).rstrip())
  for label, r in dict(zip(labels, records)).items():
    if not r["complete"]:
      print(f"* {label}: interrupted, {r['trials']} of {r['trials_requested']} trials "
            "finished")


# ---------------------------------------------------------------- commands

def cmd_oracle(args) -> int:
  import jax
  jax.config.update("jax_enable_x64", True)
  import numpy as np
  from jbai import engine, oracle
  family = family_from_args(args)
  means = args.means
  deltas = [float(d) for d in engine.check_delta(args.delta)]
  w, gam, info = oracle.optimal_allocation(family, np.asarray(means), method=args.method)
  w = [float(x) for x in np.asarray(w)]
  gam = float(gam)
  logs = [math.log(1 / d) / gam for d in deltas]
  single = len(deltas) == 1
  out = {"family": repr(family), "means": means, "w": w, "gamma": gam,
         "t_star": 1 / gam, "delta": deltas[0] if single else deltas,
         "t_star_log": logs[0] if single else logs, "method": args.method}
  if args.json:
    print(json.dumps(out))
    return 0
  print(f"family  {family!r}")
  print(f"{'arm':>4} {'mean':>12} {'w(nu)':>10}")
  for i, (m, x) in enumerate(zip(means, w)):
    print(f"{i:>4} {m:>12.6g} {x:>10.6f}")
  print(f"Gamma(nu)              {gam:.6g}")
  print(f"T*(nu) = 1/Gamma       {1 / gam:.6g}")
  for d, v in zip(deltas, logs):
    print(f"T*(nu) log(1/delta)    {v:.6g}   (delta = {d:g})")
  return 0


class Progress:
  """A one-line text progress bar on stderr (silent when stderr is not a terminal
  unless forced)."""

  def __init__(self, label: str, enabled: bool):
    self.label, self.enabled, self.start = label, enabled, time.perf_counter()
    self.open = False

  def __call__(self, done, total, *_):
    if not self.enabled:
      return
    frac = done / max(total, 1)
    bar = "#" * int(30 * frac)
    elapsed = time.perf_counter() - self.start
    sys.stderr.write(f"\r{self.label} [{bar:<30}] {done}/{total} {elapsed:6.1f}s")
    self.open = done < total
    if not self.open:
      sys.stderr.write("\n")
    sys.stderr.flush()

  def close(self):
    if self.open:
      sys.stderr.write("\n")
      self.open = False


def simulate_runs(args, family, means, deltas, runs, log: "TrialLog") -> tuple:
  """Simulates the runs in order with the same key, resuming each from the
  finished trials in `log` and saving new ones to it.

  Returns:
    ([(run, Result) of the runs that completed], interrupted), where interrupted
    is True when Ctrl-C stopped the run after the completed ones.
  """
  import jax
  from jbai import engine
  show = not args.json and (sys.stderr.isatty() or args.progress)
  delta = deltas[0] if len(deltas) == 1 else deltas
  results = []
  for i, run in enumerate(runs):
    tag = run.label if len(runs) == 1 else (
        f"{run.label} {run.threshold.name} ({i + 1}/{len(runs)})")
    progress = Progress(tag, show)
    done = log.done(run.key)
    try:
      res = engine.simulate(jax.random.key(args.seed), family, means, run.rule, delta,
                            args.trials, threshold=run.threshold,
                            max_steps=args.max_steps, chunk=args.chunk, progress=progress,
                            on_chunk=log.saver(run.key),
                            **({} if done is None else {"done": done}))
    except KeyboardInterrupt:
      progress.close()
      return results, True
    results.append((run, res))
  return results, False


def cmd_run(args) -> int:
  import numpy as np
  from jbai import engine
  from jbai.families import check_means
  family = family_from_args(args)
  means = args.means
  check_means(family, means)
  deltas = [float(d) for d in engine.check_delta(args.delta)]
  runs = plan_runs(args, family)
  specs = {}
  for i, run in enumerate(runs):
    spec = run_spec(args, family, means, deltas, run)
    runs[i] = run._replace(key=spec_key(spec))
    specs[runs[i].key] = spec
  if args.out:
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
  log = TrialLog(partial_path(args.out) if args.out else None, specs)
  if log.loaded and not args.json:
    print(f"resuming: {log.loaded} finished trial(s) read from {log.path}", file=sys.stderr)
  results, interrupted = simulate_runs(args, family, means, deltas, runs, log)

  records, labels = [], []
  for run, res in results:
    for d in range(len(deltas)):
      records.append(run_summary(res, d))
      labels.append(run.label)
  if interrupted and log.done(runs[len(results)].key) is not None:
    run = runs[len(results)]
    for rec in partial_summaries(family, np.asarray(means), deltas, log.done(run.key), run,
                                 args.trials):
      records.append(rec)
      labels.append(run.label)

  single = len(runs) == 1 and len(deltas) == 1
  payload = records[0] if single and records else records
  if args.out:
    with open(args.out, "w") as f:
      json.dump(payload, f, indent=1)
    if not interrupted:
      save_arrays(args.out, results, deltas)
      log.remove()
  if args.json:
    print(json.dumps(payload))
  elif records:
    if single:
      print_single(records[0], means, args.max_steps)
    else:
      print_table(records, labels, means, args)
    capped = sum(r["hit_cap"] for r in records)
    if capped:
      print(f"warning: {capped} trial(s) reached max_steps without stopping; "
            "they count as errors and enter mean tau at the cap")
  if interrupted:
    later = list(dict.fromkeys(run.label for run in runs[len(results) + 1:]))
    print(("" if records else "interrupted before any trial finished; ") + INTERRUPTED_NOTE
          + (f"; not started: {', '.join(later)}" if later else "")
          + (f"; {log.count()} finished trial(s) are saved in {log.path}: rerun the same "
             "command to resume" if args.out else
             "; with --out FILE the finished trials are saved and the same command resumes"),
          file=sys.stderr if args.json else sys.stdout)
    return EXIT_INTERRUPTED
  return 0


def grad_t_star_log(family, means, deltas):
  """[D, K] d(T*(nu) log(1/delta)) / d mu_i from the exact oracle's implicit
  derivatives, in float64."""
  import jax
  import jax.numpy as jnp
  import numpy as np
  from jbai import oracle
  with jax.enable_x64(True):
    t_star = lambda m: 1.0 / oracle.exact_solve(family, m)[1]
    g = np.asarray(jax.grad(t_star)(jnp.asarray(means, jnp.float64)))
    value = float(t_star(jnp.asarray(means, jnp.float64)))
  logs = np.log(1.0 / np.asarray(deltas, float))
  return logs[:, None] * g[None], value * logs


def grad_records(res, run, family, means, deltas) -> list:
  """One record per delta of a run with scores: E[tau], P(error), their
  likelihood-ratio gradients in the means (and in the rule's scored runtime
  parameters) with standard errors and 95% CIs, and the oracle's gradient of
  T*(nu) log(1/delta)."""
  import jax
  import numpy as np
  from jbai.estimate import monte_carlo
  moments = jax.tree.map(np.asarray, monte_carlo(res.tau, res.correct, res.reward_score,
                                                 res.policy_score, False))
  oracle_grad, t_star_log = grad_t_star_log(family, means, deltas)
  records = []
  for d, delta in enumerate(deltas):
    rec = {"rule": repr(run.rule), "threshold": repr(run.threshold), "delta": delta,
           "trials": int(res.tau.shape[0]), "hit_cap": int(res.hit_cap[:, d].sum()),
           "t_star_log": float(t_star_log[d]),
           "grad_t_star_log": oracle_grad[d].tolist()}
    for label, name in (("tau", "mean_tau"), ("error", "error_rate")):
      value, se, grads, ses = moments[label]
      rec[name], rec[f"{name}_se"] = float(value[d]), float(se[d])
      rec[f"{name}_ci95"] = [float(value[d] - Z95 * se[d]), float(value[d] + Z95 * se[d])]
      rec[f"grad_{name}"] = grads["means"][d].tolist()
      rec[f"grad_{name}_se"] = ses["means"][d].tolist()
      rec[f"grad_{name}_ci95"] = [[g - Z95 * e, g + Z95 * e] for g, e in
                                  zip(rec[f"grad_{name}"], rec[f"grad_{name}_se"])]
      for param in grads:
        if param != "means":
          rec.setdefault("grad_params", {}).setdefault(param, {}).update(
              {name: float(grads[param][d]), f"{name}_se": float(ses[param][d])})
    records.append(rec)
  return records


def print_grad(rec: dict, means):
  """The text report of one (rule, threshold, delta) of `jbai grad`."""
  print(f"rule {rec['rule']}, threshold {rec['threshold']}, delta {rec['delta']:g}, "
        f"{rec['trials']} trials, {rec['hit_cap']} at the cap; +- is a 95% CI")
  print(f"  E[tau]    {rec['mean_tau']:.6g} +- {Z95 * rec['mean_tau_se']:.3g}"
        f"      T*(nu) log(1/delta) {rec['t_star_log']:.6g}")
  print(f"  P(error)  {rec['error_rate']:.4g} +- {Z95 * rec['error_rate_se']:.2g}")
  print(f"  {'arm':>4} {'mean':>10} {'dE[tau]/dmu':>24} {'d(T* log 1/delta)/dmu':>22} "
        f"{'dP(error)/dmu':>22}")
  for i, m in enumerate(means):
    g = f"{rec['grad_mean_tau'][i]:.5g} +- {Z95 * rec['grad_mean_tau_se'][i]:.2g}"
    e = f"{rec['grad_error_rate'][i]:.4g} +- {Z95 * rec['grad_error_rate_se'][i]:.2g}"
    print(f"  {i:>4} {m:>10.6g} {g:>24} {rec['grad_t_star_log'][i]:>22.5g} {e:>22}")
  for param, g in rec.get("grad_params", {}).items():
    print(f"  d/d{param}: E[tau] {g['mean_tau']:.5g} +- {Z95 * g['mean_tau_se']:.2g}, "
          f"P(error) {g['error_rate']:.4g} +- {Z95 * g['error_rate_se']:.2g}")


def cmd_grad(args) -> int:
  import jax
  from jbai import engine
  from jbai.families import check_means
  family = family_from_args(args)
  means = args.means
  check_means(family, means)
  deltas = [float(d) for d in engine.check_delta(args.delta)]
  runs = plan_runs(args, family)
  show = not args.json and (sys.stderr.isatty() or args.progress)
  records = []
  for run in runs:
    res = engine.simulate(jax.random.key(args.seed), family, means, run.rule, deltas,
                          args.trials, threshold=run.threshold, max_steps=args.max_steps,
                          chunk=args.chunk, progress=Progress(run.label, show), scores=True)
    records += grad_records(res, run, family, means, deltas)
  payload = records[0] if len(records) == 1 else records
  if args.out:
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
      json.dump(payload, f, indent=1)
  if args.json:
    print(json.dumps(payload))
    return 0
  for i, rec in enumerate(records):
    if i:
      print()
    print_grad(rec, means)
  return 0


def save_arrays(out: str, results: list, deltas: list):
  """Per-trial arrays next to the JSON: one run as [trials] (or [trials, D] for
  several deltas); several runs stacked on a leading axis named by `runs`."""
  import numpy as np
  names = ("tau", "answer", "correct", "hit_cap", "counts", "steps")
  path = os.path.splitext(out)[0] + ".npz"
  if len(results) == 1:
    res = results[0][1]
    np.savez(path, delta=np.asarray(deltas), **{k: getattr(res, k) for k in names})
  else:
    np.savez(path, delta=np.asarray(deltas),
             runs=np.asarray([f"{run.label} {run.threshold!r}" for run, _ in results]),
             **{k: np.stack([getattr(res, k) for _, res in results]) for k in names})


def cmd_rules(args) -> int:
  from jbai import rules
  for name, doc, params in rules.describe():
    print(f"{name:<12} {doc}" + (f"  [{params}]" if params else ""))
  return 0


def cmd_reproduce(args) -> int:
  try:
    from jbai import reproduce
  except ImportError:
    raise ValueError("jbai reproduce is not available in this installation") from None
  return reproduce.main(args)


def build_parser() -> argparse.ArgumentParser:
  parser = Parser(prog="jbai", description="Fixed-confidence best-arm identification in JAX.")
  sub = parser.add_subparsers(dest="command")

  p = sub.add_parser("run", help="simulate BAI algorithms (the main job)")
  add_family_args(p)
  add_rule_args(p)
  add_run_args(p)
  add_output_args(p)
  p.set_defaults(func=cmd_run)

  p = sub.add_parser("grad", help="E[tau] and P(error) with their gradients in the means "
                     "(likelihood ratio), next to the gradient of T*(nu) log(1/delta)")
  add_family_args(p)
  add_rule_args(p)
  add_run_args(p)
  p.add_argument("--json", action="store_true",
                 help="print JSON: one object for one rule and one delta, else a list")
  p.add_argument("--out", default=None, help="also write the JSON here")
  p.add_argument("--progress", action="store_true", help="show progress even when not a tty")
  p.set_defaults(func=cmd_grad)

  p = sub.add_parser("oracle", help="optimal allocation w(nu) and complexity Gamma(nu)")
  add_family_args(p)
  p.add_argument("--delta", type=number_list, default=DEFAULT_RUN["delta"])
  p.add_argument("--method", default="exact", choices=["exact", "optax"])
  p.add_argument("--json", action="store_true")
  p.set_defaults(func=cmd_oracle)

  p = sub.add_parser("rules", help="list the sampling rules")
  p.set_defaults(func=cmd_rules)

  p = sub.add_parser("reproduce", help="reproduce the paper's numerical section")
  p.add_argument("--scale", default="smoke", choices=["smoke", "paper"])
  p.add_argument("--only", default=None, help="run only this experiment")
  p.add_argument("--out", default="results", help="output folder")
  p.set_defaults(func=cmd_reproduce)
  parser.set_defaults(commands=tuple(sub.choices))
  return parser


def main(argv=None) -> int:
  """Runs the command line; returns the exit code (2: bad input, 130: Ctrl-C)."""
  parser = build_parser()
  argv = sys.argv[1:] if argv is None else list(argv)
  commands = parser.get_default("commands")
  try:
    if argv and argv[0] not in commands and not argv[0].startswith("-"):
      raise UsageError(f"unknown command {argv[0]!r}; choose from {list(commands)}")
    if not argv or argv[0] not in commands + ("-h", "--help"):
      argv = ["run"] + argv  # `jbai` and `jbai --rule tcb` mean `jbai run ...`
    args = parser.parse_args(argv)
    return args.func(args)
  except SystemExit as e:  # --help
    return e.code if isinstance(e.code, int) else 0
  except KeyboardInterrupt:
    print("jbai: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED
  except ValueError as e:
    message = str(e).splitlines()[0] if str(e) else repr(e)
    print(f"jbai: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())
