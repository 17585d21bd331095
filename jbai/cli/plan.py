"""From the parsed options to what runs: the family, the deltas and the runs.

`jbai run` and `jbai grad` compare every combination of --rule x --threshold x
--beta x --eps (repeats dropped). Before anything compiles, each rule and each
threshold is checked against the family: a refused combination is answered with
one line that gives the reasons and `use --rule ... --threshold ...`, options
checked to apply to the whole command.
"""

import inspect
import math
from typing import NamedTuple, Optional

# Alternatives suggested when a rule does not apply to a family, in this order.
PREFERRED_RULES = ("ebtci", "ebtc", "itcb", "tcb")


def family_from_args(args):
  """Builds the family from --family and its parameter options: the bounded model of
  --laws (`bounded_family`); the linear family of --arms and --theta
  (`linear_from_args`); with a --sigma list of several values or --unknown-variance,
  a model of Gaussian arms with a sigma per arm (`per_arm_family`)."""
  from jbai.families import BUILTIN, get
  if getattr(args, "laws", None) is not None:
    return bounded_family(args)
  sigma = getattr(args, "sigma", None)
  if any(getattr(args, k, None) is not None for k in ("arms", "theta", "ridge")):
    from jbai.cli.linear import linear_from_args
    return linear_from_args(args)
  if getattr(args, "glr", None) is not None and not getattr(args, "unknown_variance", False):
    raise ValueError(f"--glr {args.glr} chooses the GLR of --unknown-variance; give "
                     "--unknown-variance too")
  if getattr(args, "unknown_variance", False) or (sigma is not None and len(sigma) > 1):
    return per_arm_family(args)
  params = {"sigma": sigma[0] if sigma else None, "lo": args.lo, "hi": args.hi,
            "shape": getattr(args, "shape", None)}
  if args.family not in BUILTIN:
    raise ValueError(f"unknown family {args.family!r}; choose from {sorted(BUILTIN)}")
  accepted = inspect.signature(BUILTIN[args.family]).parameters
  for name, value in params.items():
    if value is not None and name not in accepted:
      raise ValueError(f"family {args.family!r} takes no parameter --{name}")
    if value is not None and not math.isfinite(value):
      raise ValueError(f"--{name} must be a finite number, got {value!r}")
  return get(args.family, **{k: v for k, v in params.items() if v is not None})


def per_arm_family(args):
  """Gaussian arms with a sigma per arm (`jbai.variance.families`): told to the rule
  (--sigma S1,...,SK), or estimated by it (--unknown-variance, the rewards drawn
  with --sigma, one value or K; default 1).

  Raises:
    ValueError: one line, for another --family, a sigma <= 0, a --sigma list whose
      length is not the number of arms.
  """
  from jbai.variance import families
  option = "--unknown-variance" if args.unknown_variance else "a --sigma list"
  if args.family != "gaussian":
    raise ValueError(f"{option} is for Gaussian arms, not --family {args.family}")
  if getattr(args, "shape", None) is not None:
    raise ValueError("family 'gaussian' takes no parameter --shape")
  num_arms = len(args.means) if args.means is not None else None
  sigma = families.check_sigma(args.sigma if args.sigma is not None else [1.0], num_arms)
  if num_arms is not None and len(sigma) == 1:
    sigma = sigma * num_arms
  theta = {k: v for k, v in (("lo", args.lo), ("hi", args.hi)) if v is not None}
  if args.unknown_variance:
    return families.unknown_sigma(sigma, args.glr or "uv", **theta)
  return families.known_sigma(sigma, **theta)


def bounded_family(args):
  """Arms of any law in [0, 1] (`jbai.bounded.family`), from --laws.

  Raises:
    ValueError: one line, for a bad law (`jbai.bounded.laws.parse`), or an option of
      another family (--sigma, --unknown-variance, --glr, --shape, --lo, --hi,
      --family other than its default).
  """
  from jbai.bounded import bounded_family as build, laws
  for option in ("sigma", "unknown_variance", "glr", "shape", "lo", "hi", "arms", "theta",
                 "ridge"):
    if getattr(args, option, None) not in (None, False):
      raise ValueError(f"--laws gives arms in [0, 1] by their laws; it does not take "
                       f"--{option.replace('_', '-')}")
  if args.family not in ("gaussian", "bounded"):  # gaussian: --family's default
    raise ValueError(f"--laws gives arms in [0, 1] by their laws; drop --family {args.family}")
  return build(laws.parse(args.laws))


def is_bounded(family) -> bool:
  """Whether the family is the bounded model of --laws."""
  return family.name == "bounded" and dict(family.params).get("laws") is not None


