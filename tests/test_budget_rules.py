"""Rules that run to a budget keep their promises: UCB-E, UGapE-b and adaptive UCB-E
never stop by themselves and are refused without a budget; UCB-E's a from the
budget; adaptive UCB-E's phases and estimate; `jbai.budget`'s done= check."""

import importlib
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import cli
from jbai.core import budget as budget_lib
from jbai.rules.successive_rejects import log_bar
from jbai.studies import plan as plan_lib

adaptive_lib = importlib.import_module("jbai.rules.adaptive_ucb_e")  # the module, not the rule

MEANS = [0.5, 0.4, 0.3]
NEVER_STOP = ["ucb-e", "ugape-b", "adaptive-ucb-e"]


@pytest.mark.parametrize("rule", NEVER_STOP)
def test_a_rule_that_never_stops_is_refused_without_a_budget(rule):
  with pytest.raises(ValueError, match=f"rule '{rule}' samples with a fixed budget and never "
                                       "stops by itself"):
    jbai.simulate(jax.random.key(0), "bernoulli", MEANS, rule, delta=0.1, n_trials=2)
  with pytest.raises(ValueError, match="never stops by itself"):
    jbai.rollout(jax.random.key(0), "bernoulli", MEANS, rule, 0.1, 2)


def test_jbai_run_refuses_ucb_e_without_a_budget_in_one_line(capsys):
  code = cli.main(["run", "--family", "bernoulli", "--means", "0.5,0.4,0.3", "--trials", "20",
                   "--rule", "ucb-e", "--delta", "0.1"])
  err = capsys.readouterr().err
  assert code == 2 and err.count("\n") == 1 and "'ucb-e'" in err and "--budget" in err, err


@pytest.mark.parametrize("rule", NEVER_STOP)
@pytest.mark.parametrize("family,means", [("poisson", [3.0, 2.0, 1.0]),
                                          ("logcosh", [1.0, 0.5, 0.0])])
def test_the_hoeffding_rules_refuse_families_without_sub_gaussian_rewards(rule, family, means):
  with pytest.raises(ValueError, match=f"rule '{rule}' needs sub-Gaussian rewards"):
    jbai.budget(jax.random.key(0), family, means, rule, budget=30, n_trials=2)


