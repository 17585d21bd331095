"""TCB, ITCB and EB-TCI written as a plain per-trial Python/NumPy loop: what a user
would write without jbai. The throughput benchmark's baseline (Gaussian and
Bernoulli families, GLLR stopping with the gk16 threshold)."""

import math

import numpy as np


def kl_gaussian(m, m2):
  return (m - m2) ** 2 / 2


def kl_bernoulli(p, q):
  p = np.clip(p, 1e-12, 1 - 1e-12)
  q = np.clip(q, 1e-12, 1 - 1e-12)
  return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


FAMILIES = {
    "gaussian": (kl_gaussian, lambda rng, m: rng.normal(m, 1.0)),
    "bernoulli": (kl_bernoulli, lambda rng, m: float(rng.random() < m)),
}


def costs(kl, w, mu, top):
  """Transport costs from the leader to every arm (inf at the leader)."""
  x = (w[top] * mu[top] + w * mu) / np.maximum(w[top] + w, 1e-300)
  c = w[top] * kl(mu[top], x) + w * kl(mu, x)
  c = np.where(mu < mu[top], c, 0.0)
  c[top] = np.inf
  return c


def select(rule, kl, rng, n, mu, t, beta=0.5):
  k = len(n)
  if rule == "ebtci":
    if n.min() == 0:
      return int(np.argmin(n))
    top = int(np.argmax(mu))
    if rng.random() < beta:
      return top
    return int(np.argmin(costs(kl, n, mu, top) + np.log(n)))
  if n.min() <= math.ceil(math.sqrt(t / k)):
    return int(np.argmin(n))
  top = int(np.argmax(mu))
  w = n / t
  r = min(1.0 / t, (k - 1) * np.min(np.delete(w, top)))
  ahead = w - r / (k - 1)
  ahead[top] = w[top] + r
  now = costs(kl, w, mu, top)
  later = costs(kl, ahead, mu, top)
  if rule == "itcb":
    now = now + np.log(np.maximum(t * w, 1e-300)) / t
    later = later + np.log(np.maximum(t * ahead, 1e-300)) / t
  return top if later.min() >= now.min() else int(np.argmin(now))


def run_trial(rule, family, means, delta, seed, max_steps=10**7):
  """One trial; returns (tau, answer)."""
  kl, sample = FAMILIES[family]
  rng = np.random.default_rng(seed)
  means = np.asarray(means, float)
  k = len(means)
  n = np.zeros(k)
  s = np.zeros(k)
  t = 0
  while t < max_steps:
    mu = np.where(n > 0, s / np.maximum(n, 1), 0.0)
    if n.min() > 0:
      top = int(np.argmax(mu))
      glr = costs(kl, n, mu, top).min()
      if glr > math.log((1 + math.log(t)) / delta):
        return t, top
    arm = select(rule, kl, rng, n, mu, t)
    n[arm] += 1
    s[arm] += sample(rng, means[arm])
    t += 1
  return t, -1
