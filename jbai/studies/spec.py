"""A study's spec: read from TOML (or a dict), checked in full, resolved.

The schema (docs/guide/study.md has an example of each part):

  [study]        name, seed, trials (per instance and cell), delta (a level or
                 a list), threshold (a name or a list: gk16, kk, paper),
                 max_steps, dtype ("float32" or "float64"), eps_good,
                 top (the m of the top-m arms) or above (a level: the arms
                 above it), description; or, for a budget study, budget (a
                 budget or a list) and checkpoints (log-spaced times recorded
                 besides)
  [[instances]]  one of
                   means = [...]                      a listed instance
                   draw = {count, arms, low, high}    or {count, arms, mean, sd};
                          min_gap (to the best arm), seed (default: the study's)
                   preset = "gk16-mu1"                a preset, or a group of
                          them ("table1", "gk16"), or "alpha" with arms, alpha
                   csv = "file.csv"                   one instance a row
                 with family (default: the preset's, else required),
                 family_params = {sigma = 0.5, ...}, an optional name, and
                 trials and max_steps to override the study's on its instances
  [[rules]]      name, the rule's parameters (a list is a sweep; several lists
                 sweep their product), and threshold = a name, a list, or "own"
                 (the rule's own stop) to override the study's

A rule that brings its own stop (LUCB, racing, elimination) runs with it unless
its entry names a threshold. With top = M or above = LEVEL (as `jbai run --top`
and `--above`) the study asks that question (`jbai.problems`): its trials stop
with the question's GLLR against each threshold, answer sets of arms, and T* is
the question's; the rules that take m or level are built for it. With [study]
budget the study is a budget study (`jbai.budget`): every trial runs to a budget and the rule's recommendation is
recorded at checkpoints; a stop's keys (delta, threshold, max_steps) have no
use there and are refused, and a rule whose sampling needs delta is too; with
eps_good a recommendation is correct when it is an eps-good arm. A rule that
samples with a fixed budget (Successive Rejects, ...) runs in budget studies
only. Every value is checked before any work, and a bad one
raises `SpecError`: one line naming the key and the value.

Studies shipped with jbai live in jbai/studies/shipped/NAME.toml (`shipped`);
`load("gk16")` reads one by its name when no file of that name exists. A string
given to `load` is a file's path when such a file exists, else TOML text when it
holds a newline, else a shipped study's name (`is_toml_text`).
"""

import inspect
import itertools
import math
import os
import tomllib
from typing import Optional

import numpy as np

from jbai.studies import instances as inst_lib

STUDY_DEFAULTS = {"name": "study", "seed": 0, "trials": 100, "delta": [0.1],
                  "threshold": ["gk16"], "max_steps": None, "dtype": "float32",
                  "eps_good": None, "top": None, "above": None, "description": "",
                  "budget": None, "checkpoints": None}
INSTANCE_KEYS = ("name", "family", "family_params", "means", "draw", "preset", "csv",
                 "arms", "alpha", "trials", "max_steps")
OVERRIDES = ("trials", "max_steps")  # an instance entry's own values of the study's
SOURCES = ("means", "draw", "preset", "csv")
DRAW_KEYS = ("count", "arms", "low", "high", "mean", "sd", "min_gap", "seed")
RULE_KEYS = ("name", "threshold")  # beside the rule's own parameters
# The keys of a study whose trials stop, which a budget study has no use for.
# A stop's keys, which a budget study refuses (eps_good scores its recommendation there).
STOP_KEYS = ("delta", "threshold", "max_steps")
QUESTION_KEYS = ("top", "above")  # a question beyond the best arm (`question`)
NO_STOP = "has no use in a budget study (study.budget), whose trials run to the budget " \
          "without a stop: drop it"
OWN = "own"  # threshold value: the rule's own stop
DTYPES = ("float32", "float64")
SEED_MAX = 2 ** 63
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shipped")


class SpecError(ValueError):
  """A bad value in a study spec: one line naming the key and the value."""


def _fail(key: str, value, why: str):
  raise SpecError(f"{key} = {_show(value)}: {why}")


def _show(value) -> str:
  text = repr(value)
  return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------- scalar checks

def _known(where: str, table, allowed) -> None:
  if not isinstance(table, dict):
    _fail(where, table, "must be a table")
  for key in table:
    if key not in allowed:
      _fail(f"{where}.{key}" if where else key, table[key],
            f"unknown key; choose from {list(allowed)}")


