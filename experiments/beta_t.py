"""The best arm's share T_t(a*)/t over time for TCB and ITCB (the estimates beta_t).

The paper's figure "Variations of the estimates beta_t over time", with
w_a*(nu) as the reference line. The trajectories are those of transport.py (one
trace records both; a run of either reuses the other's). Writes beta_t.csv and
beta_t.png.

  python experiments/beta_t.py [--out results]
"""

from jbai.reproduce.specs import INSTANCES, PAPER_TRACES

CONFIG = {
    "instances": INSTANCES,   # nu1 .. nu4 of Table 1
    "rules": ["tcb", "itcb"],
    **PAPER_TRACES,           # 10^4 trials, 40 log-spaced times up to t = 10^4, seed 0
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("beta_t", CONFIG, __doc__)
