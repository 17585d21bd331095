"""The float array that the numerical parts of general families work in.

`jbai.families.quadrature`, `jbai.families.grid_mle`, `jbai.families.newton` and
`jbai.families.general` take means, rewards and weights as any array-like; each
casts them with `as_float` first, so that an integer mean is computed in JAX's
default float and a float keeps its own precision.
"""

import jax
import jax.numpy as jnp


def as_float(x) -> jax.Array:
  """x as a JAX array, cast to JAX's default float when it is not floating.

  Args:
    x: array-like.

  Returns:
    x itself (as an array) when its dtype is floating, else x in the default
    float dtype (float64 when jax_enable_x64 is set, float32 otherwise).
  """
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    x = x.astype(jnp.zeros(()).dtype)
  return x
