"""Gamma_t(T_t/t) over time for TCB and ITCB on the four instances of Table 1.

The paper's figure "Variations of the estimates of the transportation cost":
trajectories without stopping, recorded at log-spaced times, with Gamma(nu) as
the reference line. Writes transport.csv and transport.png.

  python experiments/transport.py [--out results]
"""

INSTANCES = [
    {"name": "nu1", "family": "gaussian", "means": [100.0, 2.0, 1.0]},
    {"name": "nu2", "family": "gaussian", "means": [1.2, 1.0, 1.0, 1.0, 1.0]},
    {"name": "nu3", "family": "bernoulli", "means": [0.8, 0.45, 0.45, 0.45]},
    {"name": "nu4", "family": "bernoulli", "means": [0.79, 0.29, 0.289]},
]

CONFIG = {
    "instances": INSTANCES,
    "rules": ["tcb", "itcb"],
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
  run_experiment("transport", CONFIG, parser.parse_args().out)
