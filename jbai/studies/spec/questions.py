"""A study's question beyond the best arm: top m, above a level (`jbai.problems`),
or eps-good recommendations in a budget study; and the parameters rules are built
for it (docs/guide/study.md, docs/guide/beyond.md).
"""

from typing import Optional

QUESTION_KEYS = ("top", "above")  # a question beyond the best arm (`question`)


def question(study: dict) -> Optional[dict]:
  """{"top": m} or {"above": level}: the question of a study beyond the best arm
  (what its jobs record); in a budget study also {"eps_good": eps}, its
  recommendations scored as eps-good arms; else None."""
  for key in QUESTION_KEYS:
    if study.get(key) is not None:
      return {key: study[key]}
  if study.get("budget") is not None and study.get("eps_good") is not None:
    return {"eps_good": study["eps_good"]}
  return None


def problem_of(asked: Optional[dict]):
  """The `jbai.problems.Problem` of `question`'s dict, or None: the best arm."""
  from jbai import problems
  if asked and "eps_good" in asked:
    return problems.eps_good(asked["eps_good"])
  return problems.asked(**(asked or {}))


def question_params(study: dict) -> dict:
  """The parameters of a study's question that rules are built for (`jbai.rules.get`
  passes each only to the rules that take it): {"eps_good": eps} for eps-good
  answers, {"m": m} for the top m, {"level": level} above a level; else {}."""
  if study.get("eps_good") is not None:
    return {"eps_good": study["eps_good"]}
  asked = question(study) or {}
  return {{"top": "m", "above": "level"}[k]: v for k, v in asked.items()}
