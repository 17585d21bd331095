"""The true laws of bounded arms: Beta(a, b) and discrete laws on values in [0, 1].

The simulator draws rewards from these; the rules and the stop never see them,
only the rewards (`jbai.bounded.histogram`). A bandit's K arms may mix kinds, so
they are kept in one record of per-arm arrays (`Laws`, built by `arm_laws`), every field defined for
every arm: a Beta arm carries zero-probability padding in `values`/`probs`, a
discrete arm the placeholder a = b = 1. Bernoulli(p) is the discrete law on {0, 1}
with probabilities (1 - p, p).

`atoms` gives each law as weighted atoms for the oracle (`jbai.bounded.oracle`):
a discrete law exactly, a Beta law by Gauss-Jacobi quadrature (Golub & Welsch 1969,
the eigen-decomposition of the Jacobi matrix of the Beta weight), which integrates
polynomials up to degree 2P - 1 exactly against Beta(a, b).
"""

import re
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jbai.random import samplers

BETA, DISCRETE = 0, 1
PROB_TOL = 1e-9  # |sum of a discrete law's probabilities - 1| allowed (then renormalised)


class Beta(NamedTuple):
  """Beta(a, b) on [0, 1] (a, b > 0), as `beta` checks it."""
  a: float
  b: float


class Discrete(NamedTuple):
  """A law on finitely many values in [0, 1], as `discrete` checks it."""
  values: tuple  # the values, in [0, 1]
  probs: tuple   # their probabilities, summing to 1


class Laws(NamedTuple):
  """The laws of K arms, one per arm, of mixed kinds.

  Attributes:
    kind: [K] int32, BETA or DISCRETE.
    a: [K] float, Beta's first parameter (1 on discrete arms).
    b: [K] float, Beta's second parameter (1 on discrete arms).
    values: [K, V] float, a discrete arm's values (0 on padding and Beta arms).
    probs: [K, V] float, their probabilities (0 on padding and Beta arms).
  """
  kind: jax.Array    # [K] int32
  a: jax.Array       # [K] float
  b: jax.Array       # [K] float
  values: jax.Array  # [K, V] float
  probs: jax.Array   # [K, V] float


def beta(a: float, b: float) -> Beta:
  """Beta(a, b) rewards; ValueError unless a > 0 and b > 0.

  Example:
    >>> beta(2, 5).a
    2.0
  """
  for name, v in (("a", a), ("b", b)):
    if not (np.isfinite(v) and v > 0):
      raise ValueError(f"Beta parameter {name} = {v} must be > 0 and finite")
  return Beta(float(a), float(b))


def discrete(values: Sequence[float], probs: Sequence[float]) -> Discrete:
  """A discrete law: P(X = values[i]) = probs[i].

  Args:
    values: the values, each in [0, 1].
    probs: their probabilities, each >= 0, summing to 1 within PROB_TOL (then
      renormalised to sum to 1 exactly in float64).

  Returns:
    The checked law; ValueError naming the bad value otherwise.

  Example:
    >>> discrete([0.0, 0.5, 1.0], [0.2, 0.3, 0.5]).values
    (0.0, 0.5, 1.0)
  """
  v = np.asarray(values, np.float64).ravel()
  p = np.asarray(probs, np.float64).ravel()
  if v.size != p.size:
    raise ValueError(f"a discrete law has {v.size} values but {p.size} probabilities")
  if v.size == 0:
    raise ValueError("a discrete law needs at least one value")
  for x in v:
    if not 0.0 <= x <= 1.0:
      raise ValueError(f"discrete value {x} is outside the support [0, 1]")
  for q in p:
    if not (np.isfinite(q) and q >= 0):
      raise ValueError(f"discrete probability {q} must be >= 0")
  if abs(p.sum() - 1) > PROB_TOL:
    raise ValueError(f"discrete probabilities sum to {float(p.sum())!r}, not 1 "
                     f"(tolerance {PROB_TOL})")
  return Discrete(tuple(float(x) for x in v), tuple(float(q) for q in p / p.sum()))


def bernoulli(p: float) -> Discrete:
  """Bernoulli(p): the discrete law on {0, 1} with P(X = 1) = p.

  Example:
    >>> bernoulli(0.3).probs
    (0.7, 0.3)
  """
  if not 0.0 <= p <= 1.0:
    raise ValueError(f"Bernoulli mean {p} is outside [0, 1]")
  return discrete([0.0, 1.0], [1.0 - p, p])