def _int(key: str, value, low: int = 1, high: int = 2 ** 31 - 1) -> int:
  if isinstance(value, bool) or not isinstance(value, int):
    _fail(key, value, "must be a whole number")
  if not low <= value <= high:
    _fail(key, value, f"must be in [{low}, {high}]")
  return value


def _num(key: str, value) -> float:
  if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
    _fail(key, value, "must be a finite number")
  return float(value)


def _list(key: str, value) -> list:
  """A value or a list of values, as a non-empty list."""
  out = value if isinstance(value, list) else [value]
  if not out:
    _fail(key, value, "is an empty list")
  return out


def _name(key: str, value, choices) -> str:
  if not isinstance(value, str) or value not in choices:
    _fail(key, value, f"unknown; choose from {sorted(choices)}")
  return value


# ---------------------------------------------------------------- the parts

def _study(table: dict) -> dict:
  _known("study", table, STUDY_DEFAULTS)
  if table.get("budget") is not None:  # a budget study: a stop's keys first
    for key in STOP_KEYS:
      if key in table:
        _fail(f"study.{key}", table[key], NO_STOP)
  s = {**STUDY_DEFAULTS, **table}
  if not isinstance(s["name"], str) or not s["name"].strip():
    _fail("study.name", s["name"], "must be a non-empty string")
  if not isinstance(s["description"], str):
    _fail("study.description", s["description"], "must be a string")
  s["seed"] = _int("study.seed", s["seed"], 0, SEED_MAX - 1)
  s["trials"] = _int("study.trials", s["trials"])
  if s["max_steps"] is not None:  # None: each rule's default cap (inputs.default_max_steps)
    s["max_steps"] = _int("study.max_steps", s["max_steps"])
  s["dtype"] = _name("study.dtype", s["dtype"], DTYPES)
  if s["eps_good"] is not None:  # eps-good answers: the eps-GLLR stop, T*_eps
    s["eps_good"] = _num("study.eps_good", s["eps_good"])
    if not 0 <= s["eps_good"] < math.inf:
      _fail("study.eps_good", s["eps_good"], "must be a finite number >= 0")
  _question(s)
  deltas = _list("study.delta", s["delta"])
  for d in deltas:
    if not 0 < _num("study.delta", d) < 1:
      _fail("study.delta", d, "must be in (0, 1)")
  if len(set(deltas)) < len(deltas):
    _fail("study.delta", s["delta"], "repeats a level")
  s["delta"] = [float(d) for d in deltas]
  from jbai.thresholds import THRESHOLDS
  s["threshold"] = [_name("study.threshold", t, THRESHOLDS)
                    for t in _list("study.threshold", s["threshold"])]
  return _budget(s)


def _question(s: dict) -> None:
  """Checks [study] top (a whole number >= 1; m < K is checked on each instance)
  and above (a finite level; Theta and ties on each instance): at most one, and
  not with eps_good (an eps-good best arm)."""
  given = [k for k in QUESTION_KEYS if s[k] is not None]
  if len(given) > 1:
    _fail("study.above", s["above"], "top and above ask two different questions: give one")
  if given and s["eps_good"] is not None:
    _fail(f"study.{given[0]}", s[given[0]], "eps_good asks for an eps-good best arm; "
          "it does not go with another question: drop one")
  if s["top"] is not None:
    s["top"] = _int("study.top", s["top"])
  if s["above"] is not None:
    s["above"] = _num("study.above", s["above"])


def question(study: dict) -> Optional[dict]:
  """{"top": m} or {"above": level}: the question of a study beyond the best arm
  (what its jobs record); in a budget study also {"eps_good": eps}, its
  recommendations scored as eps-good arms; else None."""
  for key in QUESTION_KEYS:
    if study.get(key) is not None:
      return {key: study[key]}
  if study.get("budget") is not None and study.get("eps_good") is not None:
    return {"eps_good": study["eps_good"]}
  return None


def problem_of(asked: Optional[dict]):
  """The `jbai.problems.Problem` of `question`'s dict, or None: the best arm."""
  from jbai import problems
  if asked and "eps_good" in asked:
    return problems.eps_good(asked["eps_good"])
  return problems.asked(**(asked or {}))


