"""A study's jobs, planned from its resolved spec.

One job (`jbai.studies.jobs.simulate_job`) per (instance group, rule setting,
threshold, delta group): a drawn block of instances runs as one batch ([I, K]
means, one compiled program), a listed instance alone, so that its trials are
those of `jbai run` with the same seed. Every job of a study has the study's
seed: the rules see common random numbers on each instance. A rule whose sampling
depends on delta (`jbai.stops.takes_delta`) has one job per level; the others one
trajectory per trial for every level.
"""

from jbai.core.inputs import default_max_steps
from jbai.studies.jobs import simulate_job
from jbai.studies.spec import eps_params


def groups(instances: list) -> list:
  """[[instance index, ...]] of the instances that run as one batch, in order."""
  out = {}
  for i, inst in enumerate(instances):
    out.setdefault(inst["group"], []).append(i)
  return list(out.values())


def plan(resolved: dict) -> list:
  """[(instance indices, setting, deltas, job)] of a resolved study, in run order."""
  from jbai import stops
  from jbai.rules import get
  study, instances = resolved["study"], resolved["instances"]
  out = []
  for members in groups(instances):
    first = instances[members[0]]
    means = [instances[i]["means"] for i in members]
    for setting in resolved["settings"]:
      rule = get(setting["rule"], **{**eps_params(study), **setting["params"]})
      own = setting["threshold"] == "own"
      levels = study["delta"]
      split = stops.takes_delta(rule.init(len(first["means"])))
      for deltas in ([[d] for d in levels] if split else [levels]):
        cap = first.get("max_steps", study["max_steps"]) or default_max_steps(rule)
        job = simulate_job(first["family"], means, setting["rule"], setting["params"],
                           deltas, first.get("trials", study["trials"]),
                           None if own else setting["threshold"], cap,
                           study["seed"], study["dtype"],
                           first["family_params"], study.get("eps_good"))
        out.append((members, setting, deltas, job))
  return out
