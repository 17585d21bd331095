"""Every example of the documentation runs as printed.

Each ```python block of README.md and of docs/**/*.md runs: the blocks of one page in
order, in one fresh namespace (a page is one test), followed by a few checks of what
they compute. Markers in the Markdown, as HTML comments that the site does not show:

  <!-- test: skip (why) -->  on the line before a block: the block is only compiled,
                              not run (the multi-host example needs a cluster);
  <!-- test: slow (why) -->  anywhere in a page: the page runs in the slow tier (a
                              large example for the reader; keep a cheaper sibling
                              in the fast tier).

Each `jbai ...` command line of a ```bash block must parse with the command line's own
parser (nothing runs).
"""

import os
import pathlib
import re
import shlex

import jax
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)
SKIP = re.compile(r"<!--\s*test:\s*skip\b[^>]*-->\s*$")
SLOW = re.compile(r"<!--\s*test:\s*slow\b[^>]*-->")


def name(page: pathlib.Path) -> str:
  return page.relative_to(ROOT).as_posix()


def blocks(page: pathlib.Path, lang: str) -> list:
  """(line number, code, skipped) of each ```lang block of the page, in order."""
  text = page.read_text(encoding="utf-8")
  out, end = [], 0
  for m in FENCE.finditer(text):
    if m.group("lang") == lang:
      before = text[end:m.start()]
      indent = m.group("indent")
      body = "".join(line[len(indent):] if line.startswith(indent) else line
                     for line in m.group("body").splitlines(keepends=True))
      out.append((text.count("\n", 0, m.start()) + 2, body, bool(SKIP.search(before))))
    end = m.end()
  return out


def _example_pages():
  for page in PAGES:
    if blocks(page, "python"):
      slow = SLOW.search(page.read_text(encoding="utf-8"))
      yield pytest.param(page, id=name(page), marks=[pytest.mark.slow] if slow else [])


# --------------------------------------------------------------- checks per page

def _check_differentiation(ns):
  # jax.grad of the surrogate is the estimator itself, and it has the right signs.
  est, grad = ns["est"], ns["grad"]
  np.testing.assert_allclose(grad, est.grad_mean_tau["means"], rtol=1e-10)
  assert grad[0] < 0 < grad[1]  # a larger best mean shortens the trials
  assert np.isfinite(ns["fd"].mean_tau)


def _check_readme(ns):
  _check_differentiation(ns)
  assert ns["res"].tau.shape == (2, 100, 2)
  np.testing.assert_allclose(ns["dgamma"].sum(), 0, atol=1e-9)  # a shift changes nothing


def _check_index(ns):
  np.testing.assert_allclose(ns["w"], [1 / 3] + [1 / 6] * 4, atol=1e-4)
  assert ns["res"].tau.shape == (20,)


def _check_oracle(ns):
  assert bool(np.all(ns["info"].converged))
  assert float(ns["gamma"] / ns["gamma_beta"]) > 1  # beta = 0.5 is not w_top = 1/3


def _check_simulation(ns):
  assert ns["res"].tau.shape == (2, 100, 2)
  assert ns["tr"].gamma_t.shape[:1] == (20,)


def _check_custom_family(ns):
  res = ns["res"]
  assert res.tau.shape == (100,) and not res.hit_cap.any()
  assert np.mean(res.correct) >= 0.9


def _check_embedding(ns):
  assert 0 <= int(ns["arm"]) < 3 and ns["arms"].shape == (8,)
  assert int(ns["top"]) == 0


CHECKS = {
    "README.md": _check_readme,
    "docs/index.md": _check_index,
    "docs/guide/oracle.md": _check_oracle,
    "docs/guide/simulation.md": _check_simulation,
    "docs/guide/custom-family.md": _check_custom_family,
    "docs/guide/embedding.md": _check_embedding,
    "docs/guide/gradients.md": _check_differentiation,
}


