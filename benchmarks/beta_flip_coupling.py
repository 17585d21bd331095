"""An unbiased coupling estimator of d E[tau] / d beta, against the CRN finite
difference: single coin flips, each on its own branch.

For a top-two rule, d E[tau] / d beta = E[sum_{t < tau} (Q_t(L) - Q_t(C))], Q_t(a) the
expected stopping time given the history and coin a at step t (the policy gradient
theorem for a coin of law Bernoulli(beta)). Each difference can be estimated without
bias by any coupling of the two continuations: the trajectory itself (its coin) and a
branch from step t with the other coin. This script measures, per trial, the sum over
every step t of (tau_branch - tau) times the sign of the branch's coin, with two
couplings of the branch's later coins to the trajectory's:

* the identity: the same uniform at every step (the finite difference's coupling);
* merge-seeking: while both have the same leader L and challenger C and the branch
  has one more pull of one of them, the branch's uniform is shifted by 1 - beta (or
  beta) modulo 1, so that the trajectory pulling the arm the branch has too many of
  is the branch pulling the arm it lacks; once their counts agree the two are the
  same trajectory (each arm's n-th reward is the same: stacks of rewards), and the
  branch stops with tau_branch = tau.

It is written as a numba loop, not with jbai, since each trial needs a branch from
every step: EB-TC (empirical-best leader, the Gaussian transport cost's challenger,
the leader with probability beta; each arm pulled once first), Gaussian unit
variance, the GLLR stop at log((1 + log t) / delta). The CRN finite difference at h
shares the uniforms and the reward stacks. Efficiency: per-trial variance times the
simulated steps per trial estimate (the branch steps included), lower is better.

  python benchmarks/beta_flip_coupling.py [--trials 300] [--delta 1e-2]
"""

import argparse

import numba
import numpy as np

MEANS = np.array([1.0, 0.6, 0.5, 0.4, 0.2])
CAP = 20_000  # steps; no trial here reaches it


@numba.njit(cache=True)
def leader_challenger(n, s):
  """Empirical best, the arm of least transport cost against it, and that cost."""
  m = s / n
  top = np.argmax(m)
  ch, cost = -1, np.inf
  for a in range(n.shape[0]):
    if a != top:
      d = m[top] - m[a]
      c = 0.5 * d * d / (1.0 / n[top] + 1.0 / n[a]) if d > 0 else 0.0
      if c < cost:
        ch, cost = a, c
  return top, ch, cost


@numba.njit(cache=True)
def stops(t, cost, log_inv_delta):
  return cost >= log_inv_delta + np.log(1.0 + np.log(t))


@numba.njit(cache=True)
def trajectory(z, u, beta, log_inv_delta, record):
  """tau, and with `record` the counts, sums and coins (0: leader, 1: challenger) at
  each step."""
  k = z.shape[0]
  n, s, t = np.ones(k), z[:, 0].copy(), k
  ns, ss = np.zeros((CAP, k)), np.zeros((CAP, k))
  coins = -np.ones(CAP, np.int64)
  while t < CAP:
    if record:
      ns[t], ss[t] = n, s
    top, ch, cost = leader_challenger(n, s)
    if stops(t, cost, log_inv_delta):
      break
    coin = 0 if u[t] < beta else 1
    coins[t] = coin
    a = top if coin == 0 else ch
    s[a] += z[a, int(n[a])]
    n[a] += 1
    t += 1
  return t, ns, ss, coins


@numba.njit(cache=True)
def branch(z, u, v, beta, log_inv_delta, tau, ns, ss, coins, t0, merge):
  """The branch from step t0 with the other coin: (its tau, its steps)."""
  n, s = ns[t0].copy(), ss[t0].copy()
  top, ch, _ = leader_challenger(n, s)
  a = ch if coins[t0] == 0 else top
  s[a] += z[a, int(n[a])]
  n[a] += 1
  t, steps = t0 + 1, 1
  while t < CAP:
    if t <= tau and np.all(n == ns[t]):
      return tau, steps  # the same state from here on: the same trajectory
    top, ch, cost = leader_challenger(n, s)
    if stops(t, cost, log_inv_delta):
      return t, steps
    w = u[t] if t < tau else v[t]  # past the trajectory's stop: fresh uniforms
    if merge and t < tau:
      top0, ch0, _ = leader_challenger(ns[t], ss[t])
      if top0 == top and ch0 == ch:
        if n[top] > ns[t, top] and n[ch] < ns[t, ch]:
          w = (w + 1.0 - beta) % 1.0  # trajectory: leader iff branch: challenger
        elif n[top] < ns[t, top] and n[ch] > ns[t, ch]:
          w = (w - beta) % 1.0        # trajectory: challenger iff branch: leader
    a = top if w < beta else ch
    s[a] += z[a, int(n[a])]
    n[a] += 1
    t += 1
    steps += 1
  return t, steps


@numba.njit(cache=True)
def trial(z, u, v, beta, log_inv_delta, h):
  """(tau(beta + h), tau(beta - h), tau, sum over steps of the signed branch
  differences and their steps, for merge-seeking then identity couplings)."""
  plus = trajectory(z, u, beta + h, log_inv_delta, False)[0]
  minus = trajectory(z, u, beta - h, log_inv_delta, False)[0]
  tau, ns, ss, coins = trajectory(z, u, beta, log_inv_delta, True)
  out = np.zeros(4)
  for j, merge in enumerate((True, False)):
    for t in range(z.shape[0], tau):
      tb, steps = branch(z, u, v, beta, log_inv_delta, tau, ns, ss, coins, t, merge)
      out[2 * j] += (tb - tau) * (1.0 if coins[t] == 1 else -1.0)
      out[2 * j + 1] += steps
  return plus, minus, tau, out


def main(trials: int, delta: float, h: float = 0.1, beta: float = 0.5, seed: int = 0):
  rng = np.random.default_rng(seed)
  rows = []
  for _ in range(trials):
    z = rng.standard_normal((MEANS.size, CAP)) + MEANS[:, None]
    plus, minus, tau, out = trial(z, rng.random(CAP), rng.random(CAP), beta,
                                  np.log(1 / delta), h)
    rows.append([plus, minus, tau, *out])
  plus, minus, tau, g_merge, c_merge, g_same, c_same = np.asarray(rows, np.float64).T
  print(f"EB-TC, Gaussian {MEANS.tolist()}, delta = {delta:g}, beta = {beta}, {trials} "
        f"trials, E[tau] = {tau.mean():.0f}")
  print("| estimator | gradient (+- 1.96 se) | per-trial variance | steps per estimate | "
        "variance x steps |")
  print("|---|---|---|---|---|")
  for label, g, steps in ((f"FD, CRN, h = {h:g} (biased)", (plus - minus) / (2 * h), plus + minus),
                          ("single flips, merge-seeking coupling", g_merge, tau + c_merge),
                          ("single flips, identity coupling", g_same, tau + c_same)):
    var = g.var(ddof=1)
    print(f"| {label} | {g.mean():.0f} +- {1.96 * np.sqrt(var / trials):.0f} | {var:.3g} | "
          f"{steps.mean():.0f} | {var * steps.mean():.3g} |")


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trials", type=int, default=300)
  parser.add_argument("--delta", type=float, default=1e-2)
  args = parser.parse_args()
  main(args.trials, args.delta)