def _budget(s: dict) -> dict:
  """The [study] settings of a budget study: its budgets (sorted), its count of
  log-spaced checkpoints (default `jbai.core.budget.DEFAULT_CHECKPOINTS`), and no
  stop (delta, threshold, eps_good and max_steps, refused by `_study`, are None)."""
  if s["budget"] is None:
    if s["checkpoints"] is not None:
      _fail("study.checkpoints", s["checkpoints"], "records times of a run to a budget; "
            "give [study] budget")
    return s
  import jax
  from jbai.core.inputs import max_steps_limit
  from jbai.core.budget import DEFAULT_CHECKPOINTS
  with jax.enable_x64(s["dtype"] == "float64"):  # the counts the trials run with
    limit = max_steps_limit()
  budgets = [_int("study.budget", t, 1, limit) for t in _list("study.budget", s["budget"])]
  if len(set(budgets)) < len(budgets):
    _fail("study.budget", s["budget"], "repeats a budget")
  count = DEFAULT_CHECKPOINTS if s["checkpoints"] is None else s["checkpoints"]
  return {**s, "budget": sorted(budgets),
          "checkpoints": _int("study.checkpoints", count, 0, 10_000),
          **{key: None for key in STOP_KEYS}}


def _family(where: str, entry: dict, default: Optional[str]):
  """(name, params, Family) of an instance entry."""
  from jbai.families import BUILTIN, get
  name = entry.get("family", default)
  if name is None:
    _fail(f"{where}.family", None, f"is required; choose from {sorted(BUILTIN)}")
  _name(f"{where}.family", name, BUILTIN)
  params = entry.get("family_params", {})
  if not isinstance(params, dict):
    _fail(f"{where}.family_params", params, "must be a table")
  accepted = inspect.signature(BUILTIN[name]).parameters
  for k, v in params.items():
    if k not in accepted:
      _fail(f"{where}.family_params.{k}", v, f"unknown parameter of the {name} family; "
            f"choose from {list(accepted)}")
    # Every family parameter is a number (sigma, shape, lo, hi, grid_size, ...);
    # +-inf passes, for an unbounded Theta, and the family checks the rest.
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
      _fail(f"{where}.family_params.{k}", v, "must be a number")
  try:
    return name, dict(params), get(name, **params)
  except (TypeError, ValueError) as e:
    _fail(f"{where}.family_params", params, str(e).splitlines()[0])


def _check_means(where: str, family, means, study: dict) -> list:
  """The means as floats, checked for the family and the study's question (a
  unique best arm; with top or above, that question's identifiability) in the
  study's dtype."""
  from jbai.core.inputs import check_table
  if not isinstance(means, list) or not all(
      isinstance(m, (int, float)) and not isinstance(m, bool) for m in means):
    _fail(where, means, "must be a list of numbers")
  try:
    check_table(family, means, np.dtype(study["dtype"]), problem_of(question(study)))
  except (TypeError, ValueError) as e:
    _fail(where, means, str(e).splitlines()[0])
  return [float(m) for m in means]


def _draw(where: str, draw, family, seed: int) -> np.ndarray:
  _known(where, draw, DRAW_KEYS)
  count = _int(f"{where}.count", draw.get("count"), 1, 100_000)
  arms = _int(f"{where}.arms", draw.get("arms"), 2, 100_000)
  uniform = "low" in draw or "high" in draw
  gaussian = "mean" in draw or "sd" in draw
  if uniform == gaussian:
    _fail(where, draw, "give low and high (uniform means) or mean and sd (Gaussian means)")
  keys = ("low", "high") if uniform else ("mean", "sd")
  for k in keys:
    if k not in draw:
      _fail(f"{where}.{k}", None, f"is required with {keys[1 - keys.index(k)]}")
  got = {k: _num(f"{where}.{k}", draw[k]) for k in keys}
  if uniform and not got["low"] < got["high"]:
    _fail(f"{where}.high", draw["high"], f"must be above low = {draw['low']}")
  if gaussian and not got["sd"] > 0:
    _fail(f"{where}.sd", draw["sd"], "must be positive")
  if uniform:  # uniform means on [low, high]: every one of them must be a mean of the family
    theta = f"outside Theta = [{family.lo}, {family.hi}] of the {family.name} family"
    if not family.lo <= got["low"] <= family.hi:
      _fail(f"{where}.low", draw["low"], f"is {theta}")
    if not family.lo <= got["high"] <= family.hi:
      _fail(f"{where}.high", draw["high"], f"is {theta}")
  min_gap = _num(f"{where}.min_gap", draw.get("min_gap", 0.0))
  if min_gap < 0:
    _fail(f"{where}.min_gap", min_gap, "must be >= 0")
  draw_seed = _int(f"{where}.seed", draw.get("seed", seed), 0, SEED_MAX - 1)
  try:
    return inst_lib.draw_means(count, arms, draw_seed, family.lo, family.hi,
                               min_gap=min_gap, **got)
  except inst_lib.DrawError as e:
    # Named by the constraint that refused most draws: Theta (mean and sd) or min_gap.
    key = "min_gap" if e.cause == "min_gap" else ("mean" if gaussian else "low")
    _fail(f"{where}.{key}", draw.get(key, min_gap), str(e))


