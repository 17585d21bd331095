"""One assembly (`jbai.core.assembly`), one word for a question (`jbai.problems.question`)
and one judgement of answers (`jbai.problems.judge`): issue 74."""

import importlib

import jax
import numpy as np
import pytest

import jbai
from jbai import problems, rules, stops
from jbai.core.assembly import assemble, fitted, question_params


def test_question_is_always_a_problem_and_eps_good_its_alias():
  assert problems.question() == problems.best_arm()
  assert problems.question(None, 0.1) == problems.eps_good(0.1)
  assert problems.question(problems.best_arm(), 0.1) == problems.eps_good(0.1)
  assert problems.question(problems.eps_good(0.1), 0.1) == problems.eps_good(0.1)
  assert problems.question(problems.top_m(2)) == problems.top_m(2)
  with pytest.raises(ValueError, match="two different slacks"):
    problems.question(problems.eps_good(0.1), 0.2)
  with pytest.raises(ValueError, match="cannot go with top-m"):
    problems.question(problems.top_m(2), 0.1)
  with pytest.raises(ValueError, match="must be a jbai.problems.Problem"):
    problems.question("top-m")


def test_a_rule_by_name_is_fitted_to_the_question():
  assert question_params(problems.top_m(3)) == {"m": 3}
  assert question_params(problems.above(0.5)) == {"level": 0.5}
  assert question_params(problems.eps_good(0.05)) == {"eps_good": 0.05}
  assert question_params(problems.best_arm()) == {}
  assert fitted("ebtc-top-m", problems.top_m(3)) == rules.ebtc_top_m(3)
  assert fitted("apt", problems.above(0.5)) == rules.apt(0.5)
  assert fitted("ebtc-eps", problems.eps_good(0.05)) == rules.ebtc_eps(0.05)
  assert fitted("tcb", problems.top_m(3)) == rules.tcb()  # tcb takes no m
  plan = assemble("gaussian", "ebtc-top-m", problem=problems.top_m(2))
  assert plan.rule == rules.ebtc_top_m(2) and plan.problem == problems.top_m(2)
  assert plan.stop == stops.answer_gllr(problems.top_m(2))


def test_the_question_of_a_stop_is_the_question_of_the_run():
  """Asked nothing, a run answers what its stop answers: an eps-good arm for a rule
  built for eps-good answers with its own stop, a set for a set's stop."""
  plan = assemble("bernoulli", rules.lucb1_eps(0.1))
  assert plan.problem == problems.eps_good(0.1) and stops.eps_of(plan.stop) == 0.1
  own = stops.answer_gllr(problems.above(0.5))
  assert assemble("gaussian", "uniform", own).problem == problems.above(0.5)
  assert assemble("gaussian", "tcb").problem == problems.best_arm()


def test_refusals_are_written_once():
  with pytest.raises(ValueError, match="has no stop, so no delta: pass delta=None"):
    assemble("gaussian", "uniform", budget=100, delta=0.1)
  with pytest.raises(ValueError, match="has no stop, so no eps_good"):
    assemble("gaussian", "uniform", budget=100, eps_good=0.1)
  with pytest.raises(ValueError, match="add --stop gllr"):
    assemble("gaussian", "kl-lucb", eps_good=0.1)
  with pytest.raises(ValueError, match="--rule tcb"):
    assemble("gaussian", "kl-racing", eps_good=0.1)
  with pytest.raises(ValueError, match="built for eps-good answers with eps_good=0.1"):
    assemble("gaussian", rules.ebtc_eps(0.1), eps_good=0.2)
  with pytest.raises(ValueError, match="every arm is eps-good"):
    assemble("bernoulli", "tcb", eps_good=1.0)
  with pytest.raises(ValueError, match="stops with its GLLR against a threshold"):
    assemble("gaussian", "uniform", stops.confidence(), problem=problems.top_m(2))


def test_judge_arms_and_sets():
  means = np.array([[1.0, 0.95, 0.5]])
  arms = np.array([[0, 1, 2, -1]])
  correct, regret = problems.judge(np, problems.best_arm(), means, arms)
  assert correct.tolist() == [[True, False, False, False]]
  np.testing.assert_allclose(regret, [[0.0, 0.05, 0.5, 0.0]])
  correct, _ = problems.judge(np, problems.eps_good(0.1), means, arms)
  assert correct.tolist() == [[True, True, False, False]]
  sets = np.array([[[True, True, False], [True, False, False]]])
  correct, regret = problems.judge(np, problems.top_m(2), means, sets)
  assert correct.tolist() == [[True, False]]
  np.testing.assert_allclose(regret, [[0.0, 0.95]], rtol=1e-6)


def test_every_entry_point_reaches_the_assembly(monkeypatch):
  """simulate, rollout, estimate and budget put their runs together through
  `assemble` (each call seen once at least)."""
  seen = []
  real = assemble

  def spy(*args, **kwargs):
    seen.append(kwargs.get("budget") is not None)
    return real(*args, **kwargs)

  for name in ("core.estimate", "core.rollout", "host.budget", "host.simulate"):
    monkeypatch.setattr(importlib.import_module(f"jbai.{name}"), "assemble", spy)
  with pytest.raises(ValueError, match="delta"):
    jbai.rollout(jax.random.key(0), "gaussian", [1.0, 0.0], "uniform", 0.1, 4, budget=10)
  with pytest.raises(ValueError, match="lanes"):
    jbai.simulate(jax.random.key(0), "gaussian", [1.0, 0.0], "tcb", 0.1, 4, lanes=-1)
  with pytest.raises(ValueError, match="at least the number of arms"):
    jbai.budget(jax.random.key(0), "gaussian", [1.0, 0.0], "uniform", 1, 4)
  with pytest.raises(ValueError, match="n_trials"):
    jbai.estimate(jax.random.key(0), "gaussian", [1.0, 0.0], "tcb", 0.1, 1)
  assert seen == [True, False, True, False]
