"""When two Python functions compute alike: `same`, for equality of jbai's objects.

A `Family`, `Rule` or `Threshold` is a NamedTuple of functions and parameters.
Two of them built by the same factory with the same parameters hold different
closures that compute alike; two built by a user with the same name may not.
`same` tells them apart by their code, globals, defaults and closure contents,
so that a program compiled for one object is reused for another exactly when
they compute alike (jbai.engine's caches of compiled programs, the static
arguments of jax.jit).
"""

import functools
import types
from typing import Optional

import jax
import numpy as np

_EMPTY = object()  # the contents of an empty closure cell


def same(a, b, seen: Optional[set] = None) -> bool:
  """a and b compute alike: equal values, or functions with the same code, the
  same globals and (recursively) the same defaults and closure contents.

  Objects of other types are the same only when they are one object.
  """
  if a is b:
    return True
  if type(a) is not type(b):
    return False
  seen = set() if seen is None else seen
  if (id(a), id(b)) in seen:  # a cycle (a recursive closure): judged where it started
    return True
  seen.add((id(a), id(b)))
  if isinstance(a, types.FunctionType):
    return (a.__code__ == b.__code__ and a.__globals__ is b.__globals__ and
            same(a.__defaults__, b.__defaults__, seen) and
            same(a.__kwdefaults__, b.__kwdefaults__, seen) and
            same(_cells(a), _cells(b), seen))
  if isinstance(a, functools.partial):
    return same((a.func, a.args, a.keywords), (b.func, b.args, b.keywords), seen)
  if isinstance(a, (tuple, list)):
    return len(a) == len(b) and all(same(x, y, seen) for x, y in zip(a, b))
  if isinstance(a, dict):
    return list(a) == list(b) and all(same(a[k], b[k], seen) for k in a)
  if isinstance(a, types.MethodType):
    return same((a.__func__, a.__self__), (b.__func__, b.__self__), seen)
  if isinstance(a, (bool, int, float, complex, str, bytes)):
    return repr(a) == repr(b)  # -0.0 is not 0.0; nan is nan
  if isinstance(a, (np.ndarray, np.generic, jax.Array)):
    try:
      a, b = np.asarray(a), np.asarray(b)
    except TypeError:  # PRNG keys
      return False
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
  if hasattr(a, "__wrapped__"):  # jax.jit, jax.custom_jvp, functools.wraps: what they wrap
    return same(a.__wrapped__, b.__wrapped__, seen)
  return False


def _cells(f: types.FunctionType) -> tuple:
  out = []
  for cell in f.__closure__ or ():
    try:
      out.append(cell.cell_contents)
    except ValueError:  # an empty cell
      out.append(_EMPTY)
  return tuple(out)