def per_arm(family) -> bool:
  """Whether the family has a sigma per arm (`per_arm_family`)."""
  return family.sample_arm is not None and dict(family.params).get("sigma") is not None


def default_threshold(family) -> str:
  """The threshold of a run without --threshold: the unknown-variance model's own
  (uv or ev, its --glr's: proven, `jbai.thresholds.variance`), the bounded model's
  (bounded), else gk16."""
  from jbai.cli.args import DEFAULT_RUN
  from jbai.variance.families import UNKNOWN
  if is_bounded(family):  # the KL_inf GLR's, proven (`jbai.thresholds.bounded`)
    return "bounded"
  return dict(family.params)["glr"] if family.name in UNKNOWN.values() else \
      DEFAULT_RUN["threshold"]


def checked_deltas(values) -> list:
  """The --delta values, each checked to lie in (0, 1): a float, or its text
  where float64 cannot hold it (below 2.2e-308: `jbai.core.inputs.parse_delta`
  carries log(1/delta) from the text). Errors name the value as typed."""
  import numpy as np
  from jbai.core.inputs import parse_delta
  levels = parse_delta(values)
  tiny = np.finfo(np.float64).tiny
  return [float(v) if v >= tiny else text for v, text in zip(levels.values, levels.texts)]


def rule_refusal(family, rule, num_arms: int) -> Optional[str]:
  """Why `rule` does not apply to `family` at `num_arms` arms, or None
  (`jbai.core.inputs.rule_refusal`)."""
  from jbai.core.inputs import rule_refusal as refusal
  return refusal(family, rule, num_arms)


class Run(NamedTuple):
  """One row group of a comparison: a rule and a threshold (every delta)."""

  label: str   # the rule's name, or its repr when a name appears twice
  rule: object
  threshold: object
  key: str = ""  # identifies the run's finished trials in a TrialLog


class Plan(NamedTuple):
  """What a `jbai run` or `jbai grad` command runs."""

  family: object   # the Family
  means: list      # [K] floats, checked against the family
  deltas: list     # [D] floats in (0, 1)
  runs: list       # [Run], in order, each threshold the stop its run assembles
  problem: object = None  # the question (`jbai.problems.question`): best_arm() by default


def make_rule(name: str, beta=None, eps=None, **options):
  from jbai.rules import get
  return get(name, beta=beta, eps=eps, **options)


def rule_options(args) -> dict:
  """The rules' structural options of the command line (--forced, --projection),
  --eps-good, the slack of the rules built for eps-good answers (ebtc-eps,
  lucb1-eps: `eps_good`), --above, the level of the thresholding rules (apt:
  `level`), --top, the m of the top-m rules (ebtc-top-m: `m`), and --param, any
  other parameter by name; a rule ignores those it does not take."""
  from jbai.cli.args import rule_params
  out = {k: getattr(args, k, None) for k in ("forced", "projection", "eps_good")}
  return {**rule_params(args), **out, "level": getattr(args, "above", None),
          "m": getattr(args, "top", None)}


def problem_of(args):
  """The question of --top M or --above LEVEL (`jbai.problems`), or None: the best arm.
  With --above, --eps EPS is the question's tolerance (`above(level, eps)`: an arm
  within EPS of the level is right either way), which APT's eps must equal.

  Raises:
    ValueError: for both options.
  """
  from jbai import problems
  above, eps = getattr(args, "above", None), getattr(args, "eps", None)
  if above is None or eps is None:
    eps = None
  elif len(eps) != 1:
    raise ValueError(f"--eps with --above is the tolerance around the level (Locatelli et "
                     f"al.'s loss): give one value, got {','.join(map(str, eps))}")
  else:
    eps = eps[0]
  return problems.asked(getattr(args, "top", None), above, ("--top", "--above"), eps=eps)


def refuse_eps_with_question(args, problem) -> None:
  """Refuses --eps-good beside --top or --above (`problem`, from `problem_of`)."""
  if problem is not None and getattr(args, "eps_good", None) is not None:
    raise ValueError(f"--eps-good asks for an eps-good best arm; it does not go with "
                     f"{'--top' if getattr(args, 'top', None) is not None else '--above'}")


