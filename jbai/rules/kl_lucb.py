"""KL-LUCB (Kaufmann & Kalyanakrishnan 2013, Algorithm 1 with m = 1, eq. (2)).

The KL index U = max{q : T_t(i) kl(mean_i, q) <= beta}, L = min{...} on the
family's divergence (bisection; closed form for Gaussian rewards), and
beta(t, delta) = log(k1 K t^alpha / delta) with alpha = 1.1, k1 = 405.5 (their
Theorem 3 and experiments). Garivier & Kaufmann 2016, Table 1, ran KL-LUCB with
the heuristic rate log((log t + 1) / delta): `kl_lucb(rate="gk16")`.
Sampling: `jbai.rules.lucb`; own stop: `jbai.stops.confidence` with the same bounds.

Sources checked: the KL bounds, the stop L_{h_t} > U_{l_t} and the "gk16" rate
at t = the number of rewards so far agree with `KLLUCB` in the authors' Julia
code (jsfunc/best-arm-identification BAIalgos.jl; the experiments' rate
explo(t, n, delta) = log((log(t) + 1) / delta) in mainBAI.jl); the differences
in ties and in when the stop is checked are listed in `jbai.rules.lucb`.
Algorithm 1, eq. (2), Theorem 3 and k1 = 405.5, alpha = 1.1 were not checked
against the paper's text (the stored copies here give only its first page, e.g.
https://vdocuments.net/information-compexity-in-bandit-subset-selection-emilie-.html).
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
