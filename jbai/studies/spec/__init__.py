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

One concept a module: `checks` (`SpecError`, the checks of one value), `section`
([study]), `instances` ([[instances]]), `rules` ([[rules]], their settings),
`questions` (the study's question) and `loading` (`resolve`, `load`, the shipped
studies).
"""

from jbai.studies.spec.checks import SpecError
from jbai.studies.spec.instances import DRAW_KEYS, INSTANCE_KEYS, OVERRIDES, SOURCES
from jbai.studies.spec.loading import SHIPPED, is_toml_text, load, resolve, shipped, shipped_spec
from jbai.studies.spec.questions import QUESTION_KEYS, problem_of, question, study_problem
from jbai.studies.spec.rules import OWN, RULE_KEYS
from jbai.studies.spec.section import DTYPES, NO_STOP, SEED_MAX, STOP_KEYS, STUDY_DEFAULTS

__all__ = ["DRAW_KEYS", "DTYPES", "INSTANCE_KEYS", "NO_STOP", "OVERRIDES", "OWN", "QUESTION_KEYS",
           "RULE_KEYS", "SEED_MAX", "SHIPPED", "SOURCES", "STOP_KEYS", "STUDY_DEFAULTS",
           "SpecError", "is_toml_text", "load", "problem_of", "question", "study_problem",
           "resolve", "shipped", "shipped_spec"]
