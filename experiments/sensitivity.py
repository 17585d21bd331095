"""Sensitivity to beta: mean stopping time against beta (paper Figures 3 and 4).

T3C, EB-TC, TS-TCI and EB-TCI at each beta; TCB, ITCB, FWS and T3C with beta
tuned online as horizontal bands (mean and 95% CI); delta = 1e-8, threshold
gk16 (the one the literature's experiments use). Writes sensitivity.csv and
sensitivity.png.

  python experiments/sensitivity.py [--out results]
"""

CONFIG = {
    "instances": [
        {"name": "bernoulli", "family": "bernoulli", "means": [0.8, 0.5, 0.3, 0.29, 0.06],
         "trials": {"default": 2000}},
        {"name": "gaussian", "family": "gaussian", "means": [1.2, 1.0, 1.0, 1.0, 1.0],
         "trials": {"default": 2000}},
    ],
    "betas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
    "beta_rules": ["t3c", "ebtc", "tstci", "ebtci"],
    "band_rules": ["tcb", "itcb", "fws", "t3c-tuned"],
    "delta": 1e-8,
    "threshold": "gk16",
    "max_steps": 1_000_000,
    "seed": 0,
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("sensitivity", CONFIG, __doc__)
