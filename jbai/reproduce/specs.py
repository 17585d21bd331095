"""The settings of every experiment of the paper's numerical section, per scale.

Each experiment is described by one JSON-like dict (numbers, strings, lists,
dicts), so that a script in experiments/ can carry the same dict at its top and a
test can check that the two agree; those of sensitivity, ratio and gk16 are study
specs, the shipped studies' at the paper scale. `spec(name, scale)` returns a fresh copy.

Two scales:
  * "paper": the paper's settings where they fit a 2-core CPU in about half an
    hour, reduced (and said so in `NOTES`) where they do not;
  * "smoke": every experiment on a small grid with a few trials, in about two
    minutes, to check that the pipeline runs end to end.
"""

import copy

from jbai.studies.spec import shipped_spec

PAPER_DELTA = 1e-8
BETAS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]

# Table 1 of the paper: the four instances and w(nu) as printed (strings, so that
# the number of printed digits is known).
TABLE1 = [
    {"name": "nu1", "family": "gaussian", "means": [100.0, 2.0, 1.0],
     "paper_w": ["0.4143", "0.2979", "0.2878"]},
    {"name": "nu2", "family": "gaussian", "means": [1.2, 1.0, 1.0, 1.0, 1.0],
     "paper_w": ["1/3", "1/6", "1/6", "1/6", "1/6"]},
    {"name": "nu3", "family": "bernoulli", "means": [0.8, 0.45, 0.45, 0.45],
     "paper_w": ["0.3854", "0.2049", "0.2049", "0.2049"]},
    {"name": "nu4", "family": "bernoulli", "means": [0.79, 0.29, 0.289],
     "paper_w": ["0.426", "0.2880", "0.2860"]},
]

INSTANCES = [{k: v for k, v in row.items() if k != "paper_w"} for row in TABLE1]

# Sensitivity to beta (Figures 3 and 4): the study shipped as
# jbai/studies/shipped/sensitivity.toml.
SENSITIVITY = shipped_spec("sensitivity")

# Figure 1: the paper does not name its instance. For Gaussian arms the optimal
# allocation satisfies w_a*^2 = sum_{i != a*} w_i^2, so a slippage instance with
# K - 1 equal sub-optimal arms has w_a* = 1 / (1 + sqrt(K - 1)): 0.2743 for K = 8,
# the paper's "beta ~ 0.27", whatever the gap. The gap 0.5 keeps the runs short
# (T*(nu) = 106; the profile T*_beta / T* does not depend on the gap).
FIGURE1_INSTANCE = {"name": "gaussian-slippage-8", "family": "gaussian",
                    "means": [1.5] + [1.0] * 7}


def _deltas(exponents):
  return [float(f"1e-{k}") for k in exponents]


# The ratio to the lower bound as delta -> 0: the study shipped as
# jbai/studies/shipped/ratio.toml.
RATIO = shipped_spec("ratio")
RATIO_DELTAS = RATIO["study"]["delta"]

# The traces of transport, beta_t and oversampled (one trace serves all three):
# 10^4 trials as the paper, recorded at 40 log-spaced times up to t = 10^4.
PAPER_TRACES = {"trials": 10000, "horizon": 10000, "points": 40, "seed": 0}

# Garivier & Kaufmann (2016), Table 1 (their Section 6): two Bernoulli instances,
# delta = 0.1 and 0.01, N = 3000, the rules of `jbai.reproduce.gk16`: the study
# shipped as jbai/studies/shipped/gk16.toml, a study spec (`jbai.studies.spec`).
GK16 = shipped_spec("gk16")

PAPER = {
    "table1": {"instances": TABLE1},
    "transport": {"instances": INSTANCES, "rules": ["tcb", "itcb"], **PAPER_TRACES},
    "beta_t": {"instances": INSTANCES, "rules": ["tcb", "itcb"], **PAPER_TRACES},
    "oversampled": {"instances": INSTANCES, "rules": ["always-top", "tcb"], **PAPER_TRACES},
    "sensitivity": SENSITIVITY,
    "figure1": {"instance": FIGURE1_INSTANCE, "betas": BETAS,
                "rules": ["t3c", "ebtc", "ebtci"], "trials": 200,
                "delta": PAPER_DELTA, "threshold": "gk16", "max_steps": 1_000_000,
                "curve_points": 193, "seed": 0},
    "ratio": RATIO,
    "gradient": {"family": "gaussian", "means": [1.2, 1.0, 1.0, 1.0, 1.0], "rule": "itcb",
                 "deltas": RATIO_DELTAS, "trials": 4000, "threshold": "gk16",
                 "max_steps": 2_000_000, "seed": 0},
    "hardest": {"rules": [["tcb", {}], ["itcb", {}], ["t3c", {"beta": 0.5}]], "arms": 20,
                "t_star": 50.0, "box": 1.5, "delta": 1e-3, "threshold": "gk16",
                "max_steps": 1_000_000, "trials": 300, "steps": 12, "learning_rate": 0.3,
                "spsa_c": 0.3, "final_trials": 2000, "seed": 0},
    "gk16": GK16,
}

