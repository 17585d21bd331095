"""Figures with matplotlib, imported lazily (the optional extra `plot`).

`pyplot()` returns matplotlib.pyplot on the non-interactive Agg backend, or None
(after printing once why) when matplotlib is not installed; every figure of the
study and of the paper's reproduction is then skipped and the CSV files are still
written.
"""

import sys

from jbai.host.atomic import atomic_write

_WARNED = []


def pyplot():
  """matplotlib.pyplot (Agg backend), or None when matplotlib is missing."""
  try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
  except ImportError:
    if not _WARNED:
      sys.stderr.write("matplotlib is not installed (pip install 'jbai[plot]'): "
                       "figures are skipped, the CSV files are written\n")
      _WARNED.append(True)
    return None
  return plt


def grid(plt, n: int, width: float = 5.0, height: float = 3.6):
  """A figure with n panels (1 x n for n <= 2, else 2 columns)."""
  cols = n if n <= 2 else 2
  rows = (n + cols - 1) // cols
  fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows),
                           squeeze=False)
  flat = list(axes.ravel())
  for ax in flat[n:]:
    ax.set_visible(False)
  return fig, flat[:n]


def save(plt, fig, path: str) -> str:
  """Saves a PNG atomically (`jbai.host.atomic.atomic_write`) and closes the figure;
  returns the path."""
  fig.tight_layout()
  try:
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=110), binary=True)
  finally:
    plt.close(fig)
  return path


COLORS = {"tcb": "C0", "itcb": "C1", "always-top": "C3", "t3c": "C2", "ebtc": "C4",
          "tstci": "C5", "ebtci": "C6", "fws": "C7", "t3c-tuned": "C8", "tas-d": "C9",
          "ttts": "C9"}

NAMES = {"tcb": "TCB", "itcb": "ITCB", "always-top": "always-top", "t3c": "T3C",
         "ebtc": "EB-TC", "tstci": "TS-TCI", "ebtci": "EB-TCI", "fws": "FWS",
         "t3c-tuned": "T3C, beta tuned", "tas-d": "Track-and-Stop (D)",
         "tas-c": "Track-and-Stop (C)", "ttts": "TTTS", "uniform": "uniform"}


def name(rule: str) -> str:
  return NAMES.get(rule, rule)
