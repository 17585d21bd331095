"""The `jbai` command line: run, grad, oracle, rules, reproduce, study, plot.

Bad input (a malformed list, an unknown rule, family or threshold, delta not in
(0, 1), a tie for the best arm in float64 or in the simulation's float dtype, a
mean outside Theta, a rule or threshold that does not apply to the family, a
count that is not a whole number, a seed outside [0, 2^63), --beta or --eps for
rules that take none, an --out that cannot be written, a run whose results would
not fit in memory) prints one line naming the value and exits with 2, before
anything runs (`jbai.core.inputs` holds the checks the API shares). A refused
(rule, family, threshold) combination is answered with options that work.
Negative numbers are values, not options: `--means -1,0,1`, `--lo -5`. --delta
keeps the text typed, so a level at any magnitude runs (`--delta 1e-400`: the
thresholds take log(1/delta)).

`jbai run` takes comma-separated lists for --rule, --threshold, --delta, --beta
and --eps and runs every combination on the same instance with the same key
(common random numbers), one trajectory per trial for all the deltas, one
compiled program for all the values of a runtime parameter (beta, eps). With
--out, finished trials are appended to `<out>.partial.jsonl` as they come, each
line with a checksum (the first also marks the file's format): Ctrl-C prints the
summary of the finished trials and exits with 130 (a second Ctrl-C, while it
shuts down, as quietly), and the same command resumes; a damaged line is refused
naming the file and the line, and --repair drops it and the lines after it and
runs their trials again. The
summary and the arrays have distinct names (OUT and OUT's stem + .npz; for an
OUT ending in .npz, the summary goes to OUT's stem + .json).

Without --rule, each question (the best arm, --eps-good, --top, --above) runs its
own rule, at a fixed confidence or at --budget: one table, `args.QUESTIONS`, which
--help shows with the reasons. Ctrl-C at any moment ends a command with exit 130
and one line, what finished saved (`interrupts`).

  args.py    reading the command line: the parser, number and name lists, the
             default rule of each question
  plan.py    the family, the deltas and the runs; refusals with suggestions
  trials.py  the finished trials of `jbai run --out`, to resume
  interrupts.py  Ctrl-C: exit 130 and one line, whenever it comes
  run.py     `jbai run`
  grad.py    `jbai grad`
  oracle.py  `jbai oracle`
  render.py  what the commands print
"""

import argparse
import os
import sys

from jbai.cli.args import (DEFAULT_RUN, QUESTIONS, Parser, UsageError, add_budget_args,
                           add_device_args, add_distributed_args, add_family_args,
                           add_output_args, add_question_args, add_rule_args, add_run_args, count,
                           delta_list, fill_defaults, join_negative_values, name_list,
                           number, number_list, path_name, positive_count)
from jbai.cli.grad import add_grad_args, cmd_grad, grad_records
from jbai.cli.oracle import cmd_oracle
from jbai.cli.plan import (Plan, Run, check_combinations, family_from_args, plan_command,
                           plan_runs, rule_refusal)
from jbai.cli import interrupts
from jbai.cli.interrupts import EXIT_INTERRUPTED, quiet_after_first_interrupt
from jbai.cli.run import cmd_run
from jbai.cli.trials import TrialLog


def cmd_rules(args) -> int:
  """`jbai rules`: one line per sampling rule."""
  from jbai.rules import ALL, RULES, describe
  for name, doc, params in describe():
    if name not in RULES:  # built for another question's parameters (--above LEVEL)
      rule = ALL[name](**({"m": 1} if params.startswith("m") else {"level": 0.5}))
      own = getattr(rule, "stop", None)
      print(f"{name:<12} {doc}  [{params}]  stop: {'gllr' if own is None else own.name} "
            "of its question")
      continue
    rule = RULES[name]()
    own = getattr(rule, "stop", None)  # the rule's own stop, else the GLLR
    stop = f"  stop: {'gllr' if own is None else own.name}"
    if rule.budget is not None:
      stop = "  no stop: runs to a budget (--budget)"
    print(f"{name:<12} {doc}" + (f"  [{params}]" if params else "") + stop)
  return 0


