"""Beyond the paper: the instances where a rule is least efficient.

Maximises R(nu) = E[tau] / (T*(nu) log(1/delta)) over Gaussian instances with
K = 20 arms and T*(nu) = 50 (19 free gaps s exp(u), u in [-1.5, 1.5]^19, s fixed
by T*), delta = 1e-3, by optax Adam on the likelihood-ratio gradient through the
simulator (`jax.grad` of `jbai.estimate`, its causal estimator), for TCB, ITCB and
T3C (beta = 0.5); against random search in the same box and SPSA (the same Adam
on simultaneous-perturbation differences with common random numbers), each given
the same number of simulated steps. Each method's instance is evaluated again
with a fresh key and 2,000 trials. Writes hardest.csv, hardest_trace.csv and
hardest.png.

  python experiments/hardest.py [--out results]
"""

CONFIG = {
    "rules": [["tcb", {}], ["itcb", {}], ["t3c", {"beta": 0.5}]],
    "arms": 20,
    "t_star": 50.0,
    "box": 1.5,
    "delta": 1e-3,
    "threshold": "gk16",
    "max_steps": 1_000_000,
    "trials": 300,
    "steps": 12,
    "learning_rate": 0.3,
    "spsa_c": 0.3,
    "final_trials": 2000,
    "seed": 0,
}

if __name__ == "__main__":
  from jbai.reproduce import script
  script("hardest", CONFIG, __doc__)
