"""Equality of jbai's records of functions, and the factories that make it useful.

A `Family`, `Rule` or `Threshold` is a NamedTuple of functions and parameters, and
the engine keys its compiled programs on it (as `jax.jit` keys on a static
argument): two records that are equal must compute alike. Equality is by fields,
with the functions compared by object identity (`is`): a function that merely
looks the same (the same code in another closure, a user's factory) is another
function, and never reuses a program compiled for the first.

Two calls of one of jbai's factories with the same parameters must then give the
same function objects. `cached` does it: it memoises a factory on its bound
arguments (by type and value, so `1` and `1.0` stay apart, as do `0.0` and
`-0.0`), so that a factory returns the object it built before. A factory with a
runtime parameter (a top-two rule's beta, TCB's eps: read from the state that the
rule's `init` builds) builds its `select` in a cached builder that does not take
that parameter, so that every value shares one program.

Arguments that cannot be hashed (a JAX array as a parameter) are not memoised:
the factory then builds new functions, which compile a program of their own.
"""

import functools
import inspect
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


def cached(factory: F) -> F:
  """`factory`, memoised on its arguments: the same object for the same arguments.

  Arguments are bound to the factory's signature (defaults applied), so that
  positional and keyword forms of one call share an entry, and compared with
  their types. A call that raises is not memoised; a call with an unhashable
  argument builds anew.

  Example:
    >>> @cached
    ... def make(scale=1.0):
    ...   return lambda x: scale * x
    >>> make() is make(1.0) is make(scale=1.0)
    True
    >>> make(1) is make(1.0)
    False
  """
  signature = inspect.signature(factory)
  built = {}

  @functools.wraps(factory)
  def build(*args, **kwargs):
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    key = tuple((name, type(value), repr(value) if isinstance(value, float) else value)
                for name, value in bound.arguments.items())
    try:
      hit = built.get(key)
    except TypeError:  # an unhashable argument
      return factory(*args, **kwargs)
    if hit is None:
      hit = built.setdefault(key, factory(*bound.args, **bound.kwargs))
    return hit

  build.cache_clear = built.clear
  return build


def fields_equal(a: tuple, b: tuple) -> bool:
  """Two records' fields are equal: callables the same object, other values equal."""
  return len(a) == len(b) and all(
      x is y or not (callable(x) or callable(y)) and x == y for x, y in zip(a, b))
