"""Beyond the paper: grad_mu E[tau] / log(1/delta) against grad_mu T*(nu).

ITCB on Gaussian [1.2, 1, 1, 1, 1], delta from 1e-2 to 1e-30; one trajectory per
trial records every delta's stopping time and likelihood-ratio score (jbai.simulate
with scores=True), and grad_mu T*(nu) comes from the oracle's implicit derivatives.
Writes gradient.csv and gradient.png.

  python experiments/gradient.py [--out results]
"""

CONFIG = {
    "family": "gaussian",
    "means": [1.2, 1.0, 1.0, 1.0, 1.0],
    "rule": "itcb",
    "deltas": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10, 1e-12, 1e-15, 1e-20, 1e-25,
               1e-30],
    "trials": 4000,
    "threshold": "gk16",
    "max_steps": 2_000_000,
    "seed": 0,
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("gradient", CONFIG, __doc__)