def plan_command(args) -> Plan:
  """The family, means, deltas and runs of a `jbai run` or `jbai grad` command
  line, each checked (ValueError with one line otherwise)."""
  from jbai.cli.args import DEFAULT_RUN, delta_list, fill_defaults
  from jbai.core.inputs import check_table
  fill_defaults(args)  # the question's rule and means, where not given (idempotent)
  family = family_from_args(args)
  problem = problem_of(args)
  refuse_eps_with_question(args, problem)
  if per_arm(family) and (problem is not None or getattr(args, "eps_good", None) is not None):
    raise ValueError("a sigma per arm (--sigma list, --unknown-variance) asks for the best "
                     "arm: --top, --above and --eps-good are not built for it yet")
  if per_arm(family) and getattr(args, "command", None) == "grad":
    raise ValueError("jbai grad needs a log-density per arm, which a sigma per arm (--sigma "
                     "list, --unknown-variance) does not have yet")
  if is_bounded(family) and (problem is not None or getattr(args, "eps_good", None)
                             is not None or getattr(args, "command", None) == "grad"):
    raise ValueError("--laws asks for the best arm at a confidence: --top, --above, "
                     "--eps-good and jbai grad are not built for it yet")
  check_table(family, args.means, problem=problem)
  deltas = checked_deltas(args.delta or delta_list(DEFAULT_RUN["delta"]))
  if getattr(args, "command", None) == "grad" and not all(isinstance(d, float) for d in deltas):
    small = next(d for d in deltas if not isinstance(d, float))
    raise ValueError(f"jbai grad takes delta >= 2.2e-308 (float64), got {small}")
  runs = plan_runs(args, family, problem)
  if problem is None:
    check_separable(family, args.means)
  from jbai import problems
  from jbai.core.assembly import assemble
  asked = problems.question(problem, getattr(args, "eps_good", None))
  runs = [run._replace(threshold=assemble(family, run.rule, run.threshold, asked).stop)
          for run in runs]
  return Plan(family, args.means, deltas, runs, asked)


def check_separable(family, means) -> None:
  """Refuses means whose best arm cannot be told apart in the simulation's float
  dtype (Gamma(nu) = 0), before any run (`jbai.core.inputs.check_separable`)."""
  import numpy as np
  from jbai.core.inputs import check_separable as check
  check(family, np.asarray([means], float))


def plan_runs(args, family, problem=None) -> list:
  """The runs of --rule x --threshold x --beta x --eps (repeats dropped), after
  checking that every rule and threshold applies to the family; with a question
  beyond the best arm (`problem_of`), each threshold is its GLLR stop's.

  Raises:
    ValueError: one line naming each rule and threshold that does not apply,
      and the --rule / --threshold values that would (each checked).
  """
  from jbai.thresholds import get as get_threshold
  thr_names = args.threshold or [default_threshold(family)]
  thr_objs = [get_threshold(t) for t in thr_names]
  if problem is not None:
    from jbai.stops import answer_gllr
    thr_objs = [answer_gllr(problem, t) for t in thr_objs]
  check_rule_params(args)
  betas, epss = args.beta or [None], args.eps or [None]
  rule_objs = {}
  for name in args.rule:
    for b in betas:
      for e in epss:
        rule = make_rule(name, b, e, **rule_options(args))
        if getattr(args, "a", None):
          raise ValueError("--a is the exploration parameter of rules run to a budget "
                           "(ucb-e, ugape-b): give --budget")
        rule_objs.setdefault(repr(rule), (name, rule))
  check_combinations(family, args.rule, thr_names, len(args.means), betas, epss,
                     options=rule_options(args))
  names = [n for n, _ in rule_objs.values()]
  runs = []
  for name, rule in rule_objs.values():
    label = name if names.count(name) == 1 else repr(rule)
    for thr in stops_for(args, family, rule, thr_objs):
      runs.append(Run(label, rule, thr))
  return runs


def stops_for(args, family, rule, thr_objs) -> list:
  """The stops a rule runs with: --stop (gllr: the --threshold list), else the
  rule's own stop, else the --threshold list; each checked (`jbai.stops.check`:
  one line with a working combination where it does not suit). An explicit
  --threshold with a stop that takes none is refused, never ignored."""
  from jbai import stops
  name = getattr(args, "stop", None)
  if name is None:
    own = stops.own_stop(rule)
    if own is not None and own.name == "eps-gllr" and args.threshold is not None:
      # A rule's own eps-GLLR is a GLLR stop: it takes each --threshold.
      thr_objs = [stops.eps_gllr(stops.eps_of(own), t) for t in thr_objs]
      own = None
    chosen = [own] if own is not None else thr_objs
  else:
    chosen = [stops.get(name, rule)] if name != "gllr" else thr_objs
  if args.threshold is not None and chosen is not thr_objs:
    gllr_fits = stops.refusal(thr_objs[0], rule, family) is None
    raise ValueError(
        f"rule {rule.name!r} stops with {chosen[0].name!r}, which takes no --threshold: "
        "drop --threshold, or to stop with the GLLR against it; use "
        f"{'--stop gllr' if gllr_fits else '--rule tcb'} "
        f"--threshold {','.join(t.name for t in thr_objs)}")
  for stop in chosen:
    stops.check(stop, rule, family)
  deltas = getattr(args, "delta", None) or [None]
  if len(deltas) > 1 and stops.takes_delta(rule.init(len(args.means))):
    raise ValueError(f"rule {rule.name!r} samples with confidence bounds that depend on "
                     f"delta: give one --delta per run (e.g. --delta {deltas[0]})")
  return chosen


