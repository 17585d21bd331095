"""A study's jobs, planned from its resolved spec.

One job (`jbai.studies.jobs.simulate_job`) per (instance group, rule setting,
threshold, delta group): a drawn block of instances runs as one batch ([I, K]
means, one compiled program), a listed instance alone, so that its trials are
those of `jbai run` with the same seed. Every job of a study has the study's
seed: the rules see common random numbers on each instance. A rule whose sampling
depends on delta (`jbai.stops.takes_delta`) has one job per level; the others one
trajectory per trial for every level.

A budget study ([study] budget) has one job (`jbai.studies.jobs.budget_job`) per
(instance group, rule setting, budget run), as `jbai run --budget` splits its
budgets (`jbai.core.budget.budget_runs`): an anytime rule runs once, to the
largest budget, its recommendation recorded at every budget of the study; a rule
that samples with a fixed budget (`Rule.budget`) runs once per budget.
"""

from jbai.core.inputs import default_max_steps
from jbai.studies.jobs import budget_job, simulate_job
from jbai.studies.spec import question, study_problem


def groups(instances: list) -> list:
  """[[instance index, ...]] of the instances that run as one batch, in order."""
  out = {}
  for i, inst in enumerate(instances):
    out.setdefault(inst["group"], []).append(i)
  return list(out.values())


def group_settings(resolved: dict):
  """(instance indices, first instance, means of each, rule setting) of a resolved
  study, in run order: each instance group (`groups`), then each rule setting."""
  instances = resolved["instances"]
  for members in groups(instances):
    means = [instances[i]["means"] for i in members]
    for setting in resolved["settings"]:
      yield members, instances[members[0]], means, setting


def budget_plan(resolved: dict) -> list:
  """[(instance indices, setting, budget T, job)] of a resolved budget study, in
  run order: instance group, rule setting, then its runs
  (`jbai.core.budget.budget_runs`)."""
  import jax
  from jbai.core.assembly import fitted
  from jbai.core.budget import budget_runs
  study = resolved["study"]
  out = []
  for members, first, means, setting in group_settings(resolved):
    rule = fitted(setting["rule"], study_problem(study), **setting["params"])
    with jax.enable_x64(study["dtype"] == "float64"):  # the counts of its checkpoints
      runs = budget_runs(rule, study["budget"], study["checkpoints"], len(first["means"]))
    for horizon, times, _ in runs:
      job = budget_job(first["family"], means, setting["rule"], setting["params"],
                       horizon, times, first.get("trials", study["trials"]), study["seed"],
                       study["dtype"], first["family_params"], question(study))
      out.append((members, setting, horizon, job))
  return out


def plan(resolved: dict) -> list:
  """[(instance indices, setting, deltas, job)] of a resolved study, in run order
  (of a budget study, `budget_plan`'s [(instance indices, setting, budget, job)])."""
  from jbai import stops
  if resolved["study"].get("budget") is not None:
    return budget_plan(resolved)
  from jbai.core.assembly import fitted
  study = resolved["study"]
  out = []
  for members, first, means, setting in group_settings(resolved):
    rule = fitted(setting["rule"], study_problem(study), **setting["params"])
    own = setting["threshold"] == "own"
    levels = study["delta"]
    split = stops.takes_delta(rule.init(len(first["means"])))
    for deltas in ([[d] for d in levels] if split else [levels]):
      cap = first.get("max_steps", study["max_steps"]) or default_max_steps(rule)
      job = simulate_job(first["family"], means, setting["rule"], setting["params"],
                         deltas, first.get("trials", study["trials"]),
                         None if own else setting["threshold"], cap,
                         study["seed"], study["dtype"],
                         first["family_params"], study.get("eps_good"), question(study))
      out.append((members, setting, deltas, job))
  return out
