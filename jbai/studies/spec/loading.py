"""Loading a study spec: a dict, a TOML file, TOML text or a shipped study's name,
resolved in full (docs/guide/study.md).
"""

import os
import tomllib

from jbai.studies.spec.checks import SpecError, choice, fail, known
from jbai.studies.spec.instances import resolve_instances
from jbai.studies.spec.rules import resolve_settings
from jbai.studies.spec.section import resolve_study

SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "shipped")


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
    fail("spec", spec, "must be a table")
  known("", spec, ("study", "instances", "rules"))
  study = resolve_study(spec.get("study", {}))
  instances = resolve_instances(spec.get("instances"), study, folder)
  settings = resolve_settings(spec.get("rules"), study, instances)
  return {"study": study, "instances": instances, "settings": settings}


def shipped() -> list:
  """The names of the studies shipped with jbai (jbai/studies/shipped/NAME.toml)."""
  return sorted(f[:-5] for f in os.listdir(SHIPPED) if f.endswith(".toml"))


def shipped_spec(name: str) -> dict:
  """The spec dict of the shipped study `name`, as its TOML file reads."""
  with open(os.path.join(SHIPPED, f"{choice('study', name, shipped())}.toml"), "rb") as f:
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
