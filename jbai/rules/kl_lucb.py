"""KL-LUCB (Kaufmann & Kalyanakrishnan 2013, Algorithm 1 with m = 1, eq. (2)).

The KL index U = max{q : T_t(i) kl(mean_i, q) <= beta}, L = min{...} on the
family's divergence (bisection; closed form for Gaussian rewards), and
beta(t, delta) = log(k1 K t^alpha / delta) with alpha = 1.1, k1 = 405.5 (their
Theorem 3 and experiments). Garivier & Kaufmann 2016, Table 1, ran KL-LUCB with
the heuristic rate log((log t + 1) / delta): `kl_lucb(rate="gk16")`.
Sampling: `jbai.rules.lucb`; own stop: `jbai.stops.confidence` with the same bounds.
"""

from jbai.rules.base import Rule
from jbai.rules.lucb import lucb_rule


def kl_lucb(rate: str = "kl-lucb") -> Rule:
  """KL-LUCB (Kaufmann & Kalyanakrishnan 2013): LUCB with KL confidence bounds; stop: confidence.

  Args:
    rate: exploration rate (`jbai.stops.bounds.RATES`): "kl-lucb", or "gk16".

  Returns:
    The rule; its sampling depends on delta (one level per run).
  """
  return lucb_rule("kl-lucb", "kl", rate)
