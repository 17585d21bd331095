"""Reading the command line: the parser, number and name lists, the options.

Negative numbers are values, not options: `--means -1,0,1`, `--lo -5`. Lists are
comma-separated; a malformed list is answered with one line that names the bad
text (argparse's usage errors are turned into `UsageError`, one line, exit 2).
"""

import argparse
import math
import re
import sys
from typing import NamedTuple

from jbai.cli.linear import arms_matrix
from jbai.cli.values import (  # noqa: F401 (the value types, re-exported)
    OWN_OPTIONS, count, delta_list, entries, name_list, number, number_list,
    param_list, param_value, path_name, positive_count, rule_params, seed)
from jbai.stops import STOPS

DEFAULT_RUN = {"family": "gaussian", "means": "1.2,1,1,1,1", "rule": "itcb",
               "delta": "1e-8", "trials": 1000, "threshold": "gk16"}


class Question(NamedTuple):
  """What `jbai run` and `jbai grad` run for a question when --rule (--means) is
  not given: the rule of a run that stops (fixed confidence), the rule of a run
  to --budget, the means, and why these rules."""

  confidence: str
  budget: str
  means: str
  why: str


# The default rule of each question (`default_rule`), shown in --help.
QUESTIONS = {
    "best arm": Question(
        "itcb", "sequential-halving", DEFAULT_RUN["means"],
        "ITCB is beta-free and asymptotically optimal with the GLLR stop; Sequential "
        "Halving is the reference rule at a fixed budget (Karnin, Koren & Somekh 2013)"),
    "eps-good": Question(
        "ebtc-eps", "ebtc-eps", DEFAULT_RUN["means"],
        "EB-TC_eps is built for eps-good answers: asymptotically 1/2-optimal with its "
        "eps-GLLR stop, and anytime, with guarantees at every budget (Jourdan, "
        "Degenne & Kaufmann 2023)"),
    "top-m": Question(
        "ebtc-top-m", "ebtc-top-m", "1.2,1.1,1,0.9,0.8",
        "EB-TC for top-m is a top-two rule: delta-correct with the top-m GLLR stop, "
        "cheap per step and anytime (You et al. 2023); the default means are distinct, "
        "so that every top m is unique"),
    "above": Question(
        "tas-above", "apt", DEFAULT_RUN["means"],
        "Track-and-Stop for thresholding tracks the closed-form optimal allocation: "
        "asymptotically optimal with the thresholding GLLR stop; APT is the rule built "
        "for a fixed budget (Locatelli, Gutzeit & Carpentier 2016)"),
}


# The linear model's default rules (--arms), at a fixed confidence and at a budget:
# LinGapE stops near Track-and-Stop without an oracle per step, where TCB, which pulls
# only the leader and its challenger, does not; XY-static needs no delta.
LINEAR_RULES = {False: "lingape", True: "xy-static"}


def question_of(args) -> str:
  """The question of a command line: --top, --above, --eps-good EPS > 0, else the
  best arm (--eps-good 0 asks for the best arm).

  Raises:
    ValueError: for --eps-good not a finite number >= 0.
  """
  eps = getattr(args, "eps_good", None)
  if eps is not None and not 0 <= eps < math.inf:
    raise ValueError(f"--eps-good must be a finite number >= 0, got {eps}")
  if getattr(args, "top", None) is not None:
    return "top-m"
  if getattr(args, "above", None) is not None:
    return "above"
  return "eps-good" if eps else "best arm"


def fill_defaults(args) -> None:
  """Sets --rule and --means where they were not given, from the question's entry
  of `QUESTIONS` (its rule at a fixed confidence, or at --budget)."""
  question = QUESTIONS[question_of(args)]
  if getattr(args, "rule", "") is None:
    at_budget = getattr(args, "budget", None) is not None
    args.rule = [question.budget if at_budget else question.confidence]
    if getattr(args, "arms", None) is not None:  # the linear model (docs/guide/linear.md)
      args.rule = [LINEAR_RULES[at_budget]]
  if getattr(args, "laws", None) is not None:
    _means_of_laws(args)
  if getattr(args, "means", "") is None and getattr(args, "arms", None) is None:
    args.means = number_list(question.means)  # with --arms, the means are X theta


def _means_of_laws(args) -> None:
  """--means from --laws (the laws' means, the answer a trial is scored against);
  ValueError for a bad law, or for --means that are not the laws' (idempotent)."""
  import numpy as np
  from jbai.bounded import laws
  means = [laws.mean_of(law) for law in laws.parse(args.laws)]
  if args.means is not None and not np.allclose(args.means, means, rtol=0, atol=1e-12):
    raise ValueError(f"--laws gives the arms' means ({', '.join(f'{m:g}' for m in means)}); "
                     "drop --means")
  args.means = means


def defaults_help() -> str:
  """The default rules of `QUESTIONS`, for --help."""
  return "; ".join([f"{name}: {q.confidence} (at a budget: {q.budget})"
                    for name, q in QUESTIONS.items()] +
                   [f"linear (--arms): {LINEAR_RULES[False]} (at a budget: {LINEAR_RULES[True]})"])


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