def arm_laws(arms: Sequence, dtype=None) -> Laws:
  """The per-arm record of K laws (each from `beta`, `discrete` or `bernoulli`).

  Args:
    arms: K >= 1 laws.
    dtype: float dtype of the arrays (default: JAX's default float).

  Returns:
    Laws with V = the most values of any discrete arm (1 if none).

  Example:
    >>> ls = arm_laws([beta(2, 2), bernoulli(0.3)])
    >>> [round(float(m), 6) for m in means(ls)]
    [0.5, 0.3]
  """
  if len(arms) == 0:
    raise ValueError("at least one arm is needed")
  dtype = dtype or jnp.zeros(()).dtype
  width = max([len(x.values) for x in arms if isinstance(x, Discrete)] + [1])
  kind, a, b = [], [], []
  values, probs = np.zeros((len(arms), width)), np.zeros((len(arms), width))
  for i, arm in enumerate(arms):
    if isinstance(arm, Beta):
      arm = beta(*arm)
      kind.append(BETA), a.append(arm.a), b.append(arm.b)
    elif isinstance(arm, Discrete):
      arm = discrete(arm.values, arm.probs)
      kind.append(DISCRETE), a.append(1.0), b.append(1.0)
      values[i, :len(arm.values)], probs[i, :len(arm.probs)] = arm.values, arm.probs
    else:
      raise ValueError(f"arm {i}: {arm!r} is not a law (use beta, discrete or bernoulli)")
  return Laws(jnp.asarray(kind, jnp.int32), jnp.asarray(a, dtype), jnp.asarray(b, dtype),
              jnp.asarray(values, dtype), jnp.asarray(probs, dtype))


def means(laws_: Laws) -> jax.Array:
  """[K] each arm's mean: a / (a + b), or the sum of values times probabilities."""
  return jnp.where(laws_.kind == BETA, laws_.a / (laws_.a + laws_.b),
                   jnp.sum(laws_.values * laws_.probs, axis=-1))


def sample(key: jax.Array, laws_: Laws, shape=()) -> jax.Array:
  """Rewards of every arm: [*shape, K], independent, in [0, 1].

  A Beta arm by `jbai.random.samplers.beta` (exact), a discrete arm by the
  inverse CDF of one uniform (the first value whose cumulative probability
  exceeds it). Both are drawn for every arm and the arm's kind selects one, so
  the cost does not depend on the mix. jit- and vmap-friendly, in the dtype of
  the laws.

  Args:
    key: a PRNG key.
    laws_: the arms' laws.
    shape: leading shape of the draws.

  Returns:
    [*shape, K] rewards.

  Example:
    >>> x = sample(jax.random.key(0), arm_laws([beta(2, 5), bernoulli(0.5)]), (3,))
    >>> x.shape
    (3, 2)
  """
  shape = tuple(shape) + laws_.kind.shape
  k_beta, k_discrete = jax.random.split(key)
  a, b = (jnp.broadcast_to(x, shape) for x in (laws_.a, laws_.b))
  from_beta = samplers.beta(k_beta, a, b)
  u = jax.random.uniform(k_discrete, shape, laws_.probs.dtype)
  cdf = jnp.cumsum(laws_.probs, axis=-1)
  # index = number of cumulative probabilities <= u, capped at the last value
  # (u < 1 = cdf[-1] up to rounding).
  index = jnp.minimum(jnp.sum(cdf <= u[..., None], axis=-1), laws_.probs.shape[-1] - 1)
  values = jnp.broadcast_to(laws_.values, shape + laws_.values.shape[-1:])
  from_discrete = jnp.take_along_axis(values, index[..., None], axis=-1)[..., 0]
  return jnp.where(laws_.kind == BETA, from_beta, from_discrete)


