"""Arms of any law in [0, 1], known to the rule and the stop by their support alone,
as a family the engine runs (issue 76, bounded half).

`bounded(laws)`, "bounded": the rewards of arm k are drawn from its true law
(`jbai.bounded.laws`: Beta, discrete, Bernoulli), which is part of the family's
identity (`params`), so that two instances with different laws never share a
compiled program. The rule and the stop never read the laws: a trial keeps per arm

  stats[k] = (sum x, m_0, ..., m_{G-1})   (stat_dim = 1 + G),

the sum of the rewards (the engine's column 0) and the histogram masses on the
grid z_j = j / (G - 1) (`jbai.bounded.histogram`: a reward split between its two
grid neighbours, 1 - r and r; exact on the grid, a mean-preserving spread off it,
which can only lower KL_inf, so the stop stays delta-correct). The masses sum to
the arm's count N_k, so the empirical law F~_k = masses / N_k is read from the
statistics alone, as the hook `Family.pair_costs` must (the weights it is handed
are not always the counts: TCB's look-ahead moves eps of them).

* `mean` and `mle`: the histogram's mean sum_j z_j F~_j, the sample mean up to
  float rounding (the same number the costs order the arms by).
* `pair_costs(w, means, leader, stats)`: the non-parametric transport cost from the
  leader a to every arm b, inf_{m in [mu_b, mu_a]} w_a KL_inf^-(F~_a, m) +
  w_b KL_inf^+(F~_b, m) (`jbai.bounded.glr.pair_glr`; Jourdan, Degenne, Baudry,
  de Heide & Kaufmann, NeurIPS 2022, Section 2), 0 where mu_b >= mu_a and +inf
  at the leader. With the counts as weights it is the GLR statistic Lambda(a, b),
  so the engine's GLLR stop is the non-parametric GLR stop, against the `bounded`
  threshold (`jbai.thresholds.bounded`).
* `solve(means)`: the truth's oracle, T* and w* of the true laws
  (`jbai.bounded.oracle`), whatever `means` says: read by the summaries (the
  ratio E[tau] / (T* log(1/delta))), never by a rule. A rule that would call an
  oracle or a KL of the mean (Track-and-Stop, best challenger, the
  Thompson-sampling leaders, the UCB and LUCB rules, ...) would read the truth or
  a parametric law that is not there, and is refused (`refusal`); `kl`, `fisher`
  and `log_density` raise a one-line ValueError.
* `sample`, `sample_arm`: draws from the arms' own laws; the `means` a trial is
  given must be the laws' means (`true_means`), for the answer it is scored
  against.

Rules (`RULES`): tcb, itcb, ebtc, ebtci and uniform. EB-TC is EB-TC of Jourdan et
al. 2022 (empirical-best leader, transport-cost challenger on these costs, with
the forced exploration of jbai's `ebtc`); EB-TCI its variant with the log T_t(j)
penalty. Cost: each cost is a bisection over m (nmant + 3 steps) of two KL_inf
Newton solves over G atoms, per arm.
"""

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jbai.bounded import histogram, laws as laws_lib, oracle as oracle_lib
from jbai.bounded.glr import pair_glr
from jbai.builders import cached
from jbai.families.base import Family

NAME = "bounded"
RULES = ("tcb", "itcb", "ebtc", "ebtci", "uniform")
ORACLE_NODES = 64  # Gauss-Jacobi atoms of a Beta arm in the oracle


def _refuse(*args):
  del args
  raise ValueError(f"the {NAME!r} model knows its arms by their support [0, 1] alone and "
                   "has no KL in the mean: a rule or stop must take its costs through "
                   "jbai.transport.pair_costs")


def _checked(arms: Sequence) -> tuple:
  """The laws as a tuple of checked `Beta`/`Discrete` records (hashable)."""
  arms = tuple(arms)
  laws_lib.arm_laws(arms)  # checks every law, ValueError naming a bad one
  out = []
  for arm in arms:
    out.append(laws_lib.beta(*arm) if isinstance(arm, laws_lib.Beta)
               else laws_lib.discrete(arm.values, arm.probs))
  return tuple(out)


def probabilities(stats: jax.Array) -> tuple:
  """(n [...], F~ [..., G]) of an arm's statistics [..., 1 + G]: the count (the
  masses' sum) and the empirical law (zeros for an arm with no reward)."""
  masses = stats[..., 1:]
  n = jnp.sum(masses, axis=-1)
  probs = jnp.where(n[..., None] > 0, masses / jnp.maximum(n, 1e-30)[..., None], 0)
  return n, probs