# ---------------------------------------------------------------- options

def add_family_args(p):
  """--family, --means and the family's parameters."""
  p.add_argument("--family", default=DEFAULT_RUN["family"], help="reward family")
  p.add_argument("--means", type=number_list, default=None,
                 help="comma-separated arm means, e.g. -1,0,1 (default "
                 f"{DEFAULT_RUN['means']}; with --top: {QUESTIONS['top-m'].means})")
  p.add_argument("--sigma", type=number_list, default=None,
                 help="Gaussian standard deviation: one value for every arm, or one per "
                 "arm (e.g. 1,0.3,2: the rule and the stop are told them)")
  p.add_argument("--unknown-variance", action="store_true",
                 help="Gaussian arms whose variances the rule and the stop estimate, the "
                 "rewards drawn with --sigma (default 1): rules tcb, itcb, ebtc, ebtci, "
                 "uniform (at a budget also sequential-halving, successive-rejects); "
                 "threshold uv or ev (docs/guide/unknown-law.md)")
  p.add_argument("--glr", choices=["uv", "ev"], default=None,
                 help="with --unknown-variance, the costs and stop: uv, the GLR of the "
                 "unknown-variance model (default), or ev, the known-variance GLR with the "
                 "empirical variances plugged in")
  p.add_argument("--arms", type=arms_matrix, default=None, metavar="X",
                 help="a linear bandit's arms: the [K, d] features inline, rows separated by "
                 "';' (e.g. \"1,0;0,1;0.995,0.0998\") or a .npy/.csv file; with --theta, "
                 "the means are X theta (docs/guide/linear.md)")
  p.add_argument("--theta", type=number_list, default=None,
                 help="with --arms: theta in R^d, comma-separated")
  p.add_argument("--ridge", type=number, default=None,
                 help="with --arms: the ridge lambda > 0 of the least squares (default 1)")
  p.add_argument("--laws", default=None,
                 help="arms of any law in [0, 1], told to the rule and the stop by their "
                 "support alone, one law per arm separated by ';': beta(a,b), "
                 "bernoulli(p), discrete(v1,...,vn:p1,...,pn), e.g. "
                 "'beta(4,2);bernoulli(0.3);discrete(0,0.5,1:0.2,0.3,0.5)'; gives the "
                 "means; rules tcb, itcb, ebtc, ebtci, uniform; threshold bounded "
                 "(docs/guide/unknown-law.md)")
  p.add_argument("--shape", type=number, default=None, help="Weibull shape k")
  p.add_argument("--lo", type=number, default=None, help="lower end of Theta")
  p.add_argument("--hi", type=number, default=None, help="upper end of Theta")


def add_rule_args(p):
  """--rule, --threshold and the rules' runtime parameters, each a list."""
  p.add_argument("--rule", type=name_list, default=None,
                 help="sampling rule(s), comma-separated: compared side by side "
                 "(see `jbai rules`); default, by question: " + defaults_help())
  p.add_argument("--threshold", type=name_list, default=None,
                 help="stopping threshold(s) of the GLLR stop: gk16 (default), kk, paper; "
                 "with --unknown-variance uv or ev (default: the --glr's); linear-sn for "
                 "the linear model (--arms); with --laws bounded (its default)")
  p.add_argument("--stop", choices=STOPS,
                 default=None,
                 help="stopping rule: gllr (the GLLR against --threshold), confidence "
                 "(LUCB bounds), elimination (one arm left) or lil (lil'UCB); default: "
                 "each rule's own stop (see `jbai rules`), else gllr")
  p.add_argument("--beta", type=number_list, default=None,
                 help="top-two parameter(s) beta, e.g. 0.3,0.5 (one compiled program); "
                 "rules that take no beta ignore it, and a --rule list where none "
                 "takes it is refused")
  p.add_argument("--eps", type=number_list, default=None,
                 help="TCB/ITCB look-ahead(s) r_t = eps/t; rules that take no eps "
                 "ignore it, and a --rule list where none takes it is refused")
  p.add_argument("--forced", choices=("strict", "sqrt-t-k2", "none"), default=None,
                 help="Track-and-Stop's forced exploration: strict (min N < sqrt(t) - K/2, "
                 "the paper; tas-d's default), sqrt-t-k2 (min N <= sqrt(t) - K/2, "
                 "Garivier & Kaufmann's code) or none (tas-c's default)")
  p.add_argument("--projection", choices=("eps", "none"), default=None,
                 help="tas-c's projection of w: eps (the paper's eps-projection, "
                 "default) or none (Garivier & Kaufmann's code)")
  p.add_argument("--param", type=param_list, action="append", default=None,
                 metavar="NAME=VALUE[,...]",
                 help="any other parameter of a rule's factory (`jbai rules` lists them), "
                 "one value each, e.g. --rule ucb-e --param h1=40,c=0.5 or --rule tas-d "
                 "--param solver=exact; a name that no rule of --rule takes is refused")
  p.add_argument("--a", type=number_list, default=None,
                 help="exploration parameter(s) a of ucb-e and ugape-b (one compiled "
                 "program); rules that take no a ignore it")