def cmd_reproduce(args) -> int:
  """`jbai reproduce`: see `jbai.reproduce.main`."""
  try:
    from jbai.reproduce import main as reproduce_main
  except ImportError:
    raise ValueError("jbai reproduce is not available in this installation") from None
  return reproduce_main(args)


def cmd_study(args) -> int:
  """`jbai study`: see `jbai.studies`; under jax.distributed (--coordinator,
  --distributed), `jbai.studies.distributed`."""
  from jbai.studies import cmd_study as study, distributed
  where = distributed.coordinates(args.coordinator, args.num_processes, args.process_id,
                                  args.timeout, args.distributed, args.shard)
  if where is None:
    return study(args)
  return distributed.cmd_distributed(args, where)


def cmd_plot(args) -> int:
  """`jbai plot`: see `jbai.studies`."""
  from jbai.studies import cmd_plot as plot
  return plot(args)


def defaults_epilog(questions=tuple(QUESTIONS)) -> str:
  """The default rule of each of `questions` and why (`jbai.cli.args.QUESTIONS`)."""
  import textwrap
  lines = ["without --rule, each question runs its own rule:"]
  for name in questions:
    q = QUESTIONS[name]
    text = f"{name}: {q.confidence}, at a budget {q.budget}. {q.why}."
    lines += textwrap.wrap(text, 78, initial_indent="  ", subsequent_indent="    ")
  return "\n".join(lines)


def question_rules() -> tuple:
  """The help's note on the rules of --top and --above (their defaults)."""
  top, above = QUESTIONS["top-m"], QUESTIONS["above"]
  return (f"default rule {top.confidence}; others: `jbai rules`",
          f"default rule {above.confidence}, {above.budget} at a budget; others: `jbai rules`")