@cached
def bounded(arms: tuple, points: int = histogram.DEFAULT_POINTS) -> Family:
  """Arms with laws on [0, 1], the rule and the stop told only the support.

  Args:
    arms: one law per arm (`jbai.bounded.beta`, `discrete`, `bernoulli`), a tuple.
    points: G, the histogram's grid (uniform, step 1 / (G - 1)).

  Returns:
    The family "bounded" (module docstring); ValueError naming a bad law.

  Example:
    >>> from jbai import bounded as B
    >>> fam = bounded((B.beta(4, 2), B.bernoulli(0.5)))
    >>> fam.name, fam.stat_dim, [round(float(m), 4) for m in true_means(fam)]
    ('bounded', 102, [0.6667, 0.5])
  """
  arms = _checked(arms)
  histogram.uniform_grid(points)  # checks G
  grid_np = np.arange(int(points)) / (int(points) - 1)  # as uniform_grid, in float64
  ref = laws_lib.arm_laws(arms)
  host = [np.asarray(x) for x in ref]  # numpy copies, cast per call to the dtype in use
  atoms = [np.asarray(x, np.float64) for x in laws_lib.atoms(ref, ORACLE_NODES)]

  def law_arrays(dtype):
    return laws_lib.Laws(*(jnp.asarray(x, jnp.int32 if i == 0 else dtype)
                           for i, x in enumerate(host)))

  def grid(dtype):
    return jnp.asarray(grid_np, dtype)

  def stat(x):  # (x, split of x between its grid neighbours)
    x = jnp.asarray(x) * 1.0
    return jnp.concatenate([x[..., None], histogram.split(grid(x.dtype), x)], axis=-1)

  def mean(n, stats):
    del n  # the masses sum to the count
    _, probs = probabilities(stats)
    return jnp.sum(probs * grid(stats.dtype), axis=-1)

  def costs(w, means, leader, stats):
    del means  # the empirical laws order the arms (`mean`)
    if stats is None:
      raise ValueError(f"the {NAME!r} model reads its empirical laws from the trial's "
                       "statistics: pass stats= to jbai.transport.pair_costs")
    _, probs = probabilities(stats)  # [..., K, G]
    w = jnp.asarray(w, probs.dtype)
    leader = jnp.asarray(leader)
    w_a = jnp.take_along_axis(w, leader[..., None], axis=-1)  # [..., 1]
    p_a = jnp.take_along_axis(probs, leader[..., None, None], axis=-2)  # [..., 1, G]
    value = pair_glr(grid(probs.dtype), w_a, p_a, w, probs).value
    is_leader = jnp.arange(w.shape[-1]) == leader[..., None]
    return jnp.where(is_leader, jnp.inf, value)

  def oracle(means):  # the truth's T*, whatever `means` says (module docstring)
    dtype = jnp.asarray(means).dtype
    sol = oracle_lib.solve(*(jnp.asarray(x, dtype) for x in atoms))
    return sol.w, 1 / sol.t_star

  def sample(key, means):  # means [..., K]: one reward of every arm
    means = jnp.asarray(means)
    return laws_lib.sample(key, law_arrays(means.dtype), means.shape[:-1])

  def sample_arm(key, means, arm):
    return laws_lib.sample(key, law_arrays(jnp.asarray(means).dtype))[arm]

  return Family(
      name=NAME, lo=0.0, hi=1.0, kl=_refuse, sample=sample, stat_dim=1 + int(points),
      stat=stat, mean=mean, mle=mean, fisher=_refuse, log_density=_refuse,
      params=(("laws", arms), ("points", int(points))), pair_costs=costs, solve=oracle,
      sample_arm=sample_arm)


def true_means(family: Family) -> np.ndarray:
  """[K] float64, the means of the family's true laws: the `means` of its trials."""
  return np.asarray([laws_lib.mean_of(law) for law in dict(family.params)["laws"]])


def check_means(family: Family, means) -> None:
  """ValueError unless every row of `means` ([K] or [I, K]) is the bounded model's
  laws' means (to 1e-6, a float32's rounding): its trials draw from the laws, and
  are scored against `means`. Nothing for another family."""
  if family.name != NAME:
    return
  want = true_means(family)
  got = np.asarray(means, np.float64)
  if got.shape[-1:] != want.shape or not np.allclose(got, want, rtol=0, atol=1e-6):
    raise ValueError(f"the bounded model's means are its laws' "
                     f"({', '.join(f'{m:g}' for m in want)}), got {got.tolist()}: pass "
                     "jbai.bounded.true_means(family)")


def refusal(family: Family, rule_name: str):
  """Why a built-in rule does not run on the bounded model, or None."""
  if family.name == NAME and rule_name not in RULES:
    return (f"rule {rule_name!r} cannot run on the bounded model (laws known by their "
            f"support [0, 1] only): it needs an oracle or a KL of the mean; use --rule "
            f"{','.join(RULES[:4])}")
  return None


__all__ = ["NAME", "RULES", "bounded", "check_means", "probabilities", "refusal", "true_means"]