def _instances(entries, study: dict, folder: str) -> list:
  """[{name, family, family_params, means, source, group}] in spec order, with the
  entry's trials and max_steps where it gives them."""
  if not isinstance(entries, list) or not entries:
    _fail("instances", entries, "give at least one [[instances]] entry")
  out = []
  for i, entry in enumerate(entries):
    where = f"instances[{i}]"
    _known(where, entry, INSTANCE_KEYS)
    sources = [k for k in SOURCES if k in entry]
    if len(sources) != 1:
      _fail(where, sorted(entry), f"give exactly one of {list(SOURCES)}")
    source = sources[0]
    for k in ("arms", "alpha"):
      if k in entry and entry.get("preset") != inst_lib.ALPHA:
        _fail(f"{where}.{k}", entry[k], 'is taken by preset = "alpha" only')
    label = entry.get("name")
    if label is not None and (not isinstance(label, str) or not label.strip()):
      _fail(f"{where}.name", label, "must be a non-empty string")
    rows = []  # (name, family name, family params, Family, means, source, group)
    if source == "means":
      fam = _family(where, entry, None)
      means = _check_means(f"{where}.means", fam[2], entry["means"], study)
      rows.append((label or f"instance-{i}", *fam, means, "listed"))
    elif source == "draw":
      fam = _family(where, entry, None)
      table = _draw(f"{where}.draw", entry["draw"], fam[2], study["seed"])
      if question(study) is not None:  # m < K, and no mean at the level
        for j, row in enumerate(table):
          _check_means(f"{where}.draw[{j}]", fam[2], row.tolist(), study)
      group = label or f"draw-{i}"
      rows += [(f"{group}-{j:0{len(str(len(table) - 1))}d}", *fam, row.tolist(), "drawn",
                group) for j, row in enumerate(table)]
    elif source == "preset":
      rows += _preset(where, entry, label, study)
    else:
      rows += _csv(where, entry, label, study, folder)
    if study["budget"] is not None and "max_steps" in entry:
      _fail(f"{where}.max_steps", entry["max_steps"], NO_STOP)
    own = {k: _int(f"{where}.{k}", entry[k]) for k in OVERRIDES if k in entry}
    for row in rows:
      name, fam_name, fam_params, _, means, src, *group = row
      out.append({"name": name, "family": fam_name, "family_params": fam_params,
                  "means": means, "source": src, "group": group[0] if group else name,
                  **own})
  seen = {}
  for k, inst in enumerate(out):
    if inst["name"] in seen:
      _fail("instances.name", inst["name"], f"names two instances (#{seen[inst['name']]} "
            f"and #{k}); give each a distinct name")
    seen[inst["name"]] = k
  return out


def _preset(where: str, entry: dict, label, study: dict) -> list:
  preset = entry["preset"]
  choices = list(inst_lib.PRESETS) + list(inst_lib.PRESET_GROUPS) + [inst_lib.ALPHA]
  _name(f"{where}.preset", preset, choices)
  if preset == inst_lib.ALPHA:
    arms = _int(f"{where}.arms", entry.get("arms"), 2, 100_000)
    alpha = _num(f"{where}.alpha", entry.get("alpha"))
    if alpha <= 0:
      _fail(f"{where}.alpha", alpha, "must be positive")
    fam = _family(where, entry, "gaussian")
    means = _check_means(f"{where}.preset", fam[2], inst_lib.alpha_means(arms, alpha), study)
    return [(label or f"alpha-{alpha:g}-K{arms}", *fam, means, "preset")]
  names = inst_lib.PRESET_GROUPS.get(preset, [preset])
  if label is not None and len(names) > 1:
    _fail(f"{where}.name", label, f"preset {preset!r} names {len(names)} instances; "
          "drop name")
  rows = []
  for name in names:
    fam_name, means = inst_lib.PRESETS[name]
    if entry.get("family", fam_name) != fam_name:
      _fail(f"{where}.family", entry["family"], f"preset {name!r} is {fam_name}")
    fam = _family(where, entry, fam_name)
    means = _check_means(f"{where}.preset", fam[2], list(means), study)
    rows.append((label or name, *fam, means, "preset"))
  return rows


