"""Ctrl-C in a command-line process: exit 130 and one line, whenever it comes.

Python's own handler raises KeyboardInterrupt wherever the main thread happens
to be. Two places lose it: a garbage-collection callback (JAX frees device
buffers from one), whose exceptions Python reports as "Exception ignored in ..."
and drops, so that the command runs on and exits 0; and the interpreter's
shutdown, which runs JAX's exit handlers while XLA's threads still compute. The
handler of `quiet_after_first_interrupt` therefore keeps the press in a flag:

  * the first Ctrl-C raises KeyboardInterrupt (the command saves what finished
    and returns EXIT_INTERRUPTED); one that a callback dropped is raised again at
    the next line of Python (`_thread.interrupt_main`), with no report;
  * a later Ctrl-C inside the block says the command's one line and ends the
    process at once with EXIT_INTERRUPTED;
  * `pressed()` tells `jbai.cli.main` that a Ctrl-C came, so that a command that
    finished anyway still exits 130, and the process ends by `os._exit` after
    flushing its streams, without the shutdown where XLA's threads crash;
  * after the block, `exit_on_interrupt` ends a process whose command finished
    (its shutdown: JAX's exit handlers) with the one line and EXIT_INTERRUPTED.

Nothing is lost: every file is written whole or not at all, and the finished
trials are whole, flushed lines of their store.
"""

import _thread
import contextlib
import os
import signal
import sys
import threading

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command that Ctrl-C ended

_PRESSED = []   # one entry per Ctrl-C since the block began
_DROPPED = []   # a KeyboardInterrupt dropped by a callback, to raise again


def pressed() -> bool:
  """Whether a Ctrl-C came inside the current (or last) block."""
  return bool(_PRESSED)


def flush_and_exit(code: int) -> None:
  """Ends the process with `code` at once, after flushing stdout and stderr: no
  exit handlers, no finalization (XLA's threads may still be computing)."""
  for stream in (sys.stdout, sys.stderr):
    try:
      stream.flush()
    except (OSError, RuntimeError, ValueError):  # closed, or flushed re-entrantly
      pass
  os._exit(code)


@contextlib.contextmanager
def quiet_after_first_interrupt(last_words=lambda: None):
  """Ctrl-C handling of a command-line process whose command runs in the block
  (see the module's docstring): `last_words` says the command's one line when a
  second Ctrl-C ends the process. After the block, a Ctrl-C is ignored if one
  came (the process is ending with EXIT_INTERRUPTED anyway), else Python's
  handler is back.

  Installed only over Python's default handler, in the main thread (a process
  started with Ctrl-C ignored keeps ignoring it).
  """
  del _PRESSED[:], _DROPPED[:]

  def handler(signum, frame):
    if _DROPPED:  # a callback dropped the first one: raise it again, here
      _DROPPED.clear()
      raise KeyboardInterrupt
    _PRESSED.append(True)
    if len(_PRESSED) == 1:
      raise KeyboardInterrupt
    last_words()
    flush_and_exit(EXIT_INTERRUPTED)

  def unraisable(info):
    if isinstance(info.exc_value, KeyboardInterrupt) and _PRESSED:
      _DROPPED.append(True)  # dropped by a callback (say JAX's gc callback): from
      threading.Timer(0.01, _thread.interrupt_main).start()  # a thread, past it
      return
    previous_hook(info)

  try:
    installed = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if installed:
      signal.signal(signal.SIGINT, handler)
  except ValueError:  # not the main thread: its signals are not ours to handle
    installed = False
  previous_hook = sys.unraisablehook
  if installed:
    sys.unraisablehook = unraisable
  try:
    yield
  finally:
    if installed:  # Python's finalization keeps an ignored SIGINT ignored, not a handler
      signal.signal(signal.SIGINT, signal.SIG_IGN if _PRESSED else signal.default_int_handler)
      sys.unraisablehook = previous_hook


def exit_on_interrupt(last_words) -> None:
  """From now on a Ctrl-C says `last_words` and ends the process with
  EXIT_INTERRUPTED at once (the shutdown of a command that has finished). A
  no-op outside the main thread, or where Ctrl-C is ignored."""
  def handler(signum, frame):
    last_words()
    flush_and_exit(EXIT_INTERRUPTED)
  try:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored
      signal.signal(signal.SIGINT, handler)
  except ValueError:  # not the main thread
    pass


@contextlib.contextmanager
def interrupts_held():
  """Ctrl-C is ignored inside the block, and the handler found restored after it:
  the summary of the finished trials, written after a first Ctrl-C, is written
  whole (it takes milliseconds). A no-op outside the main thread."""
  try:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
  except ValueError:  # not the main thread
    yield
    return
  try:
    yield
  finally:
    signal.signal(signal.SIGINT, previous)
