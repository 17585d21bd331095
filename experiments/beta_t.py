"""The best arm's share T_t(a*)/t over time for TCB and ITCB (the estimates beta_t).

The paper's figure "Variations of the estimates beta_t over time", with
w_a*(nu) as the reference line. The trajectories are those of transport.py (one
trace records both; a run of either reuses the other's). Writes beta_t.csv and
beta_t.png.

  python experiments/beta_t.py [--out results]
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
  run_experiment("beta_t", CONFIG, parser.parse_args().out)
