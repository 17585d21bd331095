"""A study spec's [[instances]]: listed means, drawn blocks, presets and CSV
files, each checked for its family and the study's question (docs/guide/study.md).
"""

import inspect
import math
import os
from typing import Optional

import numpy as np

from jbai.studies import instances as inst_lib
from jbai.studies.spec.checks import choice, fail, integer, known, number
from jbai.studies.spec.questions import problem_of, question
from jbai.studies.spec.section import NO_STOP, SEED_MAX

INSTANCE_KEYS = ("name", "family", "family_params", "means", "draw", "preset", "csv",
                 "arms", "alpha", "trials", "max_steps")
OVERRIDES = ("trials", "max_steps")  # an instance entry's own values of the study's
SOURCES = ("means", "draw", "preset", "csv")
DRAW_KEYS = ("count", "arms", "low", "high", "mean", "sd", "min_gap", "seed")


def _family(where: str, entry: dict, default: Optional[str]):
  """(name, params, Family) of an instance entry."""
  from jbai.families import BUILTIN, get
  name = entry.get("family", default)
  if name is None:
    fail(f"{where}.family", None, f"is required; choose from {sorted(BUILTIN)}")
  choice(f"{where}.family", name, BUILTIN)
  params = entry.get("family_params", {})
  if not isinstance(params, dict):
    fail(f"{where}.family_params", params, "must be a table")
  accepted = inspect.signature(BUILTIN[name]).parameters
  for k, v in params.items():
    if k not in accepted:
      fail(f"{where}.family_params.{k}", v, f"unknown parameter of the {name} family; "
           f"choose from {list(accepted)}")
    # Every family parameter is a number (sigma, shape, lo, hi, grid_size, ...);
    # +-inf passes, for an unbounded Theta, and the family checks the rest.
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
      fail(f"{where}.family_params.{k}", v, "must be a number")
  try:
    return name, dict(params), get(name, **params)
  except (TypeError, ValueError) as e:
    fail(f"{where}.family_params", params, str(e).splitlines()[0])


def _check_means(where: str, family, means, study: dict) -> list:
  """The means as floats, checked for the family and the study's question (a
  unique best arm; with top or above, that question's identifiability) in the
  study's dtype."""
  from jbai.core.inputs import check_table
  if not isinstance(means, list) or not all(
      isinstance(m, (int, float)) and not isinstance(m, bool) for m in means):
    fail(where, means, "must be a list of numbers")
  try:
    check_table(family, means, np.dtype(study["dtype"]), problem_of(question(study)))
  except (TypeError, ValueError) as e:
    fail(where, means, str(e).splitlines()[0])
  return [float(m) for m in means]


def _draw(where: str, draw, family, seed: int) -> np.ndarray:
  known(where, draw, DRAW_KEYS)
  count = integer(f"{where}.count", draw.get("count"), 1, 100_000)
  arms = integer(f"{where}.arms", draw.get("arms"), 2, 100_000)
  uniform = "low" in draw or "high" in draw
  gaussian = "mean" in draw or "sd" in draw
  if uniform == gaussian:
    fail(where, draw, "give low and high (uniform means) or mean and sd (Gaussian means)")
  keys = ("low", "high") if uniform else ("mean", "sd")
  for k in keys:
    if k not in draw:
      fail(f"{where}.{k}", None, f"is required with {keys[1 - keys.index(k)]}")
  got = {k: number(f"{where}.{k}", draw[k]) for k in keys}
  if uniform and not got["low"] < got["high"]:
    fail(f"{where}.high", draw["high"], f"must be above low = {draw['low']}")
  if gaussian and not got["sd"] > 0:
    fail(f"{where}.sd", draw["sd"], "must be positive")
  if uniform:  # uniform means on [low, high]: every one of them must be a mean of the family
    theta = f"outside Theta = [{family.lo}, {family.hi}] of the {family.name} family"
    if not family.lo <= got["low"] <= family.hi:
      fail(f"{where}.low", draw["low"], f"is {theta}")
    if not family.lo <= got["high"] <= family.hi:
      fail(f"{where}.high", draw["high"], f"is {theta}")
  min_gap = number(f"{where}.min_gap", draw.get("min_gap", 0.0))
  if min_gap < 0:
    fail(f"{where}.min_gap", min_gap, "must be >= 0")
  draw_seed = integer(f"{where}.seed", draw.get("seed", seed), 0, SEED_MAX - 1)
  try:
    return inst_lib.draw_means(count, arms, draw_seed, family.lo, family.hi,
                               min_gap=min_gap, **got)
  except inst_lib.DrawError as e:
    # Named by the constraint that refused most draws: Theta (mean and sd) or min_gap.
    key = "min_gap" if e.cause == "min_gap" else ("mean" if gaussian else "low")
    fail(f"{where}.{key}", draw.get(key, min_gap), str(e))


