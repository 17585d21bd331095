"""Figure 1: sample complexity of beta-optimal rules against beta.

The paper does not name the instance of its Figure 1 (optimal beta ~ 0.27).
Gaussian slippage instances have w_a*(nu) = 1 / (1 + sqrt(K - 1)), 0.2743 for
K = 8, so this uses [1.5, 1 x 7] (unit variance). T3C, EB-TC and EB-TCI at each
beta, with T*_beta(nu) log(1/delta) as the reference curve and the optimal beta
marked. Writes figure1.csv, figure1_curve.csv and figure1.png.

  python experiments/figure1.py [--out results]
"""

CONFIG = {
    "instance": {"name": "gaussian-slippage-8", "family": "gaussian",
                 "means": [1.5] + [1.0] * 7},
    "betas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
    "rules": ["t3c", "ebtc", "ebtci"],
    "trials": 200,
    "delta": 1e-8,
    "threshold": "gk16",
    "max_steps": 1_000_000,
    "curve_points": 193,   # beta grid of the reference curve, in [0.02, 0.98]
    "seed": 0,
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("figure1", CONFIG, __doc__)
