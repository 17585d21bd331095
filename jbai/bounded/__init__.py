"""Arms of any law in [0, 1]: the laws, the empirical law a trial keeps, KL_inf,
the non-parametric GLR stop and the oracle T* (issue 76, bounded half).

- `laws`: the truth the simulator draws from: `beta(a, b)`, `discrete(values,
  probs)`, `bernoulli(p)`, gathered per arm by `arm_laws([...])`; `sample`, `means`,
  and `atoms` (exact, or Gauss-Jacobi for Beta) for the oracle.
- `histogram`: what a trial keeps: per-arm counts and masses on a fixed grid of
  [0, 1], a reward split between its two neighbouring grid points (exact on the
  grid; a mean-preserving spread off it, which can only lower KL_inf: the stop stays
  delta-correct), with the error bound.
- `kl_inf`: KL_inf^-(F, mu) and KL_inf^+(F, mu) of Honda & Takemura through their
  one-dimensional dual, by safeguarded Newton, over any leading axes.
- `glr`: the GLR Lambda(a, b) = inf_m N_a KL_inf^-(F_a, m) + N_b KL_inf^+(F_b, m),
  its threshold, delta-correct for every law in [0, 1], and the stop.
- `oracle`: T* and w* of an instance given its laws.
- `family`: the model "bounded" the engine runs (`bounded_family(laws)`): the
  histograms as a trial's statistics, KL_inf costs, the truth's oracle.

Example:
  >>> from jbai import bounded
  >>> arms = bounded.arm_laws([bounded.beta(4, 2), bounded.bernoulli(0.5)])
  >>> [round(float(m), 4) for m in bounded.means(arms)]
  [0.6667, 0.5]
"""

from jbai.bounded import family, glr, histogram, kl_inf, laws, oracle
from jbai.bounded.family import bounded as bounded_family
from jbai.bounded.family import true_means
from jbai.bounded.glr import PairGLR, pair_glr, should_stop, statistic, threshold
from jbai.bounded.histogram import Histograms, check_grid, uniform_grid
from jbai.bounded.kl_inf import KLInf, kl_inf_down, kl_inf_pair, kl_inf_up
from jbai.bounded.laws import Laws, arm_laws, bernoulli, beta, discrete, means, sample
from jbai.bounded.oracle import Oracle, optimal, solve

__all__ = ["bounded_family", "family", "true_means", "Histograms", "KLInf", "Laws", "Oracle", "PairGLR", "arm_laws", "bernoulli", "beta",
           "check_grid", "discrete", "glr", "histogram", "kl_inf", "kl_inf_down",
           "kl_inf_pair", "kl_inf_up", "laws", "means", "optimal", "oracle", "pair_glr",
           "sample", "should_stop", "solve", "statistic", "threshold", "uniform_grid"]
