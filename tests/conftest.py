"""Test configuration: float64 everywhere, so that the oracle's accuracy checks
mean what they say (the engine runs in float32 by default outside the tests)."""

import jax

jax.config.update("jax_enable_x64", True)