def _csv(where: str, entry: dict, label, study: dict, folder: str) -> list:
  path = entry["csv"]
  if not isinstance(path, str):
    _fail(f"{where}.csv", path, "must be a file name")
  full = path if os.path.isabs(path) else os.path.join(folder, path)
  if not os.path.isfile(full):
    _fail(f"{where}.csv", path, f"no such file ({full})")
  try:
    table = inst_lib.read_csv(full)
  except (OSError, UnicodeDecodeError, ValueError) as e:
    _fail(f"{where}.csv", path, str(e))
  if not table:
    _fail(f"{where}.csv", path, "holds no instance")
  rows = []
  stem = label or os.path.splitext(os.path.basename(path))[0]
  for j, (name, fam_name, means) in enumerate(table):
    fam = _family(f"{where}.csv[{j}]", {**entry, **({"family": fam_name} if fam_name else {})},
                  None)
    means = _check_means(f"{where}.csv[{j}]", fam[2], means, study)
    rows.append((name or f"{stem}-{j}", *fam, means, "csv"))
  return rows


def _rules(entries, study: dict):
  """Yields (where, entry, name, [(params, Rule)]) of each [[rules]] entry, its
  sweeps expanded (the product of its lists), in spec order."""
  from jbai.rules import ALL, get
  if not isinstance(entries, list) or not entries:
    _fail("rules", entries, "give at least one [[rules]] entry")
  for i, entry in enumerate(entries):
    where = f"rules[{i}]"
    if not isinstance(entry, dict):
      _fail(where, entry, "must be a table")
    name = _name(f"{where}.name", entry.get("name"), ALL)
    accepted = inspect.signature(ALL[name]).parameters
    _known(where, entry, RULE_KEYS + tuple(accepted))
    for key, asked in (("m", "top = M"), ("level", "above = LEVEL")):  # OTHER_QUESTIONS'
      needed = key in accepted and accepted[key].default is inspect.Parameter.empty
      if needed and key not in entry and key not in question_params(study):
        _fail(f"{where}.name", name, f"samples for another question than the best arm, "
              f"built for its {key}: give [study] {asked}")
    swept = {k: _list(f"{where}.{k}", v) for k, v in entry.items() if k not in RULE_KEYS}
    rules = []
    for values in itertools.product(*swept.values()):
      params = dict(zip(swept, values))
      try:
        rules.append((params, get(name, **{**question_params(study), **params})))
      except (TypeError, ValueError) as e:
        _fail(where, params, str(e).splitlines()[0])
    yield where, entry, name, rules


def _settings(entries, study: dict, instances: list) -> list:
  """[{rule, params, threshold}]: every rule setting (sweeps expanded) with each
  threshold it runs with ("own": the rule's own stop), in spec order; for a
  budget study [{rule, params}] (`_budget_settings`)."""
  if study["budget"] is not None:
    return _budget_settings(entries, study, instances)
  from jbai import stops
  from jbai.thresholds import THRESHOLDS
  families = {}
  for inst in instances:
    families.setdefault((inst["family"], repr(sorted(inst["family_params"].items()))),
                        inst)
  asked = problem_of(question(study))
  out = []
  for where, entry, name, rules in _rules(entries, study):
    thresholds = entry.get("threshold")
    if thresholds is not None:
      thresholds = _list(f"{where}.threshold", thresholds)
      for t in thresholds:
        _name(f"{where}.threshold", t, list(THRESHOLDS) + [OWN])
    for params, rule in rules:
      if rule.budget is not None:
        _fail(f"{where}.name", name, "samples with a fixed budget and never stops; give "
              "[study] budget = [T, ...] to run it to a budget")
      own = stops.own_stop(rule)
      chosen = thresholds or ([OWN] if own is not None else study["threshold"])
      for t in chosen:
        if t == OWN and own is None:
          _fail(f"{where}.threshold", t, f"rule {name!r} has no stop of its own; use "
                f"{list(THRESHOLDS)}")
        stop = own if t == OWN else None
        if asked is not None:
          try:
            stop = stops.with_problem(rule, stop if t == OWN else t, asked)
          except ValueError as e:
            _fail(f"{where}.threshold", t, str(e).splitlines()[0])
        if study["eps_good"] is not None:
          from jbai.stops.eps_good import with_eps
          try:
            stop = with_eps(rule, None if t == OWN else t, study["eps_good"])
          except ValueError as e:
            _fail(f"{where}.threshold", t, str(e).splitlines()[0])
        for inst in families.values():
          _check_rule(where, rule, t, inst, asked)
          _check_slack("study" if study["eps_good"] is not None else where, stop, inst)
        out.append({"rule": name, "params": params, "threshold": t})
  keys = [(s["rule"], repr(sorted(s["params"].items())), s["threshold"]) for s in out]
  for k in keys:
    if keys.count(k) > 1:
      _fail("rules", k[0], f"runs the setting {k[1]} with threshold {k[2]!r} twice")
  return out


