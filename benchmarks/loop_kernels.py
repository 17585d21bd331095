"""TCB and ITCB as compiled per-trial loops (numba): what a researcher who cares about
speed writes instead of jbai, and the anchor of `benchmarks/compiled_loop.py` and
`benchmarks/gpu.py`.

Written from the paper and the rules' docstrings, independently of jbai's code:
Gaussian (sigma = 1) and Bernoulli rewards, the projected sample means (an unsampled
arm's mean is the family's lower end lo; means clipped to [lo, hi]), forced exploration
on T_t(i) <= ceil(sqrt(t / K)) (least-sampled arm, lowest index), the look-ahead
r_t = eps / t capped at (K - 1) min_{i != top} w_i (the paper's eq. look ahead), the
leader and a_t^min with ties broken uniformly at random, ITCB's penalty log(t w_i) / t,
and the GLLR stopping rule (leader: lowest index of the largest mean) with the gk16
threshold beta_t(delta) = log((1 + log t) / delta). numba's own generator draws the
rewards (one stream per thread).

Lean by construction: `_build` compiles one loop per (family, rule), with the family's
transport cost (Gaussian closed form w_a w_b (m_a - m_b)^2 / (2 (w_a + w_b)); Bernoulli
KL at the weighted mean), its reward draw and the rule's penalty fixed at build time,
so no step branches on them; `run_serial` / `run_parallel` / `trial` pick the
specialisation. A random number is drawn for a tie-break only when there is a tie
(never in practice on Gaussian means), the means are updated for the pulled arm only,
the GLLR test stops at the first challenger below the threshold, the look-ahead costs
are reduced to their minimum as they are computed, and the work arrays are allocated
once per trial.
"""

import math

import numpy as np
from numba import njit, prange

GAUSSIAN, BERNOULLI = 0, 1
TCB, ITCB = 0, 1
LO = {GAUSSIAN: -1e4, BERNOULLI: 0.0}  # the lower end of Theta, jbai's default
HI = {GAUSSIAN: 1e4, BERNOULLI: 1.0}

# The transport cost from the leader (w_a, m_a) to (w_b, m_b): 0 unless m_a > m_b; the
# minimiser is the weighted mean x (exponential families). w_a + w_b > 0 whenever
# m_a > m_b: an unsampled arm's mean is lo, the smallest there is, so the leader has
# been sampled in the GLLR, and past forced exploration every weight is positive (the
# look-ahead only adds to the leader's).


@njit
def _gaussian_cost(w_a, m_a, w_b, m_b):
  """w_a kl(m_a, x) + w_b kl(m_b, x) with kl(p, q) = (p - q)^2 / 2, in closed form."""
  if m_a > m_b:
    d = m_a - m_b
    return w_a * w_b * d * d / (2.0 * (w_a + w_b))
  return 0.0


@njit
def _xlogy(x, y):
  return 0.0 if x == 0.0 else x * math.log(y)


@njit
def _bernoulli_kl(p, q):
  q = min(max(q, 1e-19), 1.0 - 1e-7)  # q kept a hair inside (0, 1), as float32 jbai
  return _xlogy(p, p) - _xlogy(p, q) + _xlogy(1.0 - p, 1.0 - p) - _xlogy(1.0 - p, 1.0 - q)


@njit
def _bernoulli_cost(w_a, m_a, w_b, m_b):
  if m_a > m_b:
    x = (w_a * m_a + w_b * m_b) / (w_a + w_b)
    return w_a * _bernoulli_kl(m_a, x) + w_b * _bernoulli_kl(m_b, x)
  return 0.0


@njit
def _gaussian_reward(mean):
  return mean + np.random.standard_normal()


@njit
def _bernoulli_reward(mean):
  return 1.0 if np.random.random() < mean else 0.0


@njit
def _random_tie(values, value, n_ties, skip):
  """One of the n_ties indices i != skip with values[i] == value, uniformly at random
  (the only place a tie-break draws)."""
  pick = int(np.random.random() * n_ties)
  last = skip
  for i in range(values.shape[0]):
    if i != skip and values[i] == value:
      if pick == 0:
        return i
      pick -= 1
      last = i
  return last  # not reached: pick < n_ties