def check_rule_params(args) -> None:
  """Refuses --beta, --eps, --forced, --projection or --a when no rule of --rule
  takes it (it would be ignored silently), naming the rules that do; a rule takes
  an option when its factory (`jbai.rules.ALL`) has the parameter of that name."""
  from jbai.cli.args import rule_params
  from jbai.rules import ALL  # every rule's factory, those of --top and --above too
  given = [(option, f"--{option}") for option in ("beta", "eps", "forced", "projection", "a")
           if getattr(args, option, None) is not None]
  given += [(name, f"--param {name}") for name in rule_params(args)]
  if getattr(args, "above", None) is not None:  # --eps: the question's tolerance
    given = [(name, option) for name, option in given if name != "eps"]
  for name, option in given:
    takes = [r for r in ALL if name in inspect.signature(ALL[r]).parameters]
    if not any(rule in takes for rule in args.rule):
      raise ValueError(f"{option} is taken by none of --rule {','.join(args.rule)}; "
                       f"the rules with {name}: {','.join(takes) or 'none'}")


def _refused_rules(family, rule_names, betas, epss, num_arms: int, budget: bool = False,
                   options=None) -> dict:
  """{rule name: why it does not run}: on the family at `num_arms` arms, and
  (without `budget`) a rule that samples with a fixed budget, which never stops
  by itself."""
  out = {}
  for name in rule_names:
    for b in betas:
      for e in epss:
        rule = make_rule(name, b, e, **(options or {}))
        reason = rule_refusal(family, rule, num_arms)
        if reason is None and rule.budget is not None and not budget:
          reason = (f"rule {name!r} samples with a fixed budget and does not stop: run it "
                    "with --budget T")
        if reason:
          out.setdefault(name, reason)
  return out


def _refused_thresholds(family, threshold_names) -> dict:
  from jbai.thresholds import get, refusal
  out = {}
  for name in threshold_names:
    reason = refusal(get(name), family)
    if reason:
      out[name] = reason
  return out


def check_combinations(family, rule_names, threshold_names, num_arms: int, betas=(None,),
                       epss=(None,), budget: bool = False, options=None) -> None:
  """Raises ValueError when a rule or a threshold does not apply to the family
  (the rules at the run's `num_arms` arms).

  The message gives the reasons, then `use --rule ... --threshold ...`: each
  refused name replaced by the first that applies (thresholds: kk, paper, gk16;
  rules: ebtci, ebtc, itcb, tcb, then the others), with the same beta and eps.
  Rules and thresholds are refused independently (a rule by the family, a
  threshold by the family), so the suggested values run together. Without
  `budget` (a run to --budget) a rule that samples with a fixed budget is refused.
  """
  from jbai.rules import RULES
  from jbai.thresholds import PREFERRED
  bad_rules = _refused_rules(family, rule_names, betas, epss, num_arms, budget, options)
  bad_thr = _refused_thresholds(family, threshold_names)
  if not bad_rules and not bad_thr:
    return
  fixes = []
  if bad_rules:
    order = list(PREFERRED_RULES) + [r for r in RULES if r not in PREFERRED_RULES]
    good = (r for r in order if r not in bad_rules and  # checked as far as needed
            not _refused_rules(family, [r], betas, epss, num_arms, budget, options))
    fixes.append("--rule " + _replace(rule_names, bad_rules, good))
  if bad_thr:
    good = (t for t in PREFERRED if t not in bad_thr and
            not _refused_thresholds(family, [t]))
    fixes.append("--threshold " + _replace(threshold_names, bad_thr, good))
  reasons = list(bad_rules.values()) + list(bad_thr.values())
  raise ValueError("; ".join(reasons) + "; use " + " ".join(fixes))


def _replace(names: list, bad: dict, good: list) -> str:
  """`names` with each bad entry replaced by the first good name not yet used
  (`good`: an iterable, drawn from only as far as the bad names need)."""
  out = []
  spare = (g for g in good if g not in names)
  for n in names:
    if n not in bad:
      out.append(n)
    else:
      out.append(next(spare, None))
  return ",".join(dict.fromkeys(n for n in out if n is not None))
