"""Beyond the paper: the instances where a rule is least efficient.

Maximises R(nu) = E[tau] / (T*(nu) log(1/delta)) over Gaussian instances with
K = 5 arms and T*(nu) = 100 (gaps s exp(u), u in [-1.5, 1.5]^4, s fixed by T*),
delta = 1e-4, by optax Adam on the likelihood-ratio gradient through the simulator
(`jax.grad` of `jbai.estimate`), for TCB, ITCB and T3C (beta = 0.5); against
random search in the same box given the same number of simulated steps. The best
instance of each method is evaluated again with a fresh key and 4,000 trials.
Writes hardest.csv, hardest_trace.csv and hardest.png.

  python experiments/hardest.py [--out results]
"""

CONFIG = {
    "rules": [["tcb", {}], ["itcb", {}], ["t3c", {"beta": 0.5}]],
    "arms": 5,
    "t_star": 100.0,
    "box": 1.5,
    "delta": 1e-4,
    "threshold": "gk16",
    "max_steps": 1_000_000,
    "trials": 600,
    "steps": 20,
    "learning_rate": 0.3,
    "final_trials": 4000,
    "seed": 0,
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("hardest", CONFIG, __doc__)