@pytest.fixture
def quiet_cache(monkeypatch):
  """`jbai.enable_compilation_cache()` in an example leaves the test process as it
  is: where no cache is configured, the call finds it switched off (it would
  otherwise turn one on in the user's home for the rest of the session)."""
  if not jax.config.jax_compilation_cache_dir:
    monkeypatch.setenv("JBAI_NO_COMPILATION_CACHE", "1")


@pytest.mark.parametrize("page", list(_example_pages()))
def test_examples_run(page, quiet_cache):
  x64 = jax.config.jax_enable_x64
  ns = {"__name__": "__docs__"}
  try:
    for line, code, skipped in blocks(page, "python"):
      program = compile(code, f"{name(page)}:{line}", "exec")
      if not skipped:
        exec(program, ns)  # noqa: S102 - the documentation's code, verbatim
  finally:
    jax.config.update("jax_enable_x64", x64)  # an example may switch it
  CHECKS.get(name(page), lambda ns: None)(ns)


def test_every_checked_page_exists():
  assert set(CHECKS) <= {name(page) for page in PAGES}


# --------------------------------------------------------------- command lines

def command_lines():
  """(page, line number, argv) of each `jbai ...` command in the ```bash blocks,
  including those after `&&` or `;`."""
  out = []
  for page in PAGES:
    for start, code, _ in blocks(page, "bash"):
      for i, line in enumerate(code.splitlines()):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&")
        lexer.whitespace_split, lexer.commenters = True, "#"
        parts, words = [], []
        for word in lexer:  # `;` and `&&` outside quotes end a command
          if word in (";", "&&"):
            parts, words = parts + [words], []
          else:
            words.append(word)
        for words in parts + [words]:
          if words and words[0] == "jbai":
            out.append((name(page), start + i, words[1:]))
  return out


def test_command_lines_parse():
  try:
    from jbai import cli
    parser = cli.build_parser()
  except (ImportError, AttributeError) as e:
    pytest.skip(f"the command line's parser is not importable as jbai.cli.build_parser: {e}")
  lines = command_lines()
  assert len(lines) >= 10
  commands = parser.get_default("commands") or ()
  join = getattr(cli, "join_negative_values", lambda argv: argv)
  for where, line, argv in lines:
    if not argv or (commands and argv[0] not in commands):
      argv = ["run"] + argv  # `jbai` alone, or `jbai --rule tcb`, means `jbai run ...`
    try:
      parser.parse_args(join(argv))
    except (SystemExit, ValueError) as e:  # argparse exits; jbai's parser raises UsageError
      pytest.fail(f"{where}:{line}: `jbai {' '.join(argv)}` does not parse: {e!r}")


def test_readme_links_exist():
  """The README is read on GitHub, outside the site's strict build: its relative
  links must name files that exist (anchors within the README too)."""
  text = (ROOT / "README.md").read_text(encoding="utf-8")
  anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
             for h in re.findall(r"^#+ (.*)$", text, re.M)}
  for target in re.findall(r"\]\(([^)\s]+)\)", text):
    if re.match(r"\w+://", target):
      continue
    path, _, anchor = target.partition("#")
    if path:
      assert (ROOT / path).exists(), f"README links to a missing file: {target}"
    else:
      assert anchor in anchors, f"README links to a missing heading: {target}"


def test_markers_are_known():
  """A misspelt marker would silently run a block meant to be skipped."""
  for page in PAGES:
    for marker in re.findall(r"<!--\s*test:\s*(\w+)", page.read_text(encoding="utf-8")):
      assert marker in ("skip", "slow"), f"{name(page)}: unknown marker {marker!r}"


if __name__ == "__main__":  # list what the tests would run
  for page in PAGES:
    print(name(page), len(blocks(page, "python")), "python blocks")
  print(len(command_lines()), "command lines")
  print(os.linesep.join(" ".join(map(str, c)) for c in command_lines()))
