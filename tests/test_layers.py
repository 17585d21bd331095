"""The package's layers: every module imports only from its own layer or below,
and no two modules import each other (directly or through others)."""

import ast
import os

import jbai

PACKAGE = os.path.dirname(os.path.abspath(jbai.__file__))

# Lowest first. A module belongs to the first entry that is it or its package.
LAYERS = [
    ("jbai.random", "jbai.builders"),
    ("jbai.families",),
    ("jbai.state", "jbai.transport", "jbai.eps_transport", "jbai.checks", "jbai.ties"),
    ("jbai.bounded",),  # laws in [0, 1], KL_inf, its GLR and oracle (on state, transport)
    ("jbai.thresholds",),
    ("jbai.oracle",),
    ("jbai.variance",),  # per-arm-variance Gaussian costs, thresholds and oracles (issue 76)
    ("jbai.linear",),  # the linear model's math: above the oracle's helpers
    ("jbai.problems",),
    ("jbai.stops",),
    ("jbai.rules",),
    ("jbai.core",),  # jbai.core.assembly puts a run together from all of the above
    ("jbai.host",),
    ("jbai.studies",),
    ("jbai.reproduce",),
    ("jbai.cli",),
    ("jbai",),
]


def layer(module: str) -> int:
  for i, names in enumerate(LAYERS):
    if any(module == n or module.startswith(n + ".") for n in names if n != "jbai"):
      return i
  assert module == "jbai", module
  return len(LAYERS) - 1


def modules() -> dict:
  """{module name: path} of every module of the package."""
  found = {}
  for folder, _, names in os.walk(PACKAGE):
    for name in names:
      if name.endswith(".py"):
        rel = os.path.relpath(os.path.join(folder, name), os.path.dirname(PACKAGE))
        module = rel[:-3].replace(os.sep, ".")
        found[module[:-len(".__init__")] if module.endswith(".__init__") else module] = (
            os.path.join(folder, name))
  return found


def imports(path: str, known: dict) -> set:
  """The package's modules that the file imports, anywhere in it (functions too)."""
  out = set()
  for node in ast.walk(ast.parse(open(path).read())):
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      # `from package import module` imports the module; `from module import name`
      # the module.
      names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known
               else node.module for a in node.names]
    else:
      continue
    out.update(n for n in names if n in known)
  return out


def graph() -> dict:
  known = modules()
  return {m: imports(p, known) - {m} for m, p in known.items()}


def test_no_module_imports_upwards():
  upwards = sorted((m, d) for m, deps in graph().items() for d in deps
                   if layer(d) > layer(m))
  assert upwards == []


def test_no_import_cycles():
  edges = graph()
  # A package's __init__ gathers its own modules: those edges are not cycles.
  edges = {m: {d for d in deps if not (m.startswith(d + ".") and d != "jbai")}
           for m, deps in edges.items()}
  edges = {m: {d for d in deps if not d.startswith(m + ".")} for m, deps in edges.items()}
  state, cycles = {}, []

  def visit(m, path):
    state[m] = "open"
    for d in sorted(edges.get(m, ())):
      if state.get(d) == "open":
        cycles.append(path[path.index(d):] + [d])
      elif d not in state:
        visit(d, path + [d])
    state[m] = "done"

  for m in sorted(edges):
    if m not in state:
      visit(m, [m])
  assert cycles == []


def test_no_private_name_is_imported_from_another_module():
  """A helper that two modules share is public in the module that owns it: no
  `from jbai.x import _name` (issue 74)."""
  private = []
  for module, path in modules().items():
    for node in ast.walk(ast.parse(open(path).read())):
      if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jbai"):
        private += [(module, node.module, a.name) for a in node.names
                    if a.name.startswith("_")]
  assert private == []


def test_no_module_over_450_lines_and_no_function_over_120():
  """One concept per module: jbai's modules stay under 450 lines and its
  functions (docstrings counted) under 120 (issue 74)."""
  long_modules, long_functions = [], []
  for module, path in modules().items():
    source = open(path).read()
    if len(source.splitlines()) > 450:
      long_modules.append(module)
    long_functions += [f"{module}.{node.name}" for node in ast.walk(ast.parse(source))
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and node.end_lineno - node.lineno + 1 > 120]
  assert (long_modules, long_functions) == ([], [])
