"""Exported programs on disk, so that a second process skips tracing and lowering.

JAX's persistent compilation cache (`jbai.compilation_cache`) stores compiled
executables, but every new process still traces a program to a jaxpr and lowers
it to StableHLO before it can look the executable up: about half a second for
the simulation's chunk program on a CPU. `jit(fun, key, out_tree)` keeps, per
program, the StableHLO that `jax.export` made of it (serialized, in
`directory()`), named by a fingerprint of everything that determines the
program. A later process that finds the file deserializes it and calls it inside
`jax.jit`, and the XLA executable comes from the persistent compilation cache.
The first process runs the same deserialized program, so that both compile the
same module. Tracing the call costs milliseconds and so does lowering it, but
for the first exported call of a process on a CPU, where JAX initialises its
LAPACK kernels (importing scipy.linalg, about 0.2 s). A program sharded over
several devices of one process (shard_map) exports as well.

The fingerprint (`fingerprint`) is the hash of the caller's `key` (the static
arguments, by repr), the arguments' tree structure, shapes, dtypes, weak types
and shardings, the devices' number and platform, the JAX and jaxlib versions,
the configuration flags that change a trace (x64 mode, ...), and a hash of
jbai's own source files (`source_hash`), so that an edited jbai never loads a
stale program. A key is only as good as its repr: callers use the cache only for
objects that their repr determines, jbai's own families, rules and thresholds
(`builtin` tells them from a user's own).

The program cache is on where the compilation cache is: `directory()` is the
compilation cache's directory with "-programs" appended, so that
JBAI_NO_COMPILATION_CACHE=1 switches both off and JBAI_COMPILATION_CACHE_DIR
moves both. Like the compilation cache it is trusted code: a program read from
it runs as it is. A program takes about 60 kB; reading one marks it as recently
used (its modification time), and `jbai.compilation_cache` prunes the least
recently used when the directory outgrows its cap.
"""

import functools
import hashlib
import inspect
import os
import tempfile
from typing import Any, Callable, Optional

import jax

SUFFIX = ".jaxexport"
_VERDICTS = {}  # id(obj) -> (obj, builtin(obj)); obj is kept so that its id stays its own
# Configuration flags that change what a function traces to.
FLAGS = ("jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_dtype_promotion",
         "jax_numpy_rank_promotion", "jax_default_prng_impl", "jax_threefry_partitionable")


def directory() -> Optional[str]:
  """The directory of exported programs: the compilation cache's, plus "-programs"
  (None, and the program cache off, where the compilation cache is off or not a
  local directory)."""
  cache = jax.config.jax_compilation_cache_dir
  if not jax.config.jax_enable_compilation_cache or not cache or "://" in cache:
    return None
  return os.path.normpath(cache) + "-programs"


@functools.lru_cache(maxsize=1)
def source_hash() -> str:
  """SHA-256 of jbai's Python sources (relative paths and contents)."""
  root = os.path.dirname(os.path.abspath(__file__))
  digest = hashlib.sha256()
  for folder, subdirs, names in sorted(os.walk(root)):
    subdirs.sort()
    for name in sorted(n for n in names if n.endswith(".py")):
      path = os.path.join(folder, name)
      digest.update(os.path.relpath(path, root).encode() + b"\0")
      with open(path, "rb") as f:
        digest.update(f.read() + b"\0")
  return digest.hexdigest()


def environment() -> tuple:
  """What besides the program's own arguments determines its StableHLO."""
  import jaxlib
  flags = tuple(str(getattr(jax.config, f, None)) for f in FLAGS)
  return jax.__version__, jaxlib.__version__, flags, source_hash()


def signature(args: tuple) -> tuple:
  """The arguments' tree structure and each leaf's shape, dtype, weak type and
  sharding (hashable, and cheap: it is taken at every call)."""
  leaves, tree = jax.tree.flatten(args)
  return (tree,) + tuple(_leaf(x) for x in leaves)


def _leaf(x) -> tuple:
  if isinstance(x, jax.Array):
    return (x.shape, x.dtype, x.weak_type, x.sharding)
  aval = jax.typeof(x)  # numpy arrays, Python scalars
  return (aval.shape, aval.dtype, aval.weak_type, None)


def fingerprint(key: tuple, sig: tuple, devices: tuple) -> str:
  """SHA-256 naming the program of `key` (static arguments) on arguments of
  signature `sig` on `devices`."""
  text = repr((key, str(sig[0]), [tuple(map(str, leaf)) for leaf in sig[1:]],
               len(devices), devices[0].platform, environment()))
  return hashlib.sha256(text.encode()).hexdigest()