# The smoke scale shares compiled programs between experiments (same family, K,
# rule and pool size): figure1's jobs are sensitivity's jobs, run once.
SMOKE_GAUSSIAN = {"name": "gaussian", "family": "gaussian",
                  "means": [1.6, 1.0, 1.0, 1.0, 1.0]}
SMOKE_TRACES = {"trials": 20, "horizon": 400, "points": 8, "seed": 0}

SMOKE = {
    "table1": {"instances": TABLE1},
    "transport": {"instances": [INSTANCES[1]], "rules": ["tcb", "itcb"], **SMOKE_TRACES},
    "beta_t": {"instances": [INSTANCES[1]], "rules": ["tcb", "itcb"], **SMOKE_TRACES},
    "oversampled": {"instances": [INSTANCES[1]], "rules": ["always-top", "tcb"],
                    **SMOKE_TRACES},
    "sensitivity": {"study": dict(SENSITIVITY["study"], trials=20, delta=1e-3,
                                  max_steps=100_000),
                    "instances": [SMOKE_GAUSSIAN],
                    "rules": [{"name": "tcb"}, {"name": "itcb"},
                              {"name": "t3c", "beta": [0.3, 0.7]}]},
    "figure1": {"instance": SMOKE_GAUSSIAN, "betas": [0.3, 0.7], "rules": ["t3c"],
                "trials": 20, "delta": 1e-3, "threshold": "gk16",
                "max_steps": 100_000, "curve_points": 41, "seed": 0},
    "ratio": {"study": dict(RATIO["study"], trials=20, delta=_deltas([2, 4, 6, 8, 10])),
              "instances": [dict(SMOKE_GAUSSIAN, max_steps=100_000)],
              "rules": [{"name": "tcb"}]},
    "gradient": {"family": "gaussian", "means": SMOKE_GAUSSIAN["means"], "rule": "tcb",
                 "deltas": _deltas([2, 4, 8]), "trials": 40, "threshold": "gk16",
                 "max_steps": 100_000, "seed": 0},
    "hardest": {"rules": [["tcb", {}]], "arms": 5, "t_star": 20.0, "box": 1.5,
                "delta": 1e-2, "threshold": "gk16", "max_steps": 100_000, "trials": 20,
                "steps": 2, "learning_rate": 0.3, "final_trials": 40, "seed": 0},
    "gk16": {"study": dict(GK16["study"], trials=8, delta=[0.1], max_steps=100_000),
             "instances": GK16["instances"][:1],
             "rules": [r for r in GK16["rules"] if r["name"] in ("kl-racing", "tcb")]},
}

SCALES = {"paper": PAPER, "smoke": SMOKE}

# What the paper scale changes from the paper's own settings, and why. The
# budget: `jbai reproduce --scale paper` in about 30 minutes on a 2-core CPU.
NOTES = {
    "transport": "10^4 trials per rule and instance (as the paper), horizon 10^4.",
    "beta_t": "The same trajectories as `transport` (one trace records both).",
    "oversampled": "The four instances of Table 1, 10^4 trials, horizon 10^4; TCB's "
                   "traces are those of `transport`.",
    "sensitivity": "2,000 trials per rule and point on both instances (as the paper), "
                   "FWS and beta-tuned T3C included.",
    "figure1": "Instance chosen here (the paper does not name it): Gaussian "
               "[1.5, 1 x 7], whose optimal beta is 1 / (1 + sqrt 7) = 0.2743; "
               "200 trials per point.",
    "ratio": "Beyond the paper. Gaussian [1.2, 1, 1, 1, 1]: 300 trials per rule; "
             "slippage [1.2, 1 x 50]: 10 trials per rule.",
    "gradient": "Beyond the paper: ITCB on Gaussian [1.2, 1, 1, 1, 1], 4,000 trials, delta "
                "from 1e-2 to 1e-30 (one trajectory per trial for every delta).",
    "hardest": "Beyond the paper: Gaussian K = 20 (19 free gaps) with T*(nu) = 50, delta = "
               "1e-3; 12 Adam steps of 300 trials per rule, random search and SPSA with the "
               "same simulated steps, each method's instance evaluated again with 2,000 "
               "trials.",
    "gk16": "As the paper: both instances, delta = 0.1 and 0.01, 3,000 trials per rule; "
            "the cap of 10^6 steps is never the paper's concern (trials at it are counted "
            "as errors).",
}


def spec(name: str, scale: str) -> dict:
  """A fresh copy of the settings of experiment `name` at `scale`.

  Raises:
    ValueError: for an unknown scale or experiment name.
  """
  if scale not in SCALES:
    raise ValueError(f"unknown scale {scale!r}; choose from {sorted(SCALES)}")
  table = SCALES[scale]
  if name not in table:
    raise ValueError(f"unknown experiment {name!r}; choose from {list(table)}")
  return copy.deepcopy(table[name])
