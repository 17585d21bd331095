"""No silent zero derivatives: a simulation's outputs have no pathwise derivative.

A trial's stopping time, answer and counts are integers, piecewise constant in
the means, delta and the rule's parameters: the derivative of `jax.grad` or
`jax.jvp` through them (say of `rollout(...).tau.mean()`) would be an exact 0,
which is wrong for E[tau]. `no_pathwise` marks the inputs of such a function:
differentiating through it raises an error that names `jbai.estimate` (whose
likelihood-ratio surrogate gives the gradient of the expectation). Inputs under
`jax.lax.stop_gradient` carry a symbolic zero tangent and pass.
"""

import functools

import jax
import jax.numpy as jnp


class NoPathwiseDerivative(TypeError):
  """Differentiation through a function whose outputs have no pathwise derivative."""


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _marked(where: str, x):
  del where
  return x


def _marked_jvp(where, primals, tangents):
  (x,), (dx,) = primals, tangents
  if not isinstance(dx, jax.custom_derivatives.SymbolicZero):
    raise NoPathwiseDerivative(
        f"{where} has no pathwise derivative: its stopping times, answers and counts "
        "are integers, piecewise constant in the means, delta and the rule's "
        "parameters, so jax.grad or jax.jvp through them would be a silent 0. Use "
        "jbai.estimate (jax.grad of its mean_tau or error_rate is the likelihood-ratio "
        "gradient) or jbai.finite_difference, or wrap the inputs in "
        "jax.lax.stop_gradient if no derivative is wanted.")
  return x, jnp.zeros_like(x)  # dx is a symbolic zero


_marked.defjvp(_marked_jvp, symbolic_zeros=True)


def no_pathwise(where: str, *inputs):
  """`inputs`, unchanged, with every traced leaf marked: a nonzero tangent in one
  raises `NoPathwiseDerivative` (naming `where`) when JAX differentiates."""
  def mark(x):
    traced = isinstance(x, jax.core.Tracer) and jnp.issubdtype(x.dtype, jnp.inexact)
    return _marked(where, x) if traced else x
  return jax.tree.map(mark, inputs)