def _budget_settings(entries, study: dict, instances: list) -> list:
  """[{rule, params}] of a budget study: every rule setting, each checked to run
  to every budget on every instance's family and number of arms."""
  shapes = {}  # the first instance of each family and K
  for inst in instances:
    shapes.setdefault((inst["family"], repr(sorted(inst["family_params"].items())),
                       len(inst["means"])), inst)
  out = []
  for where, entry, name, rules in _rules(entries, study):
    if "threshold" in entry:
      _fail(f"{where}.threshold", entry["threshold"], NO_STOP)
    for params, rule in rules:
      for inst in shapes.values():
        _check_budget_rule(where, rule, study, inst)
      out.append({"rule": name, "params": params})
  keys = [(s["rule"], repr(sorted(s["params"].items()))) for s in out]
  for k in keys:
    if keys.count(k) > 1:
      _fail("rules", k[0], f"runs the setting {k[1]} twice")
  return out


def _check_budget_rule(where: str, rule, study: dict, inst: dict) -> None:
  """Refuses a rule that cannot run to each budget of a study on an instance's
  family and number of arms (`jbai.core.budget.check_rule`, `check_budget`): one
  whose sampling needs delta, that refuses the family, or whose smallest budget
  (or K) is above one of the study's, or that does not sample for its question."""
  import jax
  from jbai.families import get as get_family
  from jbai.core.budget import check_budget, check_rule
  family, num_arms = get_family(inst["family"], **inst["family_params"]), len(inst["means"])
  try:
    with jax.enable_x64(study["dtype"] == "float64"):  # the counts the trials run with
      check_rule(family, rule, num_arms, problem_of(question(study)))
      for t in study["budget"]:
        check_budget(rule, t, num_arms)
  except (TypeError, ValueError) as e:
    _fail(f"{where}.name", rule.name, f"on instance {inst['name']!r} ({inst['family']}, "
          f"K = {num_arms}): {str(e).splitlines()[0]}")


def question_params(study: dict) -> dict:
  """The parameters of a study's question that rules are built for (`jbai.rules.get`
  passes each only to the rules that take it): {"eps_good": eps} for eps-good
  answers, {"m": m} for the top m, {"level": level} above a level; else {}."""
  if study.get("eps_good") is not None:
    return {"eps_good": study["eps_good"]}
  asked = question(study) or {}
  return {{"top": "m", "above": "level"}[k]: v for k, v in asked.items()}


def _check_rule(where: str, rule, threshold: str, inst: dict, asked=None) -> None:
  """Refuses a rule, a threshold or a stop that does not apply to an instance's
  family, or a rule that does not sample for the question `asked` (a
  `jbai.problems.Problem`; None: the best arm)."""
  from jbai import stops
  from jbai.core.inputs import rule_refusal
  from jbai.families import get as get_family
  from jbai.thresholds import get as get_threshold, refusal
  family = get_family(inst["family"], **inst["family_params"])
  why = rule_refusal(family, rule, len(inst["means"]))
  stop = stops.own_stop(rule) if threshold == OWN else get_threshold(threshold)
  if why is None and threshold != OWN:
    why = refusal(stop, family)
  if why is None:
    why = stops.refusal(stop if asked is None else
                        stops.with_problem(rule, stop if threshold == OWN else threshold, asked),
                        rule, family)
  if why is None:
    try:
      from jbai.core.inputs import check_rule_arms
      check_rule_arms(family, rule, np.asarray([inst["means"]]))
    except ValueError as e:
      why = str(e).splitlines()[0]
  if why is not None:
    _fail(f"{where}.name", rule.name, f"with threshold {threshold!r} on instance "
          f"{inst['name']!r} ({inst['family']}): {why}")


