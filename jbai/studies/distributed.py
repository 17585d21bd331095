"""A study over the processes of a `jax.distributed` job (one multi-process job).

`jbai study SPEC --out DIR --coordinator HOST:PORT --num-processes N --process-id I`
(the names of `jax.distributed.initialize`'s arguments), or `--distributed`, where
JAX reads all three from Slurm or Open MPI itself: every process of the job runs
the same command on a file system they all see. Process I of N runs shard I/N of
the study's jobs (`jbai.studies.shards`: job j of the plan when j mod N == I,
into its own store, under its own lock), then every process waits at a barrier,
and process 0 reads every store in DIR, runs whatever is missing and writes
cells.csv, trials.csv, study.json and the figures. A trial is a pure function of
its job's key, so the tables are the bytes of a one-process run, whatever N and
whatever the resumes: a rerun on any number of processes skips every job stored
by any shard (a job a killed process left part-way restarts from its last
checkpoint under the same N, from its start under another).

The command runs its process of the job in a child (`multiprocessing`'s spawn),
because `jax.distributed.initialize` on jax 0.10 ends the process with SIGABRT
from C++, not a Python exception, when the coordinator cannot be reached within
its `initialization_timeout` (on process 0: when the others do not all join).
The child reports when it has joined; a child that ends before that is one line,
"coordinator HOST:PORT not reachable within T s" (ValueError, exit 2). One that
ends by a signal after joining (a killed or failed peer makes JAX's coordination
service end every process after its heartbeat timeout, 100 s) is a RuntimeError:
the same command resumes. No socket or coordinator of jbai's own: JAX's
coordination service does all of it.

  Coordinates     the job's coordinator, process count, this process's id, and the
                  time to join.
  coordinates     the options, checked (one line each: a malformed HOST:PORT, N < 1,
                  I outside [0, N), --shard beside them), or None.
  launch          the parent's side: the child, its reports, the refusals.
  wait_for_all    the barrier (the coordination service's, see there why).
"""

import multiprocessing
import os
import re
import signal
import tempfile
import threading
from typing import NamedTuple, Optional

DEFAULT_TIMEOUT = 120  # seconds to join: JAX's imports on a busy cluster's file system
BARRIER_SECONDS = 7 * 24 * 3600  # how long a finished process waits for the others

_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9_.-]*):(\d{1,5})")


class Coordinates(NamedTuple):
  """A process's place in a `jax.distributed` job; None: JAX reads it from the
  environment (Slurm, Open MPI)."""

  coordinator: Optional[str]   # "HOST:PORT" of process 0's coordination service
  num_processes: Optional[int]  # N
  process_id: Optional[int]     # I, in [0, N)
  timeout: int                  # initialization_timeout: seconds to join

  def where(self) -> str:
    """The coordinator in a few words, for the messages."""
    return (f"coordinator {self.coordinator}" if self.coordinator else
            "the coordinator (from the cluster's environment)")


def check_coordinator(text: str) -> str:
  """`text` as HOST:PORT (a name, an IPv4 address or a bracketed IPv6 one; a port
  in 1..65535), stripped.

  Raises:
    ValueError: one line naming the value.
  """
  match = _HOST_PORT.fullmatch(text.strip())
  if match is None or not 1 <= int(match.group(2)) <= 65535:
    raise ValueError(f"--coordinator must be HOST:PORT (a port in 1..65535), got {text!r}")
  return text.strip()


def coordinates(coordinator: Optional[str] = None, num_processes: Optional[int] = None,
                process_id: Optional[int] = None, timeout: Optional[float] = None,
                distributed: bool = False, shard=None) -> Optional[Coordinates]:
  """The command's jax.distributed options, checked; None when it asks for none.

  Args:
    coordinator: "HOST:PORT" of process 0 (`--coordinator`), or None.
    num_processes: N (`--num-processes`), or None.
    process_id: I (`--process-id`), or None.
    timeout: seconds to join (`--timeout`; default `DEFAULT_TIMEOUT`).
    distributed: `--distributed`: run under jax.distributed, JAX reading what is
      not given from Slurm or Open MPI (implied by any of the three above).
    shard: the `--shard` value, or None: refused beside the options above.

  Returns:
    Coordinates, or None for a run without jax.distributed.

  Raises:
    ValueError: one line, for a malformed coordinator, N < 1, I outside [0, N),
      a timeout below 1 s, or `--shard` beside them.

  Example:
    >>> from jbai.studies.distributed import coordinates
    >>> coordinates("node01:8476", 4, 0)
    Coordinates(coordinator='node01:8476', num_processes=4, process_id=0, timeout=120)
  """
  given = [coordinator, num_processes, process_id]
  if not distributed and all(v is None for v in given):
    if timeout is not None:
      raise ValueError("--timeout is the time to join a jax.distributed job: give it with "
                       "--coordinator or --distributed")
    return None
  if shard is not None:
    raise ValueError("--shard splits a study into a job array's tasks and --coordinator "
                     "(--distributed) into a jax.distributed job's processes: give one")
  if coordinator is not None:
    coordinator = check_coordinator(coordinator)
  if num_processes is not None and num_processes < 1:
    raise ValueError(f"--num-processes must be at least 1, got {num_processes}")
  if process_id is not None and (process_id < 0 or (
      num_processes is not None and process_id >= num_processes)):
    top = "N - 1" if num_processes is None else num_processes - 1
    raise ValueError(f"--process-id must be in 0..{top} (of --num-processes, from 0), "
                     f"got {process_id}")
  timeout = DEFAULT_TIMEOUT if timeout is None else timeout
  if not timeout >= 1:
    raise ValueError(f"--timeout must be at least 1 second, got {timeout:g}")
  return Coordinates(coordinator, num_processes, process_id, int(round(timeout)))


