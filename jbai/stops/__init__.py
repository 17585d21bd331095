"""Stopping rules beside the GLLR threshold, by name (see `jbai.stops.base`).

  * `confidence`: the LUCB family's stop, the leader's lower confidence bound
    above every other arm's upper bound (KL or sub-Gaussian index);
  * `elimination`: one arm left in an eliminating rule's active set;
  * `lil`: the lil'UCB stop, one arm pulled more than 1 + lambda times the rest;
  * `eps_gllr`: the GLLR for eps-good answers, against a GLLR threshold
    (`jbai.stops.eps_good`);
  * `answer_gllr`: the GLLR of a question beyond the best arm (top-m,
    thresholding: `jbai.problems`), against a GLLR threshold.

The GLLR against a threshold (`jbai.thresholds`) stays the default: a rule
that brings its own stop (`Rule.stop`) runs with it unless another is named.

Example:
  >>> from jbai import stops
  >>> stops.confidence(index="kl", rate="kl-lucb")
  confidence(index=kl, rate=kl-lucb)
"""

from jbai.stops.base import (DELTA_FIELD, Stop, check, own_stop, program_of, question_refusal,
                             refusal, takes_delta, with_delta)
from jbai.stops.bounds import RATES, rate, rule_bounds, subgaussian_variance
from jbai.stops.answer import answer_gllr
from jbai.stops.budget import budget_stop, is_budget, takes_budget, with_budget
from jbai.stops.confidence import confidence
from jbai.stops.elimination import elimination
from jbai.stops.eps_good import eps_gllr, eps_of
from jbai.stops.lil import lil

STOPS = ("gllr", "confidence", "elimination", "lil")


def get(name: str, rule=None):
  """The stop of this name for `rule`: None for "gllr" (the threshold decides);
  the rule's own stop when it has one of this name; else the stop's default.

  Raises:
    ValueError: naming an unknown stop, or "elimination" for a rule that does
      not eliminate arms (with a working suggestion).
  """
  if name not in STOPS:
    raise ValueError(f"unknown stop {name!r}; choose from {list(STOPS)}")
  if name == "gllr":
    return None
  own = own_stop(rule)
  if own is not None and own.name == name:
    return own
  if name == "confidence":
    return confidence()
  if name == "lil":
    return lil()
  rule_name = getattr(rule, "name", "?")
  raise ValueError(f"stop 'elimination' needs a rule that eliminates arms, not "
                   f"{rule_name!r}: use --rule kl-racing --stop elimination, or "
                   "--stop confidence")


__all__ = ["DELTA_FIELD", "RATES", "STOPS", "Stop", "answer_gllr", "budget_stop", "check", "confidence",
           "elimination", "eps_gllr", "eps_of", "get", "lil", "own_stop", "program_of",
           "question_refusal", "rate", "refusal", "rule_bounds",
           "subgaussian_variance", "takes_budget", "takes_delta", "with_budget", "with_delta",
           "is_budget"]
