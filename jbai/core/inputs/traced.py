"""Traced values told from concrete ones (see `jbai.core.inputs`).

Checks run where values are concrete (`concrete`); inside a trace that stages
every operation out (`tracing`) nothing computed here can be read back; a
host-side function refuses a traced value, naming the pure function that runs
there (`refuse_traced`).
"""

import jax
import jax.numpy as jnp


def concrete(x) -> bool:
  """True when no leaf of x is traced (x can be checked now)."""
  return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(x))


def tracing() -> bool:
  """True inside a JAX trace that stages every operation out (the caller's
  `jax.jit`), where no value computed here can be read back."""
  return isinstance(jnp.zeros(()) + 0, jax.core.Tracer)


def refuse_traced(function: str, instead: str, **values) -> None:
  """Raises TypeError where a host-side function meets a traced value (it was
  called under jax.jit, vmap or grad), naming the pure function that runs there."""
  for name, value in values.items():
    if not concrete(value):
      raise TypeError(
          f"{function} runs on the host and cannot take a traced {name!r} (it was called "
          f"under jax.jit, jax.vmap or jax.grad); inside traced code use {instead}")