def wait_for_all(name: str) -> None:
  """Waits until every process of the job is here (a barrier named `name`).

  The public barrier, `jax.experimental.multihost_utils.sync_global_devices`, is
  a collective: on CPU its gloo context gives up after 30 s (jax 0.10.2:
  "Gloo context initialization failed: DEADLINE_EXCEEDED"), and the processes of
  a study end their shards minutes or hours apart. The coordination service's
  own barrier takes a timeout, so this one private call waits for them.
  """
  from jax._src import distributed
  distributed.global_state.client.wait_at_barrier(name, BARRIER_SECONDS * 1000)


def _joined(request: dict, log: str):
  """`jax.distributed.initialize` with fd 2 sent to `log` (a failure to join
  aborts from C++ with a stack trace, which the parent replaces by one line);
  returns (I, N)."""
  import jax
  saved = os.dup(2)
  try:
    with open(log, "w") as f:
      os.dup2(f.fileno(), 2)
    jax.distributed.initialize(**request["initialize"])
  finally:
    os.dup2(saved, 2)
    os.close(saved)
  return jax.process_index(), jax.process_count()


def _process(request: dict, log: str, conn) -> None:
  """A process of the job (a spawned child of the command): join, run shard I/N,
  wait for all, and on process 0 merge; each step reported on `conn`."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent ends it on Ctrl-C
  parent = multiprocessing.parent_process()  # a parent that ends takes it along
  threading.Thread(target=lambda: (parent.join(), os._exit(1)), daemon=True).start()
  import jax
  from jbai.host import caches, cores
  cores.use_cpu_cores(request["devices"])
  jax.config.update("jax_enable_x64", request["x64"])
  if request["cache_dir"]:
    caches.enable_compilation_cache(request["cache_dir"], request["cache_max_bytes"])
  try:
    index, count = _joined(request, log)
  except ValueError as e:  # JAX's own checks (no cluster environment to read)
    conn.send(("refused", f"jax.distributed.initialize: {str(e).rstrip('.')}; outside "
               "Slurm or Open MPI, give --coordinator HOST:PORT --num-processes N "
               "--process-id I"))
    return
  except Exception as e:  # noqa: BLE001 (an address it cannot bind, say)
    conn.send(("refused", f"jax.distributed.initialize: {type(e).__name__}: "
               f"{str(e).splitlines()[0] if str(e) else ''}"))
    return
  conn.send(("joined", index, count))
  from jbai import studies
  from jbai.studies.shards import Shard
  run = dict(progress=request["progress"], processes=request["processes"])
  report = None
  try:
    summary = studies.run(request["spec"], request["out"], shard=Shard(index, count), **run)
  except ValueError as e:
    report = ("refused", str(e))
  except Exception as e:  # noqa: BLE001 (reported by the parent, after the barrier)
    report = ("failed", f"{type(e).__name__}: {e}")
  wait_for_all("jbai-study-shards")
  try:
    if report is None and index == 0:
      summary = studies.run(request["spec"], request["out"], figures=request["figures"], **run)
  except ValueError as e:
    report = ("refused", str(e))
  except Exception as e:  # noqa: BLE001
    report = ("failed", f"{type(e).__name__}: {e}")
  finally:
    wait_for_all("jbai-study-tables")  # the others wait for process 0's tables
  conn.send(report or ("done", summary))
  jax.distributed.shutdown()


def launch(spec_or_path, out: str, where: Coordinates, progress: bool = True,
           processes: int = 1, figures: bool = True, devices: Optional[int] = None) -> dict:
  """Runs this process's part of a study in a `jax.distributed` job (see the module).

  The spec, the folder and the spec's hash against the shards in it are checked
  first, here, before any process joins (each process of the job refuses alike).

  Args:
    spec_or_path: the spec, as `jbai.studies.run` takes it.
    out: the output folder, on a file system every process sees.
    where: the job's `Coordinates`.
    progress: show progress on stderr.
    processes: worker processes for each job's trials (`jbai.studies.run`).
    figures: draw the figures (process 0).
    devices: CPU devices of this process (default: one per usable core).

  Returns:
    `jbai.studies.run`'s summary: of the merge on process 0, of the shard on the
    others; with "process" (I) and "processes" (N).

  Raises:
    ValueError: one line: the coordinator not reachable, or not every process
      joined, within `where.timeout` seconds; JAX's refusal of the options; the
      study's refusals (`jbai.studies.run`).
    RuntimeError: the process ended after joining (a signal: a peer died), or a
      job failed.
  """
  import jax
  from jbai.core import inputs
  from jbai.host import cores
  from jbai.host.paths import check_folder
  from jbai.studies import shards, spec as spec_lib
  shards.check_spec(check_folder(out, "--out"), shards.spec_hash(spec_lib.load(spec_or_path)))
  processes = inputs.check_count("processes", processes, 1)
  initialize = {"coordinator_address": where.coordinator, "num_processes": where.num_processes,
                "process_id": where.process_id, "initialization_timeout": where.timeout}
  request = {"initialize": initialize, "spec": spec_or_path, "out": out, "progress": progress,
             "processes": processes, "figures": figures,
             "devices": devices or cores.configured_devices() or cores.usable_cores(),
             "x64": bool(jax.config.jax_enable_x64),
             "cache_dir": jax.config.jax_compilation_cache_dir,
             "cache_max_bytes": int(jax.config.jax_compilation_cache_max_size)}
  context = multiprocessing.get_context("spawn")
  receive, send = context.Pipe(duplex=False)
  fd, log = tempfile.mkstemp(prefix="jbai-join-", suffix=".log")
  os.close(fd)
  child = context.Process(target=_process, args=(request, log, send), name="jbai-study-process")
  reports = []
  try:
    child.start()
    send.close()
    while True:
      try:
        reports.append(receive.recv())
      except EOFError:  # the child has ended
        break
    child.join()
  except KeyboardInterrupt:  # its finished trials are saved; it ends here
    child.terminate()
    child.join()
    raise
  finally:
    os.remove(log)
  return _outcome(reports, child.exitcode, where)


def _outcome(reports: list, exitcode: int, where: Coordinates) -> dict:
  """The child's reports and exit code as launch's summary, or its error."""
  joined = [r for r in reports if r[0] == "joined"]
  last = reports[-1] if reports else (None,)
  if last[0] == "refused":
    raise ValueError(last[1])
  if not joined:
    if where.process_id == 0:
      raise ValueError(f"{where.where()}: not every one of the {where.num_processes} "
                       f"processes joined within {where.timeout} s")
    raise ValueError(f"{where.where()} not reachable within {where.timeout} s")
  _, index, count = joined[0]
  if last[0] == "failed":
    raise RuntimeError(f"process {index} of {count}: {last[1]}")
  if last[0] != "done":
    how = (f"signal {signal.Signals(-exitcode).name}" if exitcode < 0
           else f"exit code {exitcode}")
    raise RuntimeError(f"process {index} of {count} ended ({how}) after joining {where.where()}"
                       " (a process of the job died?); its finished trials are saved: the "
                       "same command resumes")
  return dict(last[1], process=index, processes=count)


def cmd_distributed(args, where: Coordinates) -> int:
  """`jbai study SPEC --out DIR` in a jax.distributed job: `launch`, then one line
  (exit 0); a process that ended after joining, or a job that failed, is one
  line and exit code 1 (the same command resumes)."""
  import sys
  try:
    summary = launch(args.spec, args.out, where, progress=not args.quiet,
                     processes=args.processes, devices=args.devices)
  except RuntimeError as e:
    print(f"jbai: error: {str(e).splitlines()[0]}", file=sys.stderr)
    return 1
  head = f"jbai study: process {summary['process']} of {summary['processes']}"
  if summary.get("shard") is not None:  # a process other than 0: its shard
    print(f"{head}: {summary['computed']} job(s) run, {summary['skipped']} found, of its "
          f"{summary['jobs']}; process 0 wrote the tables in {args.out}/")
    return 0
  print(f"{head}: every process done; {summary['computed']} job(s) run here at the end, "
        f"{summary['skipped']} found in {args.out}; tables, study.json and figures in "
        f"{args.out}/")
  return 0


__all__ = ["BARRIER_SECONDS", "Coordinates", "DEFAULT_TIMEOUT", "check_coordinator",
           "cmd_distributed", "coordinates", "launch", "wait_for_all"]
