"""Independent numpy / SciPy references for jbai.linear's tests and benchmark."""

import numpy as np
from scipy import optimize


def costs(features, theta, sigma, w):
  """f_x(w) = Delta_x^2 / (2 ||x* - x||^2_{A(w)^-1}) for x != x*, by numpy solves."""
  x = np.asarray(features, float)
  s2 = np.broadcast_to(np.asarray(sigma, float) ** 2, (x.shape[0],))
  a = (x * (np.asarray(w) / s2)[:, None]).T @ x
  mu = x @ theta
  b = int(np.argmax(mu))
  out = []
  for i in range(x.shape[0]):
    if i != b:
      y = x[b] - x[i]
      out.append((mu[b] - mu[i]) ** 2 / (2 * y @ np.linalg.solve(a, y)))
  return np.array(out)


def scipy_oracle(features, theta, sigma=1.0, w0=None, restarts=20):
  """(Gamma*, w*) by SLSQP on the epigraph form max_{w, s} s, s <= f_x(w), with
  the analytic gradient d f_x / d w_a = f_x (x_a^T A^-1 y)^2 / (sigma_a^2 y^T A^-1 y),
  restarted from its own solution until Gamma(w) stops improving; weights are kept
  above 1e-13 (A(w) invertible), which moves Gamma by far less than 1e-6."""
  x = np.asarray(features, float)
  k, d = x.shape
  s2 = np.broadcast_to(np.asarray(sigma, float) ** 2, (k,))
  mu = x @ theta
  b = int(np.argmax(mu))
  ys = np.stack([x[b] - x[i] for i in range(k) if i != b])
  deltas = ys @ theta
  floor = 1e-13

  def parts(w):
    a = (x * (np.maximum(w, floor) / s2)[:, None]).T @ x
    z = np.linalg.solve(a, ys.T)          # [d, K-1]
    n = np.sum(ys.T * z, axis=0)
    f = deltas ** 2 / (2 * n)
    u = x @ z                              # [K, K-1]: x_a^T A^-1 y
    jac = (f / n)[:, None] * (u.T ** 2) / s2[None, :]
    return f, jac

  cons = [{"type": "ineq", "fun": lambda z: parts(z[:k])[0] - z[k],
           "jac": lambda z: np.hstack([parts(z[:k])[1], -np.ones((k - 1, 1))])},
          {"type": "eq", "fun": lambda z: np.sum(z[:k]) - 1,
           "jac": lambda z: np.append(np.ones(k), 0.0)[None]}]
  w = np.full(k, 1 / k) if w0 is None else np.asarray(w0, float)
  best = (costs(x, theta, sigma, w).min(), w)
  for _ in range(restarts):  # SLSQP stops early on these problems; a restart goes on
    z0 = np.append(best[1], best[0])
    res = optimize.minimize(lambda z: -z[k], z0, jac=lambda z: np.append(np.zeros(k), -1.0),
                            method="SLSQP", constraints=cons,
                            bounds=[(floor, 1)] * k + [(0, None)],
                            options={"ftol": 1e-15, "maxiter": 2000})
    w = np.maximum(res.x[:k], 0)
    w /= w.sum()
    gamma = costs(x, theta, sigma, w).min()
    if gamma <= best[0] * (1 + 1e-13):
      break
    best = (gamma, w)
  return best
