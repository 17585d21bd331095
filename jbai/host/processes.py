"""Worker processes, one per core, each with one CPU device of its own.

Two devices in one process run a step's pools in lockstep, one program launch
after another, where two processes, each pinned to its core, never wait for each
other: on a 2-core CPU they ran a study's trials at 1.30 to 1.33 times the rate of
one process with two devices (docs/performance.md, "A study against the loop").
`Workers(n)` starts n such processes (`multiprocessing`'s spawn: JAX's threads do
not survive a fork), each with `use_cpu_cores(1)`, pinned to one of the cores this
process may use, with the parent's compilation cache and float64 setting;
`Workers.map` hands each a call of a function named by "module:function" and
forwards the records that the call hands to its `on_chunk` to the parent's
callback as they come. `jbai study --processes` runs the shares of each job's
trials this way (`jbai.host.simulate.simulate_share`); the library's
`jbai.simulate` stays in its own process.

A worker ignores Ctrl-C: the parent stops the workers (`close`) when it is
interrupted, and a worker ends when its parent does, however it ends. A call
that raises ValueError raises it again in the parent with its message; anything
else, or a worker that dies, raises RuntimeError there.
"""

import importlib
import multiprocessing
import os
import queue
import signal
import threading
from typing import Callable, Optional

POLL_SECONDS = 0.5  # how often the parent checks that its workers are alive


def _cores() -> list:
  try:
    return sorted(os.sched_getaffinity(0))
  except (AttributeError, OSError):  # not Linux
    return list(range(os.cpu_count() or 1))


def _serve(index: int, core: Optional[int], settings: dict, tasks, results) -> None:
  """A worker's loop: one CPU device on one core, then calls until None comes."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  parent = multiprocessing.parent_process()  # a parent that ends takes its workers along
  threading.Thread(target=lambda: (parent.join(), os._exit(1)), daemon=True).start()
  if core is not None:
    try:
      os.sched_setaffinity(0, {core})
    except (AttributeError, OSError):
      pass
  import jax
  from jbai.host import caches, cores
  cores.use_cpu_cores(1)
  jax.config.update("jax_enable_x64", settings["x64"])
  if settings["cache_dir"]:
    caches.enable_compilation_cache(settings["cache_dir"], settings["cache_max_bytes"])
  while True:
    task = tasks.get()
    if task is None:
      return
    target, args, kwargs = task
    module, name = target.split(":")
    try:
      fn = getattr(importlib.import_module(module), name)
      value = fn(*args, **kwargs, on_chunk=lambda records: results.put(("chunk", index, records)))
      results.put(("done", index, value))
    except ValueError as e:
      results.put(("refused", index, str(e)))
    except Exception as e:  # noqa: BLE001 (handed to the parent, which raises it)
      results.put(("failed", index, f"{type(e).__name__}: {e}"))


class Workers:
  """n worker processes, each pinned to one core with one CPU device.

  Args:
    n: the number of processes (at least 1).

  Example:
    >>> from jbai.host.processes import Workers
    >>> with Workers(2) as workers:  # doctest: +SKIP
    ...   stats = workers.map("jbai.host.simulate:simulate_share", tasks, on_chunk=save)
  """

  def __init__(self, n: int):
    import jax
    if int(n) < 1:
      raise ValueError(f"the number of processes must be at least 1, not {n}")
    context = multiprocessing.get_context("spawn")
    settings = {"x64": bool(jax.config.jax_enable_x64),
                "cache_dir": jax.config.jax_compilation_cache_dir,
                "cache_max_bytes": int(jax.config.jax_compilation_cache_max_size)}
    cores = _cores()
    self.results = context.Queue()
    self.tasks = [context.Queue() for _ in range(int(n))]
    self.processes = [
        context.Process(target=_serve, daemon=True, name=f"jbai-worker-{i}",
                        args=(i, cores[i % len(cores)] if len(cores) >= n else None, settings,
                              self.tasks[i], self.results))
        for i in range(int(n))]
    for p in self.processes:
      p.start()

  def __len__(self) -> int:
    return len(self.processes)

  def map(self, target: str, calls: list, on_chunk: Optional[Callable] = None) -> list:
    """Runs call i, (args, kwargs), as target(*args, **kwargs, on_chunk=...) on
    worker i; returns the calls' values in order. `on_chunk` gets, in the parent,
    each record that a call hands to its own `on_chunk`, as it comes."""
    if len(calls) > len(self.processes):
      raise ValueError(f"{len(calls)} calls for {len(self.processes)} worker processes")
    for i, (args, kwargs) in enumerate(calls):
      self.tasks[i].put((target, tuple(args), dict(kwargs)))
    values, waiting, errors = [None] * len(calls), set(range(len(calls))), []
    while waiting:
      try:
        what, i, payload = self.results.get(timeout=POLL_SECONDS)
      except queue.Empty:
        dead = [i for i in waiting if not self.processes[i].is_alive()]
        if dead:  # a spawned process imports the parent's script: it must be guarded
          raise RuntimeError(
              f"worker process {dead[0]} ended (exit code {self.processes[dead[0]].exitcode}) "
              f"in {target}; a script that starts workers needs if __name__ == '__main__':")
        continue
      if what == "chunk":
        if on_chunk is not None:
          on_chunk(payload)
        continue
      waiting.discard(i)
      if what == "refused":
        errors.append(ValueError(payload))
      elif what == "failed":
        errors.append(RuntimeError(f"worker process {i}: {payload}"))
      values[i] = payload
    if errors:  # raised once every call has ended, so that the workers are free
      raise errors[0]
    return values

  def close(self) -> None:
    """Stops the workers: those still at work (an interrupted map) at once."""
    for p, tasks in zip(self.processes, self.tasks):
      if p.is_alive():
        tasks.put(None)
    for p in self.processes:
      p.join(timeout=POLL_SECONDS)
      if p.is_alive():
        p.terminate()
        p.join()

  def __enter__(self) -> "Workers":
    return self

  def __exit__(self, *exc) -> None:
    self.close()
