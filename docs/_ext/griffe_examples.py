"""A griffe extension for the API reference: jbai's docstrings title their examples
"Example:" (as the Google style guide does), which griffe's Google parser reads as an
admonition, not as an examples section, so that the `>>>` lines would render as
Markdown text. This turns a line "Example:" (or "Example (some words):") into
"Examples:", so that they render as code. It changes nothing in the package."""

import re

import griffe

_EXAMPLE = re.compile(r"^(?P<indent>[ \t]*)Example(?:\s*\((?P<note>[^)]*)\))?:[ \t]*$", re.M)


def _examples(match: re.Match) -> str:
  indent, note = match.group("indent"), match.group("note")
  head = f"{indent}{note[0].upper()}{note[1:]}.\n\n" if note else ""
  return f"{head}{indent}Examples:"


class ExampleSections(griffe.Extension):
  """Renames "Example:" sections of docstrings to "Examples:" before parsing."""

  def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
    if obj.docstring is not None:
      obj.docstring.value = _EXAMPLE.sub(_examples, obj.docstring.value)
