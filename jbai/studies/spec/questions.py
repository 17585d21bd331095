"""A study's question: the form its jobs record (`question`, a dict) and the
`jbai.problems.Problem` it asks (`problem_of`, `study_problem`), whose parameters
the study's rules are built with (`jbai.core.assembly.fitted`;
docs/guide/study.md, docs/guide/beyond.md).
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


def problem_of(asked: Optional[dict], eps_good=None):
  """The `jbai.problems.Problem` of `question`'s dict (the form a job records),
  with a stop study's eps_good folded in (`jbai.problems.question`); None where
  neither asks anything (the best arm, which the tables and checks tell apart)."""
  from jbai import problems
  if not asked and eps_good is None:
    return None
  if asked and "eps_good" in asked:
    return problems.question(problems.eps_good(asked["eps_good"]), eps_good)
  return problems.question(problems.asked(**(asked or {})), eps_good)


def study_problem(study: dict):
  """The question a study asks, as one `jbai.problems.Problem` (best_arm() where
  it asks nothing else)."""
  from jbai import problems
  return problems.question(problem_of(question(study), study.get("eps_good")))
