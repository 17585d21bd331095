"""Beyond the paper: E[tau] / (T*(nu) log(1/delta)) against log(1/delta).

delta from 1e-2 to 1e-30; one trajectory per trial records the first crossing of
every level at once. TCB, ITCB, Track-and-Stop (D-tracking) and T3C with beta =
0.5, with the level T*_0.5(nu) / T*(nu) that T3C tends to. Writes ratio.csv and
ratio.png.

  python experiments/ratio.py [--out results]

The config is the study shipped as jbai/studies/shipped/ratio.toml (`jbai study ratio
--out DIR` runs it as a study: cells.csv, trials.csv, figures).
"""

from jbai.studies.spec import shipped_spec

CONFIG = shipped_spec("ratio")

if __name__ == "__main__":
  from jbai.reproduce import script
  script("ratio", CONFIG, __doc__)
