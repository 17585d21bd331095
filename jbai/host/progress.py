"""Progress lines on the host: a text progress bar on stderr.

  duration       a time in seconds to a reader's precision ('3m05s', '2h10m').
  Progress       a progress bar over one task (the `progress` callback of
                 `jbai.simulate`) or a sequence of tasks (one line per finished
                 task, so that a log file reads one line per task).
"""

import sys
import time
from typing import Optional


def duration(seconds: float) -> str:
  """'42s', '3m05s', '2h10m', '12d03h': a time to a reader's precision."""
  s = int(round(seconds))
  if s < 60:
    return f"{s}s"
  if s < 3600:
    return f"{s // 60}m{s % 60:02d}s"
  if s < 86400:
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
  return f"{s // 86400}d{s % 86400 // 3600:02d}h"


class Progress:
  """A text progress bar on a stream (default stderr).

  Over one task (`tasks` None) it is the `progress(done, total, ...)` callback
  of `jbai.simulate`: `label [#####     ] done/total  elapsed`, redrawn in place,
  its line ended when the task completes. Over a sequence of `tasks` tasks,
  `begin(label)` starts the next one, `update` draws its bar prefixed by
  `[i/tasks]`, and `end(status)` writes one line per task, so that a log file
  (no terminal) reads one line per finished task.

  Args:
    label: the task's name (one task).
    enabled: False: nothing is written.
    stream: where the lines go (default stderr).
    tasks: the number of tasks of a sequence, or None for one task.
    live: draw the bar; default: when the stream is a terminal.
  """

  def __init__(self, label: str = "", enabled: bool = True, stream=None,
               tasks: Optional[int] = None, live: Optional[bool] = None):
    self.label, self.enabled, self.tasks = label, enabled, tasks
    self.stream = stream or sys.stderr
    self.live = (bool(getattr(self.stream, "isatty", lambda: False)()) if live is None
                 else live)
    self.index, self.start = 0, time.perf_counter()
    self.task_start, self.open = self.start, False

  def __call__(self, done: int, total: int, *_):
    self.update(done, total)

  def update(self, done: int, total: int, unit: Optional[str] = None) -> None:
    """Redraws the bar: `done` of `total` (trials, steps, ...: `unit`)."""
    if not (self.enabled and self.live):
      return
    frac = done / max(total, 1)
    count = f"{done}/{total}" + ("" if unit is None else f" {unit}")
    elapsed = time.perf_counter() - self.task_start
    if 0 < done < total:  # the time left at the mean rate so far
      count += f", {duration(elapsed * (total - done) / done)} left"
    if self.tasks is None:
      line = f"\r{self.label} [{'#' * int(30 * frac):<30}] {count} {elapsed:6.1f}s"
    else:
      line = (f"\r[{self.index}/{self.tasks}] {self.label[:48]:<48} "
              f"[{'#' * int(20 * frac):<20}] {count} {elapsed:6.1f}s")
    self.open = self.tasks is not None or done < total
    line += "    "  # over the end of a longer line before
    if not self.open:
      line += "\n"
    self.stream.write(line)
    self.stream.flush()

  def begin(self, label: str) -> None:
    """Starts the next task of the sequence."""
    self.index, self.label, self.task_start = self.index + 1, label, time.perf_counter()
    self.update(0, 1, "")

  def end(self, status: str) -> None:
    """Ends the current task of the sequence with one line: its status and times."""
    if not self.enabled:
      return
    elapsed = time.perf_counter() - self.task_start
    total = time.perf_counter() - self.start
    if self.live:
      self.stream.write("\r" + " " * 110 + "\r")
    self.stream.write(f"[{self.index}/{self.tasks}] {self.label} {status} "
                      f"({elapsed:.1f}s; {total:.0f}s in all)\n")
    self.stream.flush()
    self.open = False

  def close(self) -> None:
    """Ends a bar left open (an interrupted task) with a newline."""
    if self.open:
      self.stream.write("\n")
      self.open = False