def test_ucb_e_with_a_from_the_budget_is_ucb_e_with_that_a():
  """a = c (T - K) / H1 at the run's T: the trials of ucb_e(a=...) with that value,
  at each budget (so that a from the budget changes with T)."""
  h1, c = 40.0, 0.5
  for horizon in (60, 150):
    a = c * (horizon - len(MEANS)) / h1
    runs = [jbai.budget(jax.random.key(2), "bernoulli", MEANS, rule, budget=horizon,
                        n_trials=32, checkpoints=[horizon // 2])
            for rule in (jbai.rules.ucb_e(h1=h1, c=c), jbai.rules.ucb_e(a=a))]
    np.testing.assert_array_equal(runs[0].counts, runs[1].counts)
    np.testing.assert_array_equal(runs[0].recommendation, runs[1].recommendation)
  assert jbai.rules.ucb_e(h1=h1).params == (("h1", 40.0), ("c", 25.0 / 36.0))
  # so a study (and jbai run) runs it once per budget, each with its own a
  assert [t for t, _, _ in budget_lib.budget_runs(jbai.rules.ucb_e(h1=h1), [60, 150], 0, 3)] == [
      60, 150]


@pytest.mark.parametrize("kwargs,message", [
    ({"a": 1.0, "h1": 2.0}, "give a = 1.0 or h1 = 2.0"),
    ({"c": 0.5}, "c = 0.5 sets a = c"),
    ({"h1": 0.0}, "h1 must be a finite number > 0, got 0.0"),
    ({"a": -1.0}, "a must be a finite number > 0, got -1.0"),
    ({"h1": 3.0, "c": float("inf")}, "c must be a finite number > 0, got inf"),
])
def test_ucb_e_refuses_bad_or_clashing_settings(kwargs, message):
  with pytest.raises(ValueError, match=message.replace("(", r"\(")):
    jbai.rules.ucb_e(**kwargs)


def test_adaptive_ucb_e_phases_and_estimate_follow_the_paper():
  """t_k = n_1 + ... + n_{k-1} + (K - k + 1) n_k with Successive Rejects' n_k, and
  H_hat_k = max over i >= K - k + 1 of i / Delta_hat_<i>^2 (K in phase 0)."""
  num_arms, n = 5, 1000
  nk = [math.ceil((n - num_arms) / (log_bar(num_arms) * (num_arms + 1 - k)))
        for k in range(1, num_arms)]
  want = [sum(nk[:k - 1]) + (num_arms - k + 1) * nk[k - 1] for k in range(1, num_arms)]
  got = adaptive_lib.phase_ends(n, num_arms)
  assert got.tolist() == want and want[-1] <= n
  mean = jnp.array([0.3, 0.5, 0.45, 0.1, 0.4])
  gaps = np.sort(0.5 - np.array(mean))  # 0, 0.05, 0.1, 0.2, 0.4
  for k in range(num_arms):
    expect = num_arms if k == 0 else max(i / gaps[i - 1] ** 2
                                         for i in range(num_arms - k + 1, num_arms + 1))
    assert float(adaptive_lib.complexity(mean, jnp.asarray(k))) == pytest.approx(expect,
                                                                                  rel=1e-5)


def test_adaptive_ucb_e_runs_to_its_budget_with_the_same_trials_for_the_same_key():
  runs = [jbai.budget(jax.random.key(4), "gaussian", [1.0, 0.8, 0.5, 0.0], "adaptive-ucb-e",
                      budget=80, n_trials=16, checkpoints=[40]) for _ in range(2)]
  np.testing.assert_array_equal(runs[0].counts, runs[1].counts)
  np.testing.assert_array_equal(runs[0].recommendation, runs[1].recommendation)
  assert (runs[0].counts.sum(axis=-1) == 80).all() and (runs[0].counts >= 1).all()
  other = jbai.budget(jax.random.key(4), "gaussian", [1.0, 0.8, 0.5, 0.0],
                      jbai.rules.adaptive_ucb_e(c=4.0), budget=80, n_trials=16, checkpoints=[40])
  assert not np.array_equal(other.counts, runs[0].counts)  # c reaches the sampling


@pytest.mark.slow
def test_adaptive_ucb_e_errs_less_than_uniform_on_a_hard_instance():
  """Two close arms among eight poor ones, T = 1000: uniform spends 80% on the poor
  arms. Measured P(error): uniform about 0.12, adaptive UCB-E about 0.03; with 600
  trials each the difference has a standard error of about 0.015, and the test
  asks for a one-sided z > 3 (a false failure with probability below 0.2% where
  the measured rates hold)."""
  means = [0.5, 0.42] + [0.3] * 8
  err = {rule: float(jbai.budget(jax.random.key(11), "bernoulli", means, rule, budget=1000,
                                 n_trials=600, checkpoints=[1000]).error[-1])
         for rule in ("uniform", "adaptive-ucb-e")}
  se = math.sqrt(sum(p * (1 - p) for p in err.values()) / 600)
  assert (err["uniform"] - err["adaptive-ucb-e"]) / se > 3, err


def test_a_traced_budget_is_refused_by_the_host_run_in_one_line():
  with pytest.raises(TypeError, match="budget must be a concrete whole number here"):
    jax.jit(lambda t: budget_lib.check_budget(jbai.rules.uniform(), t, 3))(30)


@pytest.mark.parametrize("done,error", [
    ({}, "done must be None or the records of finished trials"),
    ("records", "done must be None or the records of finished trials"),
    ({"index": [0, 12]}, r"done\['index'\] must be trial indices in \[0, 4\), got 0 .. 12"),
    ({"index": [0, 1], "answer": [[1]]}, r"done\['answer'\] holds 1 trials"),
])
def test_budget_refuses_odd_done_records_in_one_line(done, error):
  with pytest.raises((TypeError, ValueError), match=error):
    jbai.budget(jax.random.key(0), "bernoulli", MEANS, "uniform", budget=30, n_trials=4,
                done=done)
