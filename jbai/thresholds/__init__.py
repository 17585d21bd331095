"""Stopping thresholds beta_t(delta) for the GLLR stopping rule (paper eq. stop), by name.

Four thresholds are registered in `THRESHOLDS`, one per file:

  * `gk16`: log((1 + log t) / delta), the heuristic of Garivier & Kaufmann (2016).
  * `kk`: the delta-correct threshold of Kaufmann & Koolen (2021) for
    one-parameter exponential families, with the sharper Gaussian calibration of
    Jourdan et al. (2022) when the family is Gaussian.
  * `linear-sn`: the self-normalised bound of Abbasi-Yadkori et al. (2011) on the
    linear model's GLLR (`jbai.linear.linear_family` only), proven; on that model
    `gk16` is the linear literature's heuristic.
  * `paper`: Theorem 1 (delta-PAC) of the paper, for general families that meet
    its Assumption 7, in a computable conservative form.

The interface (`Threshold`) and the rules of which applies to which family
(`refusal`, `check`, `PREFERRED`) are in `jbai.thresholds.base`.

Example:
  >>> from jbai import thresholds
  >>> thresholds.get("paper") == thresholds.paper()
  True
"""

from jbai.thresholds.base import (PREFERRED, LogDelta, Threshold, check, float_delta,
                                  log_inv_delta, log_ratio, refusal)
from jbai.thresholds.gk16 import gk16
from jbai.thresholds.kk import c_gaussian, h_inverse, kk, t_kk
from jbai.thresholds.linear import linear_sn
from jbai.thresholds.paper import paper

THRESHOLDS = {"gk16": gk16, "kk": kk, "paper": paper, "linear-sn": linear_sn}


def get(name: str, **params) -> Threshold:
  """Builds a threshold by name; raises ValueError naming an unknown one."""
  if name not in THRESHOLDS:
    raise ValueError(f"unknown threshold {name!r}; choose from {sorted(THRESHOLDS)}")
  return THRESHOLDS[name](**params)


check_family = check

__all__ = ["PREFERRED", "THRESHOLDS", "LogDelta", "Threshold", "c_gaussian", "check", "check_family",
           "float_delta", "get", "gk16", "h_inverse", "kk", "linear_sn", "log_inv_delta", "log_ratio",
           "paper", "refusal", "t_kk"]