def build_parser() -> argparse.ArgumentParser:
  """The parser of every subcommand (`commands`, a default, lists their names)."""
  parser = Parser(prog="jbai", description="Pure-exploration bandits in JAX: the best arm, "
                  "an eps-good arm, the top m arms or the arms above a level, at a fixed "
                  "confidence or a fixed budget. `jbai` alone is `jbai run`.")
  sub = parser.add_subparsers(dest="command")

  p = sub.add_parser("run", help="simulate BAI algorithms (the main job)",
                     epilog=defaults_epilog(),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
  for add in (add_family_args, add_rule_args, add_run_args, add_budget_args, add_device_args):
    add(p)
  add_output_args(p, "also write the JSON here, the per-trial arrays next to it as "
                  ".npz (OUT.npz names the arrays, the JSON going to OUT.json), and "
                  "finished trials as they come to OUT.partial.jsonl (to resume after "
                  "Ctrl-C); checked writable before anything runs")
  p.add_argument("--repair", action="store_true",
                 help="resume past a damaged line of the finished-trial file: drop it and "
                 "the lines after it, and run their trials again")
  p.add_argument("--eps-good", type=number, default=None, metavar="EPS",
                 help="eps-good answers: stop with the eps-GLLR against --threshold and "
                 "count an answer as an error when mu_answer < max mu - EPS (rules that "
                 "stop with the GLLR; see docs/guide/stops.md); with --budget, the "
                 "recommendation at the budget is an error when not eps-good")
  add_question_args(p, "{}: stop with its GLLR against --threshold, answers are sets "
                    "({})", question_rules())
  p.set_defaults(func=cmd_run)

  p = sub.add_parser("grad", help="E[tau] and P(error) with their gradients in the means "
                     "(likelihood ratio), next to the gradient of T*(nu) log(1/delta); with "
                     "--budget, P(error) and the simple regret at a fixed budget",
                     epilog=defaults_epilog(("best arm", "top-m", "above")),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
  for add in (add_family_args, add_rule_args, add_run_args, add_grad_args, add_device_args):
    add(p)
  add_budget_args(p, checkpoints=False)
  add_question_args(p, "{}: E[tau] to its GLLR stop against --threshold, P(error) of a "
                    "wrong answer set, next to the gradient of its T*(nu) log(1/delta); with "
                    "--budget, of its empirical answer ({})", question_rules())
  add_output_args(p, "also write the JSON here")
  p.set_defaults(func=cmd_grad)

  p = sub.add_parser("oracle", help="optimal allocation w(nu) and complexity Gamma(nu)")
  add_family_args(p)
  p.add_argument("--delta", type=delta_list, default=DEFAULT_RUN["delta"])
  p.add_argument("--method", default="exact", choices=["exact", "optax"])
  p.add_argument("--eps-good", type=number, default=None, metavar="EPS",
                 help="the eps-good oracle: T*_eps(nu), w*_eps(nu) and the answer for "
                 "eps-good answers, mu_answer >= max mu - EPS (Garivier & Kaufmann 2021; "
                 "exact method only)")
  add_question_args(p, "the oracle of {} ({})", ("jbai.problems.top_m",
                                                 "closed form, jbai.problems.above"))
  p.add_argument("--budget", action="store_true",
                 help="also the fixed budget's oracle: the static allocation w_FB(nu) "
                 "of largest rate Gamma_FB(nu), P(error at T) ~ exp(-T Gamma_FB) (Glynn "
                 "& Juneja 2004; the KL reversed)")
  p.add_argument("--json", action="store_true")
  add_device_args(p)
  p.set_defaults(func=cmd_oracle)

  p = sub.add_parser("rules", help="list the sampling rules")
  p.set_defaults(func=cmd_rules)

  p = sub.add_parser("reproduce", help="reproduce the paper's numerical section")
  p.add_argument("--scale", default="smoke", choices=["smoke", "paper"])
  p.add_argument("--only", default=None, help="run only this experiment")
  p.add_argument("--out", type=path_name, default="results", help="output folder")
  add_device_args(p)
  p.set_defaults(func=cmd_reproduce)

  from jbai.studies.spec import shipped
  p = sub.add_parser("study", help="run a study from a TOML spec: instance sets, rule "
                     "sweeps, tidy tables and figures (docs/guide/study.md)")
  p.add_argument("spec", type=path_name,
                 help="the study's TOML file (an existing file is always read as one), or "
                 f"the name of a study shipped with jbai: {', '.join(shipped())}")
  p.add_argument("--out", type=path_name, required=True,
                 help="output folder (a rerun resumes it)")
  p.add_argument("--quiet", action="store_true", help="no progress lines")
  add_device_args(p)
  p.add_argument("--processes", type=positive_count, default=1, metavar="N",
                 help="run each job's trials in N worker processes, each on one core with "
                 "one CPU device, in place of this process's devices (default 1; results "
                 "do not depend on it)")
  p.add_argument("--shard", default=None, metavar="I/N",
                 help="run only the I-th of N parts of the jobs (from 0), into files of its "
                 "own, and write no tables; `slurm`: I and N of a Slurm job array. Then "
                 "`jbai study SPEC --out DIR` writes the tables (docs/guide/study.md)")
  add_distributed_args(p)
  p.set_defaults(func=cmd_study)

  p = sub.add_parser("plot", help="draw a study's figures again from its saved tables")
  p.add_argument("dir", type=path_name, help="the folder of `jbai study --out`")
  p.set_defaults(func=cmd_plot)
  parser.set_defaults(commands=tuple(sub.choices))
  return parser


def use_devices(args) -> None:
  """JAX's CPU devices for this command (`jbai.use_cpu_cores`): --devices, else
  $JBAI_DEVICES, else one per usable core. A device count that was not asked for
  is left as it is when JAX has already started (`main` called in a process that
  has run JAX: a notebook, the tests)."""
  from jbai.host import cores
  n = getattr(args, "devices", None)
  if n is None and os.environ.get(cores.ENV_DEVICES, "").strip():
    n = cores.check_devices(os.environ[cores.ENV_DEVICES], f"${cores.ENV_DEVICES}")
  if n is None and cores.backend_started():
    return
  try:
    cores.use_cpu_cores(n)
  except RuntimeError as e:
    raise ValueError(str(e)) from None


# What to change when a command runs out of memory, by command.
MEMORY_HINTS = {
    "study": "lower the spec's trials ([study] trials, or an [[instances]] entry's own), "
             "or split its instances over several studies",
    "reproduce": "run one item at a time (--only ITEM)",
    "plot": "draw a study with fewer trials",
}
MEMORY_HINT = "run fewer trials per command (--trials)"  # run, grad, oracle


def main(argv=None) -> int:
  """Runs the command line; returns the exit code (2: bad input, 130: Ctrl-C).

  JAX's persistent compilation cache is turned on first
  (`jbai.enable_compilation_cache`): a command compiles its programs once per
  machine, not once per process. Then JAX gets one CPU device per usable core
  (`use_devices`): each runs a pool of lanes.

  Args:
    argv: the arguments; None (the `jbai` script): sys.argv[1:], and the process
      is the command's own, so that a second Ctrl-C, during the first one's
      shutdown, also ends it with 130 and one line, `jbai: interrupted`
      (`jbai.cli.interrupts`); after a Ctrl-C the process exits 130 whatever the
      command did, by `os._exit` once its output is flushed.
  """
  said = []

  def say_interrupted():  # once, whichever Ctrl-C gets there first
    if not said:
      said.append(True)
      print("jbai: interrupted", file=sys.stderr)

  if argv is None:
    try:
      with quiet_after_first_interrupt(say_interrupted):
        code = _main(sys.argv[1:], say_interrupted)
        if interrupts.pressed():  # a command that finished anyway still says so
          if code == 0:
            say_interrupted()
            code = EXIT_INTERRUPTED
          interrupts.flush_and_exit(code)  # no shutdown while XLA's threads compute
      interrupts.exit_on_interrupt(say_interrupted)  # the shutdown
    except KeyboardInterrupt:  # Python's handler, before ours was installed
      say_interrupted()
      interrupts.flush_and_exit(EXIT_INTERRUPTED)
    return code
  return _main(list(argv), say_interrupted)


def _main(argv: list, say_interrupted) -> int:
  """`main` on the arguments `argv`; `say_interrupted` reports a Ctrl-C."""
  command = None
  try:
    from jbai.host.caches import enable_compilation_cache
    enable_compilation_cache()
    parser = build_parser()
    commands = parser.get_default("commands")
    if argv and argv[0] not in commands and not argv[0].startswith("-"):
      raise UsageError(f"unknown command {argv[0]!r}; choose from {list(commands)}")
    if not argv or argv[0] not in commands + ("-h", "--help"):
      argv = ["run"] + argv  # `jbai` and `jbai --rule tcb` mean `jbai run ...`
    command = argv[0]
    args = parser.parse_args(argv)
    fill_defaults(args)  # --rule and --means by question
    if args.command not in ("rules", "plot"):
      use_devices(args)
    return args.func(args)
  except SystemExit as e:  # --help
    return e.code if isinstance(e.code, int) else 0
  except KeyboardInterrupt:
    say_interrupted()
    return EXIT_INTERRUPTED
  except (ValueError, TypeError) as e:  # bad input: one line, exit 2
    message = str(e).splitlines()[0] if str(e) else repr(e)
    print(f"jbai: error: {message}", file=sys.stderr)
    return 2
  except OSError as e:  # a write that failed mid-way (disk full): what was saved stays
    print(f"jbai: error: {e}", file=sys.stderr)
    return 1
  except MemoryError:
    print(f"jbai: error: out of memory; {MEMORY_HINTS.get(command, MEMORY_HINT)}",
          file=sys.stderr)
    return 2


__all__ = ["DEFAULT_RUN", "EXIT_INTERRUPTED", "Parser", "Plan", "Run", "TrialLog",
           "UsageError", "build_parser", "check_combinations", "cmd_grad", "cmd_oracle",
           "cmd_reproduce", "cmd_rules", "cmd_run", "count", "family_from_args",
           "grad_records", "join_negative_values", "main", "name_list", "number",
           "number_list", "plan_command", "plan_runs", "rule_refusal", "use_devices"]
