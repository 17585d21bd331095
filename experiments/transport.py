"""Gamma_t(T_t/t) over time for TCB and ITCB on the four instances of Table 1.

The paper's figure "Variations of the estimates of the transportation cost":
trajectories without stopping, recorded at log-spaced times, with Gamma(nu) as
the reference line. Writes transport.csv and transport.png.

  python experiments/transport.py [--out results]
"""

from jbai.reproduce.specs import INSTANCES, PAPER_TRACES

CONFIG = {
    "instances": INSTANCES,   # nu1 .. nu4 of Table 1
    "rules": ["tcb", "itcb"],
    **PAPER_TRACES,           # 10^4 trials, 40 log-spaced times up to t = 10^4, seed 0
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("transport", CONFIG, __doc__)