def _write(path: str, data: bytes) -> None:
  """Writes `data` to `path` atomically (a reader sees all of it or nothing)."""
  folder = os.path.dirname(path)
  os.makedirs(folder, mode=0o700, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
  try:
    with os.fdopen(fd, "wb") as f:
      f.write(data)
    os.replace(tmp, path)
  except BaseException:
    os.unlink(tmp)
    raise


def _load_or_export(jitted: Callable, args: list, path: str):
  """The deserialized exported program of `jitted` on flat args (for JAX's default
  platform): read from `path`, or exported now and written there. None where it
  does not export (a callback, a custom call that `jax.export` does not allow)."""
  try:
    with open(path, "rb") as f:
      exported = jax.export.deserialize(bytearray(f.read()))
  except Exception:  # noqa: BLE001 -- no file yet, or a truncated one: export again
    pass
  else:
    try:
      os.utime(path)  # recently used: the last that pruning removes
    except OSError:
      pass
    return exported
  try:
    data = jax.export.export(jitted)(*args).serialize()
  except Exception:  # noqa: BLE001 -- anything export cannot handle: plain jit
    return None
  try:
    _write(path, data)
  except OSError:
    pass  # a read-only cache: run the program all the same
  return jax.export.deserialize(bytearray(data))


def jit(fun: Callable, key: tuple, out_tree: Callable[..., Any],
        devices: Optional[tuple] = None, out_shardings=None) -> Callable:
  """`jax.jit(fun, out_shardings=out_shardings)` through the program cache.

  Args:
    fun: a function of arrays (pytrees of them) to arrays; pure.
    key: hashable, with a stable repr: everything besides the arguments that
      determines fun's program (the caller's static arguments).
    out_tree: out_tree(*args) -> the tree structure of fun(*args), known without
      tracing fun (say that of its first argument).
    devices: the devices fun runs on (default: JAX's default device); on
      another platform than JAX's default the cache is off.
    out_shardings: one sharding for every output (None: JAX's choice). An
      exported program keeps it, so that a carry keeps its sharding from call
      to call and compiles once.

  Returns:
    A function with the results of the jitted fun. On the first call with a new
    signature it loads or exports fun's program (`directory()`); where the cache
    is off or fun does not export, it is the jitted fun.
  """
  options = {} if out_shardings is None else {"out_shardings": out_shardings}
  plain = jax.jit(fun, **options)
  devices = tuple(devices or jax.devices()[:1])
  programs = {}  # signature -> jitted call of the exported program, or None (plain)

  def call(*args):
    sig = signature(args)
    if sig not in programs:
      programs[sig] = program(args, sig)
    if programs[sig] is None:
      return plain(*args)
    return jax.tree.unflatten(out_tree(*args), programs[sig](*jax.tree.leaves(args)))

  def program(args, sig):
    folder = directory()
    if folder is None or devices[0].platform != jax.default_backend():
      return None
    tree = jax.tree.structure(args)

    def flat(*leaves):  # exported on leaves: jbai's NamedTuples need no registration
      return tuple(jax.tree.leaves(fun(*jax.tree.unflatten(tree, leaves))))

    if " at 0x" in repr(key):  # a repr that changes from process to process
      return None
    path = os.path.join(folder, fingerprint(key, sig, devices) + SUFFIX)
    exported = _load_or_export(jax.jit(flat, **options), jax.tree.leaves(args), path)
    return None if exported is None else jax.jit(exported.call, **options)

  return call


def builtin(obj, registry: dict) -> bool:
  """obj is what `registry[obj.name]` builds from obj's parameters (a built-in
  family, rule or threshold, untouched), so that its fields other than functions
  determine its program.

  The factory is called with obj's `params`, and with obj's fields of the same
  names as its other parameters (a family's lo and hi); what it builds must equal
  obj (equality of families, rules and thresholds compares their functions with
  `jbai.identity.same`). Judged once per object.
  """
  hit = _VERDICTS.get(id(obj))
  if hit is None or hit[0] is not obj:
    if len(_VERDICTS) >= 256:
      _VERDICTS.clear()
    hit = _VERDICTS[id(obj)] = (obj, _rebuilds(obj, registry))
  return hit[1]


def _rebuilds(obj, registry: dict) -> bool:
  factory = registry.get(getattr(obj, "name", None))
  if factory is None:
    return False
  given = dict(obj.params)
  kwargs = {}
  for name in inspect.signature(factory).parameters:
    if name in given:
      kwargs[name] = given[name]
    elif name in obj._fields:
      kwargs[name] = getattr(obj, name)
  try:
    ref = _reference(factory, tuple(sorted(kwargs.items())))
  except TypeError:  # an unhashable parameter
    ref = _build(factory, tuple(sorted(kwargs.items())))
  return type(ref) is type(obj) and ref == obj


def _build(factory: Callable, kwargs: tuple):
  try:
    return factory(**dict(kwargs))
  except Exception:  # noqa: BLE001 -- parameters the factory refuses: not a built-in
    return None


_reference = functools.lru_cache(maxsize=64)(_build)  # factories may compute tables