def count_list(text: str) -> list:
  """'1000,1e4' -> [1000, 10000]: whole numbers, each at least 1 and given once
  (a repeat is refused, as a study's budgets are: it would be one run)."""
  out = []
  parts = entries(text)
  for entry in parts:
    value = count(entry)
    where = "" if len(parts) == 1 else f" in {text!r}"
    if value < 1:
      raise argparse.ArgumentTypeError(f"{entry!r}{where} must be >= 1")
    if value in out:
      raise argparse.ArgumentTypeError(f"{value} appears twice{where}; give each once")
    out.append(value)
  return out


def add_budget_args(p, checkpoints: bool = True):
  """--budget and (with `checkpoints`) --checkpoints: a run to fixed budgets
  (`jbai.cli.budget`)."""
  p.add_argument("--budget", type=count_list, default=None, metavar="T[,T...]",
                 help="run to fixed budgets, no stop: the error rate and the simple regret "
                 "of each rule's recommendation at each budget, common random numbers "
                 "(rules that sample without delta)")
  if checkpoints:
    p.add_argument("--checkpoints", type=positive_count, default=None, metavar="N",
                   help="with --budget: also record N log-spaced times up to each run's "
                   "budget (the JSON's curves)")


def add_question_args(p, text: str, details: tuple):
  """--top M and --above LEVEL, a question beyond the best arm (`jbai.problems`); each
  help is `text` formatted with the question and its entry of `details`."""
  questions = ("top-m identification (the M arms with the largest means)",
               "thresholding (the arms whose mean is above LEVEL)")
  for (flag, kind, metavar), question, detail in zip(
      (("--top", count, "M"), ("--above", number, "LEVEL")), questions, details):
    p.add_argument(flag, type=kind, default=None, metavar=metavar,
                   help=text.format(question, detail))


def add_run_args(p):
  """--delta, --trials, --seed, --max-steps, --chunk."""
  p.add_argument("--delta", type=delta_list, default=None,
                 help="confidence level(s), e.g. 1e-2,1e-8 (default 1e-8): one trajectory "
                 "per trial for all of them; any magnitude (1e-400): the thresholds take "
                 "log(1/delta)")
  p.add_argument("--trials", type=positive_count, default=DEFAULT_RUN["trials"],
                 help="trials per rule (1e4 accepted); a run whose results would not fit "
                 "in memory is refused (JBAI_MEMORY_LIMIT=64G raises the limit)")
  p.add_argument("--seed", type=seed, default=0,
                 help="PRNG seed in [0, 2^63), the same for every rule")
  p.add_argument("--max-steps", type=positive_count, default=None,
                 help="cap on a trial's rewards (default: 1e6, or a rule's own where it "
                 "pulls in blocks: exp-gap 2^31 - 2); above 2^31 - 2 it needs "
                 "JAX_ENABLE_X64=1 (64-bit counts)")
  p.add_argument("--chunk", type=positive_count, default=2048,
                 help="steps between progress reports and saves of finished trials")


def add_device_args(p):
  """--devices: JAX's CPU devices, one pool of lanes each (`jbai.use_cpu_cores`)."""
  p.add_argument("--devices", type=positive_count, default=None,
                 help="CPU devices to run on, one pool of lanes each (default: $JBAI_DEVICES, "
                 "else JAX_NUM_CPU_DEVICES, else one per usable core; results do not "
                 "depend on it)")


def add_distributed_args(p):
  """`jbai study`'s jax.distributed options (`jbai.studies.distributed`)."""
  g = p.add_argument_group("one study over the processes of a jax.distributed job "
                           "(docs/guide/study.md, On a cluster)")
  g.add_argument("--distributed", action="store_true",
                 help="run as one process of a jax.distributed job, JAX reading the "
                 "coordinator, the number of processes and this one's id from Slurm or Open "
                 "MPI (srun, mpirun); process I runs shard I/N of the jobs, process 0 "
                 "writes the tables")
  g.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                 help="process 0's host and a free port (implies --distributed)")
  g.add_argument("--num-processes", type=count, default=None, metavar="N",
                 help="the job's number of processes")
  g.add_argument("--process-id", type=count, default=None, metavar="I",
                 help="this process's id, 0 to N - 1")
  g.add_argument("--timeout", type=number, default=None, metavar="S",
                 help="seconds to join the job (jax.distributed's initialization_timeout; "
                 "default 120): a coordinator not reachable in that time is one line and "
                 "exit code 2")


def add_output_args(p, out_help: str):
  """--json, --out (`out_help` says what it writes), --progress."""
  p.add_argument("--json", action="store_true",
                 help="print JSON: one object for one rule and one delta, else a list")
  p.add_argument("--out", type=path_name, default=None, help=out_help)
  p.add_argument("--progress", action="store_true", help="show progress even when not a tty")
