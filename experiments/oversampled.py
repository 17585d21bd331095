"""The ablation always-top: Gamma_t(T_t/t) drifts away from Gamma(nu).

The paper's "Sampling over-sampled arms": forced exploration as in TCB, else
always the empirical top arm, so the best arm is over-sampled. Plots the relative
deviation (Gamma_t(T_t/t) - Gamma(nu)) / Gamma(nu) next to TCB's. Writes
oversampled.csv and oversampled.png.

  python experiments/oversampled.py [--out results]
"""

from jbai.reproduce.specs import INSTANCES, PAPER_TRACES

CONFIG = {
    "instances": INSTANCES,   # nu1 .. nu4 of Table 1
    "rules": ["always-top", "tcb"],
    **PAPER_TRACES,           # 10^4 trials, 40 log-spaced times up to t = 10^4, seed 0
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("oversampled", CONFIG, __doc__)
