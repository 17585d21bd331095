"""Garivier & Kaufmann (2016), Table 1: Track-and-Stop C and D, KL-LUCB, KL-Racing and
Chernoff-Racing in the paper's own setting, beside TCB and ITCB.

Two Bernoulli instances, delta = 0.1 and 0.01, 3,000 trials per rule, threshold
log((log t + 1) / delta). Writes gk16.csv, gk16.md (mean tau and error rate with
95% intervals) and the claims table.

  python experiments/gk16.py [--out results]

The config is the study shipped as jbai/studies/shipped/gk16.toml (`jbai study gk16
--out DIR` runs it as a study: cells.csv, trials.csv, figures).
"""

from jbai.studies.spec import shipped_spec

CONFIG = shipped_spec("gk16")

if __name__ == "__main__":
  from jbai.reproduce import script
  script("gk16", CONFIG, __doc__)
