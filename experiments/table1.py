"""Table 1 of the paper: the optimal allocation w(nu) of its four instances.

Computes w(nu) with jbai's exact oracle and writes table1.csv (printed and
computed weights) and the claims table.

  python experiments/table1.py [--out results]
"""

from jbai.reproduce.specs import TABLE1

CONFIG = {
    "instances": TABLE1,   # the four instances, with w(nu) as printed in the paper
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("table1", CONFIG, __doc__)
