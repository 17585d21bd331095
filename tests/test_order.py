"""P(error) does not depend on the order in which the arms are listed (slow tier).

Audibert, Bubeck & Munos 2010's first experiment: Bernoulli, K = 20, one arm at 0.5
and nineteen at 0.4, budget T = 2,000. Arms tie often at this budget, so a rule
that broke ties by index would answer better with the best arm listed first than
last (uniform 0.400 against 0.472, Successive Rejects 0.160 against 0.218,
Sequential Halving 0.263 against 0.422 with lowest-index ties). jbai breaks every
tie at random, so P(error at T) with the best arm first and with it last agree,
and both match an independent computation with random ties: exact for uniform
sampling (100 rewards per arm), plain numpy from the papers for Successive
Rejects (Audibert et al. 2010) and Sequential Halving (Karnin, Koren & Somekh
2013, Algorithm 1).

Confidence: each comparison allows 3 standard errors of the difference (two-sided
0.27% under the null for each of the 9 comparisons: under 2.5% that any fails
for a correct jbai). Power: at these trial counts the lowest-index gaps above are
6 (uniform), 10 (SR) and 25 (SH) standard errors of the first-against-last
difference.
"""

import math

import jax
import numpy as np
import pytest
from scipy import stats

import jbai

K, BUDGET, BEST, OTHER = 20, 2000, 0.5, 0.4
TRIALS = {"uniform": 4000, "successive-rejects": 10000, "sequential-halving": 10000}


def uniform_error_exact() -> float:
  """P(error) of uniform sampling with 100 rewards per arm and random ties: the
  best arm's count s wins a tie with k of the other 19 arms with chance 1/(k+1)."""
  n = BUDGET // K
  s = np.arange(n + 1)
  best = stats.binom.pmf(s, n, BEST)
  equal, below = stats.binom.pmf(s, n, OTHER), stats.binom.cdf(s - 1, n, OTHER)
  others = K - 1
  win = sum(math.comb(others, k) * equal ** k * below ** (others - k) / (k + 1)
            for k in range(others + 1))
  return float(1 - np.sum(best * win))


def pick_random(rng, candidates: np.ndarray) -> np.ndarray:
  """[N] a uniformly random True column of each row of `candidates` [N, M]."""
  u = np.where(candidates, rng.random(candidates.shape), -1.0)
  return np.argmax(u, axis=1)


def successive_rejects_error(rng, n_trials: int) -> float:
  """Audibert et al. 2010: phases k = 1..K-1 bring each active arm to n_k rewards,
  then the active arm of lowest mean (ties at random) is rejected."""
  means = np.array([BEST] + [OTHER] * (K - 1))
  log_bar = 0.5 + sum(1 / i for i in range(2, K + 1))
  sums = np.zeros((n_trials, K))
  active = np.ones((n_trials, K), bool)
  previous = 0
  for k in range(1, K):
    n_k = math.ceil((BUDGET - K) / (log_bar * (K + 1 - k)))
    sums += np.where(active, rng.binomial(n_k - previous, means, (n_trials, K)), 0)
    previous = n_k
    low = np.where(active, sums, np.inf)  # equal counts: sums order the means
    worst = pick_random(rng, low == low.min(axis=1, keepdims=True))
    active[np.arange(n_trials), worst] = False
  return float(np.mean(np.argmax(active, axis=1) != 0))


def sequential_halving_error(rng, n_trials: int) -> float:
  """Karnin et al. 2013, Algorithm 1: R = ceil(log2 K) rounds; round r gives each
  arm of S_r floor(T / (|S_r| R)) rewards, and the ceil(|S_r|/2) arms of highest
  round average stay (ties at random)."""
  rounds = math.ceil(math.log2(K))
  alive = np.tile(np.arange(K), (n_trials, 1))  # [N, |S_r|] the arms of S_r
  for _ in range(rounds):
    size = alive.shape[1]
    if size == 1:
      break
    t_r = BUDGET // (size * rounds)
    mean = np.where(alive == 0, BEST, OTHER)
    sums = rng.binomial(t_r, mean)
    order = np.lexsort((rng.random(sums.shape), -sums), axis=1)  # best first, ties random
    alive = np.take_along_axis(alive, order[:, :(size + 1) // 2], axis=1)
  return float(np.mean(alive[:, 0] != 0))


def se(p: float, n: int) -> float:
  return math.sqrt(max(p * (1 - p), 1e-4) / n)


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["uniform", "successive-rejects", "sequential-halving"])
def test_p_error_does_not_depend_on_the_order_of_the_arms(rule):
  n = TRIALS[rule]
  first = [BEST] + [OTHER] * (K - 1)
  errors = [float(jbai.budget(jax.random.key(73), "bernoulli", means, rule, budget=BUDGET,
                              n_trials=n, checkpoints=[BUDGET]).error[-1])
            for means in (first, first[::-1])]
  if rule == "uniform":
    reference, ref_n = uniform_error_exact(), None
  else:
    ref_n = 4 * n
    run = successive_rejects_error if rule == "successive-rejects" else sequential_halving_error
    reference = run(np.random.default_rng(73), ref_n)
  ref_se = 0.0 if ref_n is None else se(reference, ref_n)
  a, b = errors
  assert abs(a - b) <= 3 * math.hypot(se(a, n), se(b, n)), (rule, errors)
  for p in errors:
    assert abs(p - reference) <= 3 * math.hypot(se(p, n), ref_se), (rule, errors, reference)