def jacobi_atoms(a: float, b: float, nodes: int):
  """Gauss-Jacobi nodes and weights of Beta(a, b): P = nodes points x_i in (0, 1)
  and weights w_i summing to 1 with sum w_i f(x_i) = E f(X) for every polynomial
  f of degree <= 2P - 1 (Golub-Welsch on the three-term recurrence of the Jacobi
  polynomials P^(alpha, beta), alpha = b - 1, beta = a - 1, mapped from [-1, 1]
  by x = (1 + s) / 2). numpy float64, on the host.

  Returns:
    (x, w), two [nodes] float64 arrays.
  """
  al, be = b - 1.0, a - 1.0
  n = np.arange(nodes, dtype=np.float64)
  s = 2 * n + al + be
  with np.errstate(divide="ignore", invalid="ignore"):
    diag = np.where(n == 0, (be - al) / (al + be + 2), (be**2 - al**2) / (s * (s + 2)))
  k = n[1:]
  sk = 2 * k + al + be
  with np.errstate(divide="ignore", invalid="ignore"):
    off2 = 4 * k * (k + al) * (k + be) * (k + al + be) / (sk**2 * (sk + 1) * (sk - 1))
  # k = 1: (k + al + be) / (sk - 1) = 1 exactly (the general form is 0/0 at al + be = -1).
  if nodes > 1:
    off2[0] = 4 * (1 + al) * (1 + be) / ((2 + al + be) ** 2 * (3 + al + be))
  jac = np.diag(diag) + np.diag(np.sqrt(off2), 1) + np.diag(np.sqrt(off2), -1)
  s_nodes, vectors = np.linalg.eigh(jac)
  w = vectors[0] ** 2
  return np.clip((1 + s_nodes) / 2, 0.0, 1.0), w / w.sum()


def atoms(laws_: Laws, nodes: int = 64):
  """Each arm's law as P weighted atoms, for KL_inf of the true laws (the oracle).

  Args:
    laws_: the arms' laws (concrete arrays).
    nodes: Gauss-Jacobi nodes of a Beta arm.

  Returns:
    (values, weights): two [K, P] arrays in the laws' dtype, P = max(nodes, V);
    a discrete arm exactly (zero-weight padding), a Beta arm by `jacobi_atoms`.
  """
  kind = np.asarray(laws_.kind)
  width = max(nodes, laws_.values.shape[-1])
  values, weights = np.zeros((kind.size, width)), np.zeros((kind.size, width))
  for i, k in enumerate(kind):
    if k == BETA:
      values[i, :nodes], weights[i, :nodes] = jacobi_atoms(float(laws_.a[i]),
                                                           float(laws_.b[i]), nodes)
    else:
      v = np.asarray(laws_.values[i], np.float64)
      values[i, :v.size], weights[i, :v.size] = v, np.asarray(laws_.probs[i], np.float64)
  dtype = laws_.probs.dtype
  return jnp.asarray(values, dtype), jnp.asarray(weights, dtype)


_LAW = re.compile(r"^\s*(beta|bernoulli|discrete)\s*\((.*)\)\s*$", re.IGNORECASE)


def _numbers(text: str, law: str) -> list:
  try:
    return [float(x) for x in text.split(",")]
  except ValueError:
    raise ValueError(f"{law}: {text.strip()!r} is not a list of numbers") from None


def parse(text: str) -> tuple:
  """Per-arm laws from text, the command line's --laws: laws separated by ';', each
  `beta(a,b)`, `bernoulli(p)` or `discrete(v1,...,vn:p1,...,pn)` (values, then
  their probabilities).

  Returns:
    A tuple of checked `Beta`/`Discrete` records; ValueError naming a bad one.

  Example:
    >>> [type(x).__name__ for x in parse("beta(4,2); discrete(0,0.5,1:0.2,0.3,0.5)")]
    ['Beta', 'Discrete']
  """
  out = []
  for part in str(text).split(";"):
    match = _LAW.match(part)
    if match is None:
      raise ValueError(f"law {part.strip()!r} is not beta(a,b), bernoulli(p) or "
                       "discrete(v1,...,vn:p1,...,pn)")
    name, inner = match.group(1).lower(), match.group(2)
    if name == "discrete":
      if inner.count(":") != 1:
        raise ValueError(f"discrete({inner}) needs its values, ':', then their probabilities")
      values, probs = inner.split(":")
      out.append(discrete(_numbers(values, name), _numbers(probs, name)))
      continue
    numbers = _numbers(inner, name)
    size = 2 if name == "beta" else 1
    if len(numbers) != size:
      raise ValueError(f"{name}({inner}) takes {size} number{'s' * (size > 1)}")
    out.append(beta(*numbers) if name == "beta" else bernoulli(*numbers))
  return tuple(out)


def mean_of(law) -> float:
  """The mean of one law (`Beta` or `Discrete`), in float64 on the host.

  Example:
    >>> mean_of(beta(4, 2))
    0.6666666666666666
  """
  if isinstance(law, Beta):
    return law.a / (law.a + law.b)
  return float(np.dot(law.values, law.probs))
