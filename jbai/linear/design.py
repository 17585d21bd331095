"""Static designs of linear best-arm identification: XY-allocation and G-optimal design.

For features X [K, d] and a design lambda on the simplex, A(lambda) = sum_a lambda_a x_a x_a^T:

  * XY (Soare, Lazaric & Munos 2014, Sec. 4, the XY-static allocation):
    argmin_lambda max_{y in Y} ||y||^2_{A(lambda)^-1}, Y = {x - x' : x, x' in X},
    the design that estimates every gap at once, whatever theta;
  * G-optimal (Kiefer & Wolfowitz 1960; Soare et al.'s G-allocation):
    argmin_lambda max_{x in X} ||x||^2_{A(lambda)^-1}, whose value is d (and which is
    the D-optimal design).

Both are convex minimisations over the simplex, solved here on the host in float64
by Frank-Wolfe with the step 2 / (k + 2) (the solver of Fiez et al. 2019's code and
of LinBAI.jl's static designs): the gradient of ||y*||^2_{A^-1} at the worst
direction y* is -(x_a^T A^-1 y*)^2, and the step moves towards the arm of the
largest. The G-optimal design is finished by the multiplicative algorithm
(Silvey, Titterington & Torsney 1978: lambda_a <- lambda_a ||x_a||^2_{A^-1} / d),
which converges to it. Each design is computed once per set of arms (`design`,
memoised) and enters a rule's program as a constant.
"""

import functools

import numpy as np

FW_ITERS = 3000   # Frank-Wolfe steps
G_ITERS = 2000    # multiplicative steps of the G-optimal design
KINDS = ("xy", "g")


def _directions(x: np.ndarray, kind: str) -> np.ndarray:
  if kind == "g":
    return x
  i, j = np.triu_indices(len(x), k=1)
  y = x[i] - x[j]
  return y[np.linalg.norm(y, axis=1) > 0]


def worst(x: np.ndarray, lam: np.ndarray, kind: str) -> float:
  """max_{y in Y} ||y||^2_{A(lambda)^-1} of the design `lam` (inf where A is singular)."""
  a = x.T @ (lam[:, None] * x)
  if np.linalg.matrix_rank(a) < x.shape[1]:
    return float("inf")
  y = _directions(x, kind)
  return float(np.max(np.einsum("ya,ab,yb->y", y, np.linalg.inv(a), y)))


@functools.lru_cache(maxsize=64)
def design(rows: tuple, kind: str) -> tuple:
  """The static design of `kind` ("xy" or "g") for the arms `rows` (a tuple of
  feature rows), as a tuple of K floats on the simplex (module docstring).

  Example:
    >>> w = design(((1.0, 0.0), (0.0, 1.0), (1.0, 1.0)), "g")
    >>> [round(v, 3) for v in w]
    [0.333, 0.333, 0.333]
  """
  if kind not in KINDS:
    raise ValueError(f"design must be one of {KINDS}, got {kind!r}")
  x = np.asarray(rows, np.float64)
  k, d = x.shape
  y = _directions(x, kind)
  lam = np.full(k, 1.0 / k)
  jitter = 1e-12 * np.eye(d)
  for it in range(FW_ITERS):
    a_inv = np.linalg.inv(x.T @ (lam[:, None] * x) + jitter)
    star = y[np.argmax(np.einsum("ya,ab,yb->y", y, a_inv, y))]
    grad = (x @ a_inv @ star) ** 2
    step = 2.0 / (it + 3)
    lam = (1 - step) * lam
    lam[np.argmax(grad)] += step
  if kind == "g":
    for _ in range(G_ITERS):
      a_inv = np.linalg.inv(x.T @ (lam[:, None] * x) + jitter)
      lam = lam * np.einsum("ka,ab,kb->k", x, a_inv, x) / d
      lam = lam / lam.sum()
  return tuple(float(v) for v in lam)


__all__ = ["FW_ITERS", "G_ITERS", "KINDS", "design", "worst"]
