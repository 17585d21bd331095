"""Per-trial outputs from the records that the lanes write.

A lane writes tau = 0 for a delta whose threshold it never crossed (the trial
reached max_steps). `finish` turns that into the reported form: tau = the
trial's length, answer = -1, `hit_cap` set and the answer counted as not
correct (with eps_good > 0, correct means eps-good: `jbai.stops.eps_good`).
`shaped` gives the flat per-trial arrays their leading axes.
"""

import jax
import jax.numpy as jnp

from jbai.problems.base import is_correct
from jbai.stops.eps_good import is_eps_good

PER_DELTA = ("tau", "answer", "correct", "hit_cap", "reward_score", "causal_score",
             "score_cv")
PER_DELTA_PREFIXES = ("policy_score.", "causal_policy_score.", "policy_score_cv.")


def finish(xp, raw: dict, table, n_trials: int, eps_good: float = 0.0, problem=None) -> dict:
  """Per-trial outputs (flat, [I * n_trials, ...]) from the raw records: the cap
  (tau = 0: no crossing) becomes tau = steps and answer = -1, and `correct` and
  `hit_cap` are added. `xp` is numpy or jax.numpy; `table` is the [I, K] means;
  with eps_good > 0 (a number, or a runtime value: EB-TC_eps's eps under
  `jbai.rollout`'s params) an answer is correct when it is eps-good. With a
  `problem` whose answer is a set (`jbai.stops.Stop.problem`) the answers are
  [.., D, K] masks (no arm at the cap) and correct when they are the instance's (or,
  for a problem with a tolerance, right by its `correct`)."""
  hit_cap = raw["tau"] == 0
  tau = xp.where(hit_cap, raw["steps"][:, None], raw["tau"])
  if problem is not None:
    answer = raw["answer"] & ~hit_cap[..., None]
    if problem.correct is None:
      truth = xp.repeat(xp.asarray(jax.vmap(problem.answer)(jnp.asarray(table))), n_trials, axis=0)
      correct = xp.all(answer == truth[:, None, :], axis=-1) & ~hit_cap
    else:  # a tolerance (`jbai.problems.Problem.correct`): each trial's answers at its means
      means = jnp.repeat(jnp.asarray(table), n_trials, axis=0)
      right = jax.vmap(lambda mu, a: is_correct(problem, mu, a))(means, jnp.asarray(answer))
      correct = xp.asarray(right) & ~hit_cap
    return dict(raw, hit_cap=hit_cap, tau=tau, answer=answer, correct=correct)
  out = dict(raw, hit_cap=hit_cap, tau=tau, answer=xp.where(hit_cap, -1, raw["answer"]))
  if not (isinstance(eps_good, (int, float)) and eps_good == 0):
    out["correct"] = is_eps_good(xp, xp.repeat(table, n_trials, axis=0), out["answer"],
                                 eps_good)
    return out
  best = xp.repeat(xp.argmax(table, axis=-1), n_trials)
  out["correct"] = out["answer"] == best[:, None]
  return out


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