def _check_slack(where: str, stop, inst: dict) -> None:
  """Refuses an eps-good slack at or beyond the width of an instance family's
  Theta, as `jbai.simulate` and the eps oracle do (`inputs.check_eps_slack`)."""
  from jbai.core.inputs import check_eps_slack
  from jbai.families import get as get_family
  try:
    check_eps_slack(get_family(inst["family"], **inst["family_params"]), stop)
  except ValueError as e:
    _fail(f"{where}.eps_good", dict(stop.params)["eps"], f"on instance {inst['name']!r}: "
          f"{str(e).splitlines()[0]}")


def resolve(spec: dict, folder: str = ".") -> dict:
  """The checked, resolved study of a spec dict (as read from TOML).

  Args:
    spec: {"study": {...}, "instances": [...], "rules": [...]}.
    folder: where CSV files named in the spec are looked up.

  Returns:
    {"study": the [study] settings with defaults, "instances": [{name, family,
    family_params, means, source, group}], "settings": [{rule, params,
    threshold}] ([{rule, params}] in a budget study)}: JSON data, what
    study.json records.

  Raises:
    SpecError: one line naming the key and the value.
  """
  if not isinstance(spec, dict):
    _fail("spec", spec, "must be a table")
  _known("", spec, ("study", "instances", "rules"))
  study = _study(spec.get("study", {}))
  instances = _instances(spec.get("instances"), study, folder)
  settings = _settings(spec.get("rules"), study, instances)
  return {"study": study, "instances": instances, "settings": settings}


def shipped() -> list:
  """The names of the studies shipped with jbai (jbai/studies/shipped/NAME.toml)."""
  return sorted(f[:-5] for f in os.listdir(SHIPPED) if f.endswith(".toml"))


def shipped_spec(name: str) -> dict:
  """The spec dict of the shipped study `name`, as its TOML file reads."""
  with open(os.path.join(SHIPPED, f"{_name('study', name, shipped())}.toml"), "rb") as f:
    return tomllib.load(f)


def is_toml_text(text: str) -> bool:
  """Whether `load` reads the string `text` as TOML text rather than a file's path
  or a shipped study's name: an existing file is always a path (whatever its name
  holds: '=', spaces, a newline); any other string is TOML text when it holds a
  newline (a spec's [[instances]] and [[rules]] take two lines at least), and a
  path or a shipped study's name otherwise.

  Example:
    >>> is_toml_text("runs/seed=1/spec.toml")
    False
  """
  return "\n" in text and not os.path.isfile(text)


def load(spec_or_path) -> dict:
  """Reads a spec and resolves it.

  Args:
    spec_or_path: a dict; or a string (or path-like): an existing file's path,
      always (`is_toml_text`); else TOML text if it holds a newline; else a
      shipped study's name (`shipped`) or the path of a file that is missing.

  Raises:
    SpecError: for a file that cannot be read or parsed, and every bad value
      (`resolve`), prefixed with the file's name.
  """
  if isinstance(spec_or_path, dict):
    return resolve(spec_or_path)
  path = os.fspath(spec_or_path)
  text, folder, prefix = path, ".", ""
  if not is_toml_text(path):
    prefix = f"{path}: "
    if not os.path.isfile(path) and path in shipped():
      path = os.path.join(SHIPPED, f"{path}.toml")
    try:
      with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
      hint = (f"; or name a shipped study: {', '.join(shipped())}"
              if isinstance(e, FileNotFoundError) else "")
      raise SpecError(f"{prefix}cannot read the spec ({getattr(e, 'strerror', None) or e})"
                      f"{hint}") from None
    folder = os.path.dirname(os.path.abspath(path))
  try:
    return resolve(tomllib.loads(text), folder)
  except tomllib.TOMLDecodeError as e:
    raise SpecError(f"{prefix}not TOML: {str(e).splitlines()[0]}") from None
  except SpecError as e:
    raise SpecError(f"{prefix}{e}") from None
