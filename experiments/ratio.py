"""Beyond the paper: E[tau] / (T*(nu) log(1/delta)) against log(1/delta).

delta from 1e-2 to 1e-30; one trajectory per trial records the first crossing of
every level at once. TCB, ITCB, Track-and-Stop (D-tracking) and T3C with beta =
0.5, with the level T*_0.5(nu) / T*(nu) that T3C tends to. Writes ratio.csv and
ratio.png. A rule with 0 trials on an instance is left out there.

  python experiments/ratio.py [--out results]
"""

CONFIG = {
    "instances": [
        {"name": "gaussian", "family": "gaussian", "means": [1.2, 1.0, 1.0, 1.0, 1.0],
         "trials": {"default": 300}, "max_steps": 2_000_000},
        {"name": "gaussian-slippage-51", "family": "gaussian",
         "means": [1.2] + [1.0] * 50,
         "trials": {"default": 10}, "max_steps": 4_000_000},
    ],
    "rules": [["tcb", {}], ["itcb", {}], ["tas-d", {}], ["t3c", {"beta": 0.5}]],
    "deltas": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10, 1e-12, 1e-15, 1e-20, 1e-25,
               1e-30],
    "beta_level": 0.5,
    "threshold": "gk16",
    "seed": 0,
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("ratio", CONFIG, __doc__)
