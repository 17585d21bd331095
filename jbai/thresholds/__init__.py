"""Stopping thresholds beta_t(delta) for the GLLR stopping rule (paper eq. stop), by name.

Three thresholds for every family are registered in `THRESHOLDS`, one per file, and
four of one model in `MODEL_THRESHOLDS`; `get` names all seven:

  * `gk16`: log((1 + log t) / delta), the heuristic of Garivier & Kaufmann (2016).
  * `kk`: the delta-correct threshold of Kaufmann & Koolen (2021) for
    one-parameter exponential families, with the sharper Gaussian calibration of
    Jourdan et al. (2022) when the family is Gaussian.
  * `linear-sn`: the self-normalised bound of Abbasi-Yadkori et al. (2011) on the
    linear model's GLLR (`jbai.linear.linear_family` only), proven; on that model
    `gk16` is the linear literature's heuristic.
  * `paper`: Theorem 1 (delta-PAC) of the paper, for general families that meet
    its Assumption 7, in a computable conservative form.
  * `ev`, `uv`: for Gaussian arms whose variances are unknown (issue 76), the
    EV-GLR's and the unknown-variance GLR's, derived in `jbai.thresholds.variance`
    in the shape of Jourdan, Degenne & Kaufmann (ALT 2023).
  * `bounded`: for arms of any law in [0, 1] (issue 76), the non-parametric GLR's
    (`jbai.thresholds.bounded`, from `jbai.bounded.glr`).

The interface (`Threshold`) and the rules of which applies to which family
(`refusal`, `check`, `PREFERRED`) are in `jbai.thresholds.base`.

Example:
  >>> from jbai import thresholds
  >>> thresholds.get("paper") == thresholds.paper()
  True
"""

from jbai.thresholds.base import (PREFERRED, LogDelta, Threshold, check, float_delta,
                                  log_inv_delta, log_ratio, refusal)
from jbai.thresholds.bounded import bounded_threshold
from jbai.thresholds.gk16 import gk16
from jbai.thresholds.kk import c_gaussian, h_inverse, kk, t_kk
from jbai.thresholds.linear import linear_sn
from jbai.thresholds.paper import paper
from jbai.thresholds.variance import ev_threshold, uv_threshold

THRESHOLDS = {"gk16": gk16, "kk": kk, "paper": paper}
# Of one model: Gaussian arms with unknown variances; the linear model; laws in [0, 1].
MODEL_THRESHOLDS = {"ev": ev_threshold, "uv": uv_threshold, "linear-sn": linear_sn,
                    "bounded": bounded_threshold}


def get(name: str, **params) -> Threshold:
  """Builds a threshold by name; raises ValueError naming an unknown one."""
  named = {**THRESHOLDS, **MODEL_THRESHOLDS}
  if name not in named:
    raise ValueError(f"unknown threshold {name!r}; choose from {sorted(named)}")
  return named[name](**params)


check_family = check

__all__ = ["MODEL_THRESHOLDS", "PREFERRED", "THRESHOLDS", "LogDelta", "Threshold", "c_gaussian", "check", "check_family",
           "bounded_threshold", "ev_threshold", "uv_threshold", "linear_sn",
           "float_delta", "get", "gk16", "h_inverse", "kk", "log_inv_delta", "log_ratio",
           "paper", "refusal", "t_kk"]