def resolve_instances(entries, study: dict, folder: str) -> list:
  """[{name, family, family_params, means, source, group}] in spec order, with the
  entry's trials and max_steps where it gives them."""
  if not isinstance(entries, list) or not entries:
    fail("instances", entries, "give at least one [[instances]] entry")
  out = []
  for i, entry in enumerate(entries):
    where = f"instances[{i}]"
    known(where, entry, INSTANCE_KEYS)
    sources = [k for k in SOURCES if k in entry]
    if len(sources) != 1:
      fail(where, sorted(entry), f"give exactly one of {list(SOURCES)}")
    source = sources[0]
    for k in ("arms", "alpha"):
      if k in entry and entry.get("preset") != inst_lib.ALPHA:
        fail(f"{where}.{k}", entry[k], 'is taken by preset = "alpha" only')
    label = entry.get("name")
    if label is not None and (not isinstance(label, str) or not label.strip()):
      fail(f"{where}.name", label, "must be a non-empty string")
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
      fail(f"{where}.max_steps", entry["max_steps"], NO_STOP)
    own = {k: integer(f"{where}.{k}", entry[k]) for k in OVERRIDES if k in entry}
    for row in rows:
      name, fam_name, fam_params, _, means, src, *group = row
      out.append({"name": name, "family": fam_name, "family_params": fam_params,
                  "means": means, "source": src, "group": group[0] if group else name,
                  **own})
  seen = {}
  for k, inst in enumerate(out):
    if inst["name"] in seen:
      fail("instances.name", inst["name"], f"names two instances (#{seen[inst['name']]} "
           f"and #{k}); give each a distinct name")
    seen[inst["name"]] = k
  return out


def _preset(where: str, entry: dict, label, study: dict) -> list:
  preset = entry["preset"]
  choices = list(inst_lib.PRESETS) + list(inst_lib.PRESET_GROUPS) + [inst_lib.ALPHA]
  choice(f"{where}.preset", preset, choices)
  if preset == inst_lib.ALPHA:
    arms = integer(f"{where}.arms", entry.get("arms"), 2, 100_000)
    alpha = number(f"{where}.alpha", entry.get("alpha"))
    if alpha <= 0:
      fail(f"{where}.alpha", alpha, "must be positive")
    fam = _family(where, entry, "gaussian")
    means = _check_means(f"{where}.preset", fam[2], inst_lib.alpha_means(arms, alpha), study)
    return [(label or f"alpha-{alpha:g}-K{arms}", *fam, means, "preset")]
  names = inst_lib.PRESET_GROUPS.get(preset, [preset])
  if label is not None and len(names) > 1:
    fail(f"{where}.name", label, f"preset {preset!r} names {len(names)} instances; "
         "drop name")
  rows = []
  for name in names:
    fam_name, means = inst_lib.PRESETS[name]
    if entry.get("family", fam_name) != fam_name:
      fail(f"{where}.family", entry["family"], f"preset {name!r} is {fam_name}")
    fam = _family(where, entry, fam_name)
    means = _check_means(f"{where}.preset", fam[2], list(means), study)
    rows.append((label or name, *fam, means, "preset"))
  return rows


def _csv(where: str, entry: dict, label, study: dict, folder: str) -> list:
  path = entry["csv"]
  if not isinstance(path, str):
    fail(f"{where}.csv", path, "must be a file name")
  full = path if os.path.isabs(path) else os.path.join(folder, path)
  if not os.path.isfile(full):
    fail(f"{where}.csv", path, f"no such file ({full})")
  try:
    table = inst_lib.read_csv(full)
  except (OSError, UnicodeDecodeError, ValueError) as e:
    fail(f"{where}.csv", path, str(e))
  if not table:
    fail(f"{where}.csv", path, "holds no instance")
  rows = []
  stem = label or os.path.splitext(os.path.basename(path))[0]
  for j, (name, fam_name, means) in enumerate(table):
    fam = _family(f"{where}.csv[{j}]", {**entry, **({"family": fam_name} if fam_name else {})},
                  None)
    means = _check_means(f"{where}.csv[{j}]", fam[2], means, study)
    rows.append((name or f"{stem}-{j}", *fam, means, "csv"))
  return rows
