"""Table 1 of the paper: the optimal allocation w(nu) of its four instances.

Computes w(nu) with jbai's exact oracle and writes table1.csv (printed and
computed weights) and the claims table.

  python experiments/table1.py [--out results]
"""

CONFIG = {
    "instances": [
        {"name": "nu1", "family": "gaussian", "means": [100.0, 2.0, 1.0],
         "paper_w": ["0.4143", "0.2979", "0.2878"]},
        {"name": "nu2", "family": "gaussian", "means": [1.2, 1.0, 1.0, 1.0, 1.0],
         "paper_w": ["1/3", "1/6", "1/6", "1/6", "1/6"]},
        {"name": "nu3", "family": "bernoulli", "means": [0.8, 0.45, 0.45, 0.45],
         "paper_w": ["0.3854", "0.2049", "0.2049", "0.2049"]},
        {"name": "nu4", "family": "bernoulli", "means": [0.79, 0.29, 0.289],
         "paper_w": ["0.426", "0.2880", "0.2860"]},
    ],
}

if __name__ == "__main__":
  import argparse

  from jbai.reproduce import run_experiment

  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default="results")
  run_experiment("table1", CONFIG, parser.parse_args().out)
