"""The README's example of differentiating through the simulator runs as printed."""

import re

import numpy as np

README = __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "README.md")


def readme_block(heading: str) -> str:
  """The first ```python block after `heading` in the README."""
  text = open(README, encoding="utf-8").read()
  after = text[text.index(heading):]
  return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def test_differentiation_example_runs():
  ns = {}
  exec(readme_block("## Differentiating through the simulator"), ns)  # noqa: S102
  est, grad = ns["est"], ns["grad"]
  np.testing.assert_allclose(grad, est.grad_mean_tau["means"], rtol=1e-10)
  assert grad[0] < 0 < grad[1]  # a larger best mean shortens the trials
  assert np.isfinite(ns["fd"].mean_tau)
