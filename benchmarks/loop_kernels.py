"""TCB and ITCB as compiled per-trial loops (numba): what a researcher who cares about
speed writes instead of jbai, and the anchor of `benchmarks/compiled_loop.py` and
`benchmarks/gpu.py`.

Written from the paper and the rules' docstrings, independently of jbai's code:
Gaussian (sigma = 1) and Bernoulli rewards, the projected sample means (an unsampled
arm's mean is the family's lower end lo), forced exploration on
T_t(i) <= ceil(sqrt(t / K)) (least-sampled arm, lowest index), the look-ahead
r_t = eps / t capped at (K - 1) min_{i != top} w_i (the paper's eq. look ahead),
the leader and a_t^min with ties broken at random, ITCB's penalty log(t w_i) / t,
and the GLLR stopping rule (leader: lowest index of the largest mean) with the gk16
threshold beta_t(delta) = log((1 + log t) / delta). numba's own generator draws the
rewards (one stream per thread).
"""

import math

import numpy as np
from numba import njit, prange

GAUSSIAN, BERNOULLI = 0, 1
TCB, ITCB = 0, 1
LO = {GAUSSIAN: -1e4, BERNOULLI: 0.0}  # the lower end of Theta, jbai's default
HI = {GAUSSIAN: 1e4, BERNOULLI: 1.0}


@njit(inline="always")
def _xlogy(x, y):
  return 0.0 if x == 0.0 else x * math.log(y)


@njit(inline="always")
def _kl(family, p, q):
  if family == GAUSSIAN:
    return 0.5 * (p - q) * (p - q)
  q = min(max(q, 1e-19), 1.0 - 1e-7)  # q kept a hair inside (0, 1), as float32 jbai
  return _xlogy(p, p) - _xlogy(p, q) + _xlogy(1.0 - p, 1.0 - p) - _xlogy(1.0 - p, 1.0 - q)


@njit(inline="always")
def _cost(family, w_a, m_a, w_b, m_b):
  """Transport cost from the leader (w_a, m_a) to (w_b, m_b): 0 unless m_a > m_b;
  the minimiser is the weighted mean (exponential families)."""
  if not m_a > m_b:
    return 0.0
  total = w_a + w_b
  x = (w_a * m_a + w_b * m_b) / total if total > 0 else 0.5 * (m_a + m_b)
  return w_a * _kl(family, m_a, x) + w_b * _kl(family, m_b, x)


@njit(inline="always")
def _random_extreme(values, largest):
  """A maximum (largest) or minimum of `values`, ties broken uniformly at random."""
  best = values[0]
  for v in values[1:]:
    best = max(best, v) if largest else min(best, v)
  n_ties = 0
  for v in values:
    n_ties += v == best
  pick = int(np.random.random() * n_ties)
  for i in range(values.shape[0]):
    if values[i] == best:
      if pick == 0:
        return i
      pick -= 1
  return values.shape[0] - 1


@njit(inline="always")
def _costs(family, rule, w, mu, top, tf, out):
  """The (penalised, for ITCB) transport costs from the leader, inf at the leader."""
  for i in range(w.shape[0]):
    if i == top:
      out[i] = np.inf
    else:
      out[i] = _cost(family, w[top], mu[top], w[i], mu[i])
      if rule == ITCB:
        out[i] += math.log(max(tf * w[i], 1e-30)) / tf


@njit
def _select(family, rule, eps, n, mu, t, w, ahead, now, later):
  k = n.shape[0]
  least = 0
  for i in range(k):
    if n[i] < n[least]:
      least = i
  if n[least] <= math.ceil(math.sqrt(t / k)):
    return least
  top = _random_extreme(mu, True)
  tf = float(max(t, 1))
  smallest = np.inf
  for i in range(k):
    w[i] = n[i] / tf
    if i != top:
      smallest = min(smallest, w[i])
  r = min(eps / tf, (k - 1) * smallest)
  for i in range(k):
    ahead[i] = w[i] + r if i == top else w[i] - r / (k - 1)
  _costs(family, rule, w, mu, top, tf, now)
  _costs(family, rule, ahead, mu, top, tf, later)
  if later.min() >= now.min():
    return top
  return _random_extreme(now, False)


@njit
def trial(family, rule, means, log_inv_delta, eps, max_steps):
  """One trial: (tau, answer); answer -1 at the cap."""
  k = means.shape[0]
  lo, hi = (-1e4, 1e4) if family == GAUSSIAN else (0.0, 1.0)
  n = np.zeros(k, np.int64)
  s = np.zeros(k)
  mu, w, ahead, now, later = (np.empty(k), np.empty(k), np.empty(k), np.empty(k),
                              np.empty(k))
  t = 0
  while True:
    top = 0
    for i in range(k):
      mu[i] = min(max(s[i] / n[i] if n[i] > 0 else lo, lo), hi)
      if mu[i] > mu[top]:
        top = i
    glr = np.inf
    for i in range(k):
      if i != top:
        glr = min(glr, _cost(family, float(n[top]), mu[top], float(n[i]), mu[i]))
    if glr > math.log1p(math.log(max(t, 1))) + log_inv_delta:
      return t, top
    if t >= max_steps:
      return t, -1
    arm = _select(family, rule, eps, n, mu, t, w, ahead, now, later)
    if family == GAUSSIAN:
      reward = means[arm] + np.random.standard_normal()
    else:
      reward = 1.0 if np.random.random() < means[arm] else 0.0
    n[arm] += 1
    s[arm] += reward
    t += 1


@njit
def seed(value):
  np.random.seed(value)


def run_trials(family, rule, means, log_inv_delta, eps, max_steps, n_trials):
  """n_trials trials: (tau [n], answer [n]). Compiled twice below: prange is a plain
  range in a function compiled without parallel=True."""
  tau = np.zeros(n_trials, np.int64)
  answer = np.zeros(n_trials, np.int64)
  for j in prange(n_trials):
    tau[j], answer[j] = trial(family, rule, means, log_inv_delta, eps, max_steps)
  return tau, answer


run_serial = njit(run_trials)  # one thread, the trials one after the other
run_parallel = njit(parallel=True)(run_trials)  # the trials spread over every core
