"""Stopping thresholds beta(t, delta) for the linear GLLR, and which are proven.

The formulas and the registered threshold `linear-sn` live in
`jbai.thresholds.linear` (below the engine's registry; its docstring gives the
sources and the proofs); this module re-exports them beside the linear model:

  * `self_normalized`: Abbasi-Yadkori, Pal & Szepesvari (2011), proven for the
    linear model with a ridge lambda > 0 and a bound S on ||theta||_2;
  * `heuristic`: log((1 + log t) / delta), the linear papers' experimental
    threshold (gk16's formula), not proven;
  * `linear_sn(theta_bound)`: the first as a `jbai.thresholds.Threshold`.
"""

from jbai.thresholds.linear import heuristic, linear_sn, self_normalized

__all__ = ["heuristic", "linear_sn", "self_normalized"]
