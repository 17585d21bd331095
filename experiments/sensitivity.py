"""Sensitivity to beta: mean stopping time against beta (paper Figures 3 and 4).

T3C, EB-TC, TS-TCI and EB-TCI at each beta; TCB, ITCB, FWS and T3C with beta
tuned online as horizontal bands (mean and 95% CI); delta = 1e-8, threshold
gk16 (the one the literature's experiments use). Writes sensitivity.csv and
sensitivity.png.

  python experiments/sensitivity.py [--out results]

The config is the study shipped as jbai/studies/shipped/sensitivity.toml (`jbai study
sensitivity --out DIR` runs it as a study: cells.csv, trials.csv, figures).
"""

from jbai.studies.spec import shipped_spec

CONFIG = shipped_spec("sensitivity")

if __name__ == "__main__":
  from jbai.reproduce import script
  script("sensitivity", CONFIG, __doc__)
