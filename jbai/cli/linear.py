"""The linear model on the command line: --arms, --theta, --sigma and --ridge.

`arms_matrix` reads --arms (rows inline, separated by ';', or a .npy / .csv file);
`linear_from_args` builds the linear family (`jbai.linear.linear_family`) and sets
the means to X theta, refusing in one line what does not make a linear bandit
(docs/guide/linear.md).
"""

import math
import os
from argparse import ArgumentTypeError

import numpy as np


def _row(row: str) -> list:
  """'1,-0.5' -> [1.0, -0.5]; one line naming the bad entry otherwise."""
  out = []
  for entry in row.split(","):
    try:
      out.append(float(entry))
    except ValueError:
      raise ArgumentTypeError(f"{entry.strip()!r} in --arms row {row!r} is not a number") \
          from None
  return out


def arms_matrix(text: str) -> list:
  """--arms: the arms' features, inline ('1,0;0,1;0.995,0.0998', rows separated by
  ';') or a .npy / .csv file of a [K, d] matrix; [[float]] rows of one length."""
  name = text.strip()
  if name.lower().endswith((".npy", ".csv")):
    if not os.path.isfile(name):
      raise ArgumentTypeError(f"--arms file {name!r} does not exist")
    try:
      x = np.load(name) if name.lower().endswith(".npy") else np.loadtxt(
          name, delimiter=",", ndmin=2)
    except (OSError, ValueError) as e:
      raise ArgumentTypeError(f"--arms file {name!r} cannot be read as a [K, d] "
                              f"matrix: {str(e).splitlines()[0]}") from None
    x = np.asarray(x)
    if x.ndim != 2 or not np.issubdtype(x.dtype, np.number):
      raise ArgumentTypeError(f"--arms file {name!r} holds shape {x.shape} "
                              f"(dtype {x.dtype}), not a [K, d] matrix of numbers")
    return x.astype(float).tolist()
  rows = [r for r in name.split(";")]
  out = []
  for i, row in enumerate(rows):
    if not row.strip():
      raise ArgumentTypeError(f"{text!r} has an empty row (row {i + 1} of "
                              f"{len(rows)}); separate rows by ';'")
    out.append(_row(row))
  widths = sorted({len(r) for r in out})
  if len(widths) > 1:
    raise ArgumentTypeError(f"the rows of --arms {text!r} have {widths[0]} and "
                            f"{widths[-1]} entries: give every arm d features")
  return out


def linear_from_args(args):
  """The linear family of --arms, --sigma and --ridge (`jbai.linear.linear_family`),
  and args.means set to X theta of --theta, checked (`jbai.linear.check_linear`:
  dimensions, a tied or duplicate best arm, features that do not span R^d).

  Raises:
    ValueError: one line, for --theta or --ridge without --arms or the reverse,
      --means or another family's option beside them, or a bad model.
  """
  from jbai.linear import linear_family, linear_means
  for flag, key in (("--arms", "arms"), ("--theta", "theta")):
    if getattr(args, key, None) is None:
      raise ValueError(f"a linear bandit needs both --arms and --theta; {flag} is missing")
  if getattr(args, "means", None) is not None:
    raise ValueError("--means does not go with --arms: the means are X theta (give --theta)")
  if args.family not in ("gaussian", "linear"):
    raise ValueError(f"--arms runs the linear model with Gaussian noise, not --family "
                     f"{args.family}")
  for name in ("lo", "hi", "shape"):
    if getattr(args, name, None) is not None:
      raise ValueError(f"the linear model takes no --{name}")
  if getattr(args, "unknown_variance", False):
    raise ValueError("the linear model's noise has a known sigma: --unknown-variance does "
                     "not go with --arms")
  sigma = getattr(args, "sigma", None)
  if sigma is not None and len(sigma) > 1:
    raise ValueError(f"the linear model takes one --sigma for every arm, got {len(sigma)} "
                     "values")
  options = {"sigma": None if sigma is None else sigma[0], "ridge": args.ridge}
  options = {k: v for k, v in options.items() if v is not None}
  for name, value in options.items():
    if not (math.isfinite(value) and value > 0):
      raise ValueError(f"--{name} must be a finite number > 0, got {value!r}")
  family = linear_family(args.arms, **options)
  d = len(args.arms[0])
  if len(args.theta) != d:
    raise ValueError(f"--theta has {len(args.theta)} entries and the arms {d} features: "
                     "give theta in R^d")
  args.means = [float(m) for m in linear_means(family, args.theta)]
  args.family = "linear"
  return family



__all__ = ["arms_matrix", "linear_from_args"]
