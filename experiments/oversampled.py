"""The ablation always-top: Gamma_t(T_t/t) drifts away from Gamma(nu).

The paper's "Sampling over-sampled arms": forced exploration as in TCB, else
always the empirical top arm, so the best arm is over-sampled. Plots the relative
deviation (Gamma_t(T_t/t) - Gamma(nu)) / Gamma(nu) next to TCB's. Writes
oversampled.csv and oversampled.png.

  python experiments/oversampled.py [--out results]
"""

INSTANCES = [
    {"name": "nu1", "family": "gaussian", "means": [100.0, 2.0, 1.0]},
    {"name": "nu2", "family": "gaussian", "means": [1.2, 1.0, 1.0, 1.0, 1.0]},
    {"name": "nu3", "family": "bernoulli", "means": [0.8, 0.45, 0.45, 0.45]},
    {"name": "nu4", "family": "bernoulli", "means": [0.79, 0.29, 0.289]},
]

CONFIG = {
    "instances": INSTANCES,
    "rules": ["always-top", "tcb"],
    "trials": 10000,    # as the paper
    "horizon": 10000,   # last recorded time
    "points": 40,       # log-spaced recording times
    "seed": 0,
}

if __name__ == "__main__":
  import argparse

  from jbai.reproduce import run_experiment

  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default="results")
  run_experiment("oversampled", CONFIG, parser.parse_args().out)