def _build(family, rule):
  """(trial, run_serial, run_parallel) compiled for one family and one rule: plain
  Python `if`s here, so each compiled loop holds only its own cost, reward and penalty."""
  lo, hi = LO[family], HI[family]
  cost = _gaussian_cost if family == GAUSSIAN else _bernoulli_cost
  reward = _gaussian_reward if family == GAUSSIAN else _bernoulli_reward
  itcb = rule == ITCB  # a compile-time constant in the loops below

  @njit
  def trial(means, log_inv_delta, eps, max_steps):
    """One trial: (tau, answer); answer -1 at the cap. One function on purpose: the
    selection written in place ran about 20% faster (numba 0.68) than the same code as
    a called or inlined helper."""
    k = means.shape[0]
    n = np.zeros(k, np.int64)
    s = np.zeros(k)
    mu = np.full(k, lo)  # projected means: an unsampled arm's is lo
    w, now = np.empty(k), np.empty(k)
    t = 0
    while True:
      top, ties, least = 0, 1, 0  # first largest mean, its ties, first least-sampled
      for i in range(1, k):
        if mu[i] > mu[top]:
          top, ties = i, 1
        elif mu[i] == mu[top]:
          ties += 1
        if n[i] < n[least]:
          least = i
      # GLLR: stop when every challenger's cost from the leader exceeds the threshold
      threshold = math.log1p(math.log(max(t, 1))) + log_inv_delta
      stop = True
      for i in range(k):
        if i != top and not cost(float(n[top]), mu[top], float(n[i]), mu[i]) > threshold:
          stop = False
          break
      if stop:
        return t, top
      if t >= max_steps:
        return t, -1
      if n[least] <= math.ceil(math.sqrt(t / k)):  # forced exploration (always at t = 0)
        arm = least
      else:
        leader = top if ties == 1 else _random_tie(mu, mu[top], ties, -1)
        tf = float(t)  # t >= K >= 1 past forced exploration
        smallest = math.inf
        for i in range(k):
          w[i] = n[i] / tf
          if i != leader and w[i] < smallest:
            smallest = w[i]
        r = min(eps / tf, (k - 1) * smallest)  # look-ahead: the leader's weight gains r,
        w_ahead, r_each = w[leader] + r, r / (k - 1)  # every other arm's loses r / (K - 1)
        # a_t^min: the challenger of least (penalised) cost now, and the least cost after
        # the look-ahead; the leader is pulled unless the look-ahead lowers that minimum
        best, arg, best_ties, best_later = math.inf, leader, 0, math.inf
        for i in range(k):
          if i == leader:
            continue
          c_now = cost(w[leader], mu[leader], w[i], mu[i])
          c_later = cost(w_ahead, mu[leader], w[i] - r_each, mu[i])
          if itcb:
            c_now += math.log(max(tf * w[i], 1e-30)) / tf
            c_later += math.log(max(tf * (w[i] - r_each), 1e-30)) / tf
          now[i] = c_now
          if c_now < best:
            best, arg, best_ties = c_now, i, 1
          elif c_now == best:
            best_ties += 1
          if c_later < best_later:
            best_later = c_later
        if best_later >= best:
          arm = leader
        elif best_ties == 1:
          arm = arg
        else:
          arm = _random_tie(now, best, best_ties, leader)
      n[arm] += 1
      s[arm] += reward(means[arm])
      mu[arm] = min(max(s[arm] / n[arm], lo), hi)  # the one mean that changed
      t += 1

  def run_trials(means, log_inv_delta, eps, max_steps, n_trials):
    tau = np.zeros(n_trials, np.int64)
    answer = np.zeros(n_trials, np.int64)
    for j in prange(n_trials):  # a plain range when compiled without parallel=True
      tau[j], answer[j] = trial(means, log_inv_delta, eps, max_steps)
    return tau, answer

  def run_instances(means, log_inv_delta, eps, max_steps, n_trials):
    n_instances = means.shape[0]
    tau = np.zeros((n_instances, n_trials), np.int64)
    answer = np.zeros((n_instances, n_trials), np.int64)
    for job in prange(n_instances * n_trials):  # every (instance, trial) pair, one pool
      i, j = job // n_trials, job % n_trials
      tau[i, j], answer[i, j] = trial(means[i], log_inv_delta, eps, max_steps)
    return tau, answer

  return (trial, njit(run_trials), njit(parallel=True)(run_trials),
          njit(parallel=True)(run_instances))


_KERNELS = {(f, r): _build(f, r) for f in (GAUSSIAN, BERNOULLI) for r in (TCB, ITCB)}


@njit
def seed(value):
  np.random.seed(value)


def trial(family, rule, means, log_inv_delta, eps, max_steps):
  """One trial: (tau, answer); answer -1 at the cap."""
  return _KERNELS[family, rule][0](means, log_inv_delta, eps, max_steps)


def run_serial(family, rule, means, log_inv_delta, eps, max_steps, n_trials):
  """n_trials trials on one thread, one after the other: (tau [n], answer [n])."""
  return _KERNELS[family, rule][1](means, log_inv_delta, eps, max_steps, n_trials)


def run_parallel(family, rule, means, log_inv_delta, eps, max_steps, n_trials):
  """n_trials trials spread over every core (numba prange): (tau [n], answer [n])."""
  return _KERNELS[family, rule][2](means, log_inv_delta, eps, max_steps, n_trials)


def run_instances(family, rule, means, log_inv_delta, eps, max_steps, n_trials):
  """n_trials trials of each instance, means [I, K], every (instance, trial) pair
  spread over every core (numba prange): (tau [I, n], answer [I, n])."""
  return _KERNELS[family, rule][3](means, log_inv_delta, eps, max_steps, n_trials)


if __name__ == "__main__":  # a quick self-check: every specialisation stops on the best arm
  seed(0)
  for fam, mus in ((GAUSSIAN, [1.2, 1.0, 1.0, 1.0, 1.0]),
                   (BERNOULLI, [0.8, 0.5, 0.3, 0.29, 0.06])):
    for rul in (TCB, ITCB):
      tau, answer = run_serial(fam, rul, np.asarray(mus), math.log(100), 1.0, 10**7, 50)
      print(f"family {fam} rule {rul}: mean tau {tau.mean():.0f}, "
            f"correct {np.mean(answer == 0):.2f}")
      assert (answer >= 0).all() and np.mean(answer == 0) >= 0.9
