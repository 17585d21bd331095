"""Uniform sampling and Successive Rejects to a fixed budget as compiled per-trial
loops (numba): the anchor of the budget rows of `benchmarks/compiled_loop.py`.

Written from Audibert, Bubeck & Munos (2010) and the rules' definitions,
independently of jbai's code: Gaussian (sigma = 1) and Bernoulli rewards, a trial
of exactly n rewards, its answer the arm of largest sample mean (lowest index
among ties) for uniform sampling (the arms in turn) and the last arm left for
Successive Rejects (phases k = 1 .. K - 1 of n_k = ceil((n - K) / (log-bar(K)
(K + 1 - k))) rewards per active arm, the active arm of lowest mean rejected
after each, its ties to the highest index; the rewards the phases leave to the
last arm). numba's own generator draws the rewards (one stream per thread).
"""

import math

import numpy as np
from numba import njit, prange

GAUSSIAN, BERNOULLI = 0, 1
UNIFORM, SUCCESSIVE_REJECTS = 0, 1


@njit
def _reward(family, mean):
  if family == GAUSSIAN:
    return mean + np.random.standard_normal()
  return 1.0 if np.random.random() < mean else 0.0


@njit
def uniform_trial(family, means, budget):
  """The answer of one trial of uniform sampling to `budget` rewards."""
  k = means.shape[0]
  s = np.zeros(k)
  n = np.zeros(k)
  for t in range(budget):
    arm = t % k
    s[arm] += _reward(family, means[arm])
    n[arm] += 1
  best, best_mean = 0, -math.inf
  for i in range(k):
    m = s[i] / n[i] if n[i] > 0 else -math.inf
    if m > best_mean:
      best, best_mean = i, m
  return best


@njit
def successive_rejects_trial(family, means, budget):
  """The answer of one trial of Successive Rejects with budget `budget`."""
  k = means.shape[0]
  log_bar = 0.5
  for i in range(2, k + 1):
    log_bar += 1.0 / i
  s = np.zeros(k)
  n = np.zeros(k)
  active = np.ones(k, np.bool_)
  used, prev = 0, 0
  for phase in range(1, k):
    nk = math.ceil((budget - k) / (log_bar * (k + 1 - phase)))
    for arm in range(k):
      if active[arm]:
        for _ in range(nk - prev):
          s[arm] += _reward(family, means[arm])
          n[arm] += 1
        used += nk - prev
    prev = nk
    worst, worst_mean = -1, math.inf
    for arm in range(k):
      if active[arm]:
        m = s[arm] / n[arm] if n[arm] > 0 else -math.inf
        if m <= worst_mean:  # ties: the highest index
          worst, worst_mean = arm, m
    active[worst] = False
  last = 0
  for arm in range(k):
    if active[arm]:
      last = arm
  for _ in range(budget - used):  # the rest of the budget: the last arm
    s[last] += _reward(family, means[last])
  return last


@njit
def _trial(rule, family, means, budget):
  if rule == UNIFORM:
    return uniform_trial(family, means, budget)
  return successive_rejects_trial(family, means, budget)


@njit
def _run(rule, family, means, budget, n_trials):
  out = np.empty(n_trials, np.int64)
  for j in range(n_trials):
    out[j] = _trial(rule, family, means, budget)
  return out


@njit(parallel=True)
def _run_parallel(rule, family, means, budget, n_trials):
  out = np.empty(n_trials, np.int64)
  for j in prange(n_trials):
    out[j] = _trial(rule, family, means, budget)
  return out


def run_serial(rule, family, means, budget, n_trials):
  """n_trials answers on one thread."""
  return _run(rule, family, np.asarray(means, float), int(budget), int(n_trials))


def run_parallel(rule, family, means, budget, n_trials):
  """n_trials answers over every core (numba prange)."""
  return _run_parallel(rule, family, np.asarray(means, float), int(budget), int(n_trials))


@njit
def seed(value):
  np.random.seed(value)
