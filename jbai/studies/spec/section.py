"""A study spec's [study] section, checked and resolved: its defaults, seed,
trials, delta levels, thresholds, dtype, question (top, above, eps_good) and, for
a budget study, its budgets and checkpoints (docs/guide/study.md).
"""

import math

from jbai.studies.spec.checks import as_list, choice, fail, integer, known, number
from jbai.studies.spec.questions import QUESTION_KEYS

STUDY_DEFAULTS = {"name": "study", "seed": 0, "trials": 100, "delta": [0.1],
                  "threshold": ["gk16"], "max_steps": None, "dtype": "float32",
                  "eps_good": None, "top": None, "above": None, "description": "",
                  "budget": None, "checkpoints": None}
# The keys of a study whose trials stop, which a budget study has no use for.
# A stop's keys, which a budget study refuses (eps_good scores its recommendation there).
STOP_KEYS = ("delta", "threshold", "max_steps")
NO_STOP = "has no use in a budget study (study.budget), whose trials run to the budget " \
          "without a stop: drop it"
DTYPES = ("float32", "float64")
SEED_MAX = 2 ** 63


def resolve_study(table: dict) -> dict:
  """The checked [study] table, its defaults filled in (`STUDY_DEFAULTS`)."""
  known("study", table, STUDY_DEFAULTS)
  if table.get("budget") is not None:  # a budget study: a stop's keys first
    for key in STOP_KEYS:
      if key in table:
        fail(f"study.{key}", table[key], NO_STOP)
  s = {**STUDY_DEFAULTS, **table}
  if not isinstance(s["name"], str) or not s["name"].strip():
    fail("study.name", s["name"], "must be a non-empty string")
  if not isinstance(s["description"], str):
    fail("study.description", s["description"], "must be a string")
  s["seed"] = integer("study.seed", s["seed"], 0, SEED_MAX - 1)
  s["trials"] = integer("study.trials", s["trials"])
  if s["max_steps"] is not None:  # None: each rule's default cap (inputs.default_max_steps)
    s["max_steps"] = integer("study.max_steps", s["max_steps"])
  s["dtype"] = choice("study.dtype", s["dtype"], DTYPES)
  if s["eps_good"] is not None:  # eps-good answers: the eps-GLLR stop, T*_eps
    s["eps_good"] = number("study.eps_good", s["eps_good"])
    if not 0 <= s["eps_good"] < math.inf:
      fail("study.eps_good", s["eps_good"], "must be a finite number >= 0")
  _question(s)
  deltas = as_list("study.delta", s["delta"])
  for d in deltas:
    if not 0 < number("study.delta", d) < 1:
      fail("study.delta", d, "must be in (0, 1)")
  if len(set(deltas)) < len(deltas):
    fail("study.delta", s["delta"], "repeats a level")
  s["delta"] = [float(d) for d in deltas]
  from jbai.thresholds import THRESHOLDS
  s["threshold"] = [choice("study.threshold", t, THRESHOLDS)
                    for t in as_list("study.threshold", s["threshold"])]
  return _budget(s)


def _question(s: dict) -> None:
  """Checks [study] top (a whole number >= 1; m < K is checked on each instance)
  and above (a finite level; Theta and ties on each instance): at most one, and
  not with eps_good (an eps-good best arm)."""
  given = [k for k in QUESTION_KEYS if s[k] is not None]
  if len(given) > 1:
    fail("study.above", s["above"], "top and above ask two different questions: give one")
  if given and s["eps_good"] is not None:
    fail(f"study.{given[0]}", s[given[0]], "eps_good asks for an eps-good best arm; "
         "it does not go with another question: drop one")
  if s["top"] is not None:
    s["top"] = integer("study.top", s["top"])
  if s["above"] is not None:
    s["above"] = number("study.above", s["above"])


def _budget(s: dict) -> dict:
  """The [study] settings of a budget study: its budgets (sorted), its count of
  log-spaced checkpoints (default `jbai.core.budget.DEFAULT_CHECKPOINTS`), and no
  stop (delta, threshold, eps_good and max_steps, refused by `resolve_study`, are None)."""
  if s["budget"] is None:
    if s["checkpoints"] is not None:
      fail("study.checkpoints", s["checkpoints"], "records times of a run to a budget; "
           "give [study] budget")
    return s
  import jax
  from jbai.core.inputs import max_steps_limit
  from jbai.core.budget import DEFAULT_CHECKPOINTS
  with jax.enable_x64(s["dtype"] == "float64"):  # the counts the trials run with
    limit = max_steps_limit()
  budgets = [integer("study.budget", t, 1, limit) for t in as_list("study.budget", s["budget"])]
  if len(set(budgets)) < len(budgets):
    fail("study.budget", s["budget"], "repeats a budget")
  count = DEFAULT_CHECKPOINTS if s["checkpoints"] is None else s["checkpoints"]
  return {**s, "budget": sorted(budgets),
          "checkpoints": integer("study.checkpoints", count, 0, 10_000),
          **{key: None for key in STOP_KEYS}}
