"""Which source lines XLA:CPU spreads over several kernels of a step.

Compiles the chunk program of `benchmarks/step_profile.py` for a rule and instance
(--lanes lanes, one step per loop iteration), takes the while loop's body off the
conditionals (the common path of a step: the refill and `jbai.ties`'s rare
branches sit in conditionals) and prints:
  - the number of fusions (kernels) in it, and in the whole program;
  - each (source line, op) that appears in more than one fusion: a producer that
    XLA duplicates into several kernels, or one expression computed twice;
  - the source lines by the number of fusions they appear in.
The source lines come from the HLO's stack frames (`.compile().as_text()`).

Usage: python benchmarks/hlo_fusions.py [--rule tcb] [--instance gaussian-20]
         [--lanes 256] [--top 25]
"""

import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_profile  # noqa: E402
from compiled_loop import INSTANCES  # noqa: E402

import jbai  # noqa: E402

TRIVIAL = {"parameter", "constant", "broadcast", "bitcast", "reshape", "convert", "copy",
           "get-tuple-element", "tuple", "slice", "iota", "select", "compare"}


def tables(lines: list) -> dict:
  """{name: {id: text}} of the HLO text's FileNames, FunctionNames, FileLocations
  and StackFrames tables."""
  out = {}
  for name in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
    i, rows = lines.index(name), {}
    for line in lines[i + 1:]:
      if not line.strip():
        break
      key, value = line.split(" ", 1)
      rows[int(key)] = value
    out[name] = rows
  return out


def source(t: dict, frame: int) -> str:
  """'file.py:line function' of a stack frame's innermost location."""
  fields = dict(re.findall(r"(\w+)=(\d+)", t["StackFrames"][frame]))
  loc = dict(re.findall(r"(\w+)=(\d+)", t["FileLocations"][int(fields["file_location_id"])]))
  path = t["FileNames"][int(loc["file_name_id"])].strip('"').split("/")[-1]
  func = t["FunctionNames"][int(loc["function_name_id"])].strip('"').split(".")[-1]
  return f"{path}:{loc['line']} {func}"


def analyse(text: str, top: int) -> None:
  lines = text.splitlines()
  t = tables(lines)
  comps = {}
  for block in re.split(r"\n(?=\S)", text):
    m = re.match(r"(?:ENTRY )?%([\w.\-]+) ", block)
    if m:
      comps[m.group(1)] = block
  entry = next(n for n, b in comps.items() if b.startswith("ENTRY"))

  def callees(block):  # computations called off the conditionals
    found = []
    for line in block.splitlines()[1:]:
      if " conditional(" not in line:
        found += re.findall(r"(?:calls|body|condition|to_apply)=%([\w.\-]+)", line)
    return found

  def reach(root):
    seen, stack = set(), [root]
    while stack:
      n = stack.pop()
      if n not in seen and n in comps:
        seen.add(n)
        stack += callees(comps[n])
    return seen

  bodies = re.findall(r"while\(.*?body=%([\w.\-]+)", comps[entry])
  body = max(bodies, key=lambda b: len(reach(b)))
  fusions = sorted(n for n in reach(body) if n.startswith("fused_computation"))
  every = [n for n in comps if n.startswith("fused_computation")]
  print(f"{len(fusions)} fusions in a step off the conditionals ({len(every)} in the program)")
  ops, lines_in = collections.Counter(), collections.Counter()
  for n in fusions:
    seen = set()
    for line in comps[n].splitlines()[1:]:
      m = re.search(r"=\s*\S+\s+([\w-]+)\(.*stack_frame_id=(\d+)", line)
      if m and m.group(1) not in TRIVIAL:
        seen.add((source(t, int(m.group(2))), m.group(1)))
    ops.update(seen)
    lines_in.update({where for where, _ in seen})
  print("\n(source line, op) in several fusions:")
  for (where, op), count in ops.most_common(top):
    if count > 1:
      print(f"{count:>4}  {where}  {op}")
  print("\nsource lines by the fusions they appear in:")
  for where, count in lines_in.most_common(top):
    print(f"{count:>4}  {where}")


def step_arguments(doc: str, top: int) -> argparse.ArgumentParser:
  """The options of a script about one rule's step: --rule, --instance, --lanes, --top."""
  parser = argparse.ArgumentParser(description=doc.splitlines()[0])
  parser.add_argument("--rule", default="tcb")
  parser.add_argument("--instance", default="gaussian-20", choices=sorted(INSTANCES))
  parser.add_argument("--lanes", type=int, default=256)
  parser.add_argument("--top", type=int, default=top)
  return parser


def steady_chunk(args):
  """(means, the chunk program and its arguments) of `step_profile.setup` for the
  options' rule and instance, with delta = 1e-30 so that no trial stops."""
  family_name, means = INSTANCES[args.instance]
  family, rule = jbai.families.get(family_name), jbai.rules.get(args.rule)
  return means, step_profile.setup(family, rule, means, args.lanes, 1, 1e-30)


def main():
  args = step_arguments(__doc__, 25).parse_args()
  _, (fn, pool, config, total) = steady_chunk(args)
  print(f"{args.rule} on {args.instance}, {args.lanes} lanes, one step per iteration")
  analyse(fn.lower(pool, config, total).compile().as_text(), args.top)


if __name__ == "__main__":
  main()
