"""Garivier & Kaufmann (2016), Table 1: Track-and-Stop C and D, KL-LUCB, KL-Racing and
Chernoff-Racing in the paper's own setting, beside TCB and ITCB.

Two Bernoulli instances, delta = 0.1 and 0.01, 3,000 trials per rule, threshold
log((log t + 1) / delta). Writes gk16.csv, gk16.md (mean tau and error rate with
95% intervals) and the claims table.

  python experiments/gk16.py [--out results]
"""

from jbai.reproduce.specs import GK16_INSTANCES, GK16_RULES

CONFIG = {
    "instances": GK16_INSTANCES,   # [0.5, 0.45, 0.43, 0.4] and [0.3, 0.21, 0.2, 0.19, 0.18]
    "rules": GK16_RULES,           # settings of each: jbai.reproduce.gk16.RULES
    "deltas": [0.1, 0.01],
    "trials": 3000,
    "max_steps": 1_000_000,
    "seed": 0,
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("gk16", CONFIG, __doc__)
