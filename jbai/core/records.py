"""Per-trial outputs from the records that the lanes write.

A lane writes tau = 0 for a delta whose threshold it never crossed (the trial
reached max_steps). `finish` turns that into the reported form: tau = the
trial's length, answer = -1, `hit_cap` set and the answer counted as not
correct (the run's question judges the rest: `jbai.problems.judge`).
`shaped` gives the flat per-trial arrays their leading axes.
"""

from jbai.problems.base import Problem
from jbai.problems.judge import judge

PER_DELTA = ("tau", "answer", "correct", "hit_cap", "reward_score", "causal_score",
             "score_cv")
PER_DELTA_PREFIXES = ("policy_score.", "causal_policy_score.", "policy_score_cv.")


def finish(xp, raw: dict, table, n_trials: int, problem: Problem, eps=None) -> dict:
  """Per-trial outputs (flat, [I * n_trials, ...]) from the raw records: the cap
  (tau = 0: no crossing) becomes tau = steps and answer = -1 (no arm: an empty
  mask for a problem whose answer is a set), and `correct` (the problem's
  judgement, `jbai.problems.judge`, false at the cap) and `hit_cap` are added.
  `xp` is numpy or jax.numpy; `table` is the [I, K] means; `eps` an arm answer's
  slack where it is a runtime value (EB-TC_eps's eps under `jbai.rollout`'s
  params), else None."""
  hit_cap = raw["tau"] == 0
  tau = xp.where(hit_cap, raw["steps"][:, None], raw["tau"])
  means = xp.repeat(table, n_trials, axis=0)
  if problem.arm:
    answer = xp.where(hit_cap, -1, raw["answer"])
    correct = judge(xp, problem, means, answer, eps)[0]
  else:
    answer = raw["answer"] & ~hit_cap[..., None]
    correct = judge(xp, problem, means, answer)[0] & ~hit_cap
  return dict(raw, hit_cap=hit_cap, tau=tau, answer=answer, correct=correct)


def shaped(flat: dict, lead: tuple, scalar_delta: bool) -> dict:
  """Flat per-trial outputs reshaped to lead + (...), the delta axis (right after
  the trial axes) dropped for a scalar delta."""
  out = {}
  for name, a in flat.items():
    a = a.reshape(lead + a.shape[1:])
    if scalar_delta and (name in PER_DELTA or name.startswith(PER_DELTA_PREFIXES)):
      a = a[(slice(None),) * len(lead) + (0,)]
    out[name] = a
  return out


def policy_scores(out: dict, prefix: str = "policy_score.") -> dict:
  """{name: array} of the "<prefix><name>" records ("policy_score.", or
  "causal_policy_score." and "policy_score_cv." for the causal estimator)."""
  return {k[len(prefix):]: v for k, v in out.items() if k.startswith(prefix)}
