"""eps-good answers: the eps-GLLR's costs, its stop in the engine, and delta-PAC."""

import jax
import numpy as np
import pytest

import jbai
from jbai import families
from jbai.core import records
from jbai.host.summary import wilson
from jbai.stops import eps_good as eps_lib

# Two arms within eps = 0.1 of the best: eps-good answers {0, 1}; exact BAI must
# tell 1.0 from 0.95 apart, eps-good stopping need not.
MEANS = [1.0, 0.95, 0.5, 0.4]
EPS = 0.1


@pytest.mark.parametrize("args", [(10.0, 1.0, 5.0, 0.4, 0.1), (3.0, 0.2, 7.0, 0.1, 0.0),
                                  (3.0, 0.2, 7.0, 0.3, 0.2), (40.0, 0.5, 2.0, 0.45, 0.05)])
def test_gaussian_closed_form_agrees_with_golden_section(args):
  fam = families.gaussian(sigma=0.7)
  with jax.enable_x64(True):
    closed = float(eps_lib.eps_cost(fam, *args, method="closed"))
    golden = float(eps_lib.eps_cost(fam, *args, method="golden"))
  assert closed > 0
  assert golden == pytest.approx(closed, rel=1e-9)


def test_eps_cost_zero_is_the_transport_cost_and_grows_with_eps():
  from jbai.transport import transport_cost
  fam = families.bernoulli()
  with jax.enable_x64(True):
    zero = float(eps_lib.eps_cost(fam, 30.0, 0.6, 20.0, 0.4, 0.0))
    exact = float(transport_cost(fam, 30.0, 0.6, 20.0, 0.4).value)
    costs = [float(eps_lib.eps_cost(fam, 30.0, 0.6, 20.0, 0.4, e)) for e in (0.05, 0.1)]
    # No pair of Bernoulli means is 1.5 apart: every arm is eps-good.
    empty = float(eps_lib.eps_cost(fam, 30.0, 0.6, 20.0, 0.4, 1.5))
  assert zero == pytest.approx(exact, rel=1e-9)
  assert zero < costs[0] < costs[1]
  assert empty == float("inf")


@pytest.mark.parametrize("name, args", [("bernoulli", (30.0, 0.6, 20.0, 0.4, 0.1)),
                                        ("bernoulli", (5.0, 0.97, 50.0, 0.2, 0.05)),
                                        ("poisson", (12.0, 3.0, 7.0, 1.5, 0.5))])
def test_golden_section_agrees_with_a_grid(name, args):
  """Other families: the golden-section minimum against a dense grid over the
  bracket [max(m_b - eps, lo), min(m_a, hi - eps)]."""
  import jax.numpy as jnp
  fam = families.get(name)
  n_a, m_a, n_b, m_b, eps = args
  with jax.enable_x64(True):
    golden = float(eps_lib.eps_cost(fam, *args))
    x = jnp.linspace(max(m_b - eps, fam.lo), min(m_a, fam.hi - eps), 200_001)
    grid = float(jnp.min(n_a * fam.kl(m_a, x) + n_b * fam.kl(m_b, x + eps)))
  assert golden > 0
  assert golden <= grid + 1e-9 and golden == pytest.approx(grid, rel=1e-6)


def test_is_eps_good_and_finish():
  means = np.array([MEANS, MEANS])
  answer = np.array([[0], [1], [2], [-1]])
  good = eps_lib.is_eps_good(np, np.repeat(means, 2, axis=0), answer, EPS)
  assert good[:, 0].tolist() == [True, True, False, False]
  raw = {"tau": np.array([[5], [6], [7], [0]]), "steps": np.array([5, 6, 7, 9]),
         "answer": answer}
  exact = records.finish(np, dict(raw), means, 2)
  eps = records.finish(np, dict(raw), means, 2, EPS)
  assert exact["correct"][:, 0].tolist() == [True, False, False, False]
  assert eps["correct"][:, 0].tolist() == [True, True, False, False]


def test_eps_zero_reproduces_the_exact_gllr_bit_for_bit():
  key = jax.random.key(3)
  exact = jbai.simulate(key, "gaussian", MEANS, "tcb", 0.1, 8, threshold="gk16", lanes=8)
  zero = jbai.simulate(key, "gaussian", MEANS, "tcb", 0.1, 8, eps_good=0.0, lanes=8)
  for name in ("tau", "answer", "counts", "correct"):
    np.testing.assert_array_equal(getattr(zero, name), getattr(exact, name))


def test_eps_good_run_answers_in_the_eps_good_set_and_agrees_with_rollout():
  key = jax.random.key(3)
  res = jbai.simulate(key, "gaussian", MEANS, "tcb", 0.1, 8, eps_good=EPS, lanes=8)
  assert set(np.unique(res.answer)) <= {0, 1}
  assert res.correct.all()
  assert res.summary[0]["eps_good"] == EPS and res.summary[0]["error_rate"] == 0.0
  ro = jbai.rollout(key, "gaussian", MEANS, "tcb", 0.1, 8, eps_good=EPS, lanes=8,
                    scores=False)
  np.testing.assert_array_equal(np.asarray(ro.tau), res.tau)
  np.testing.assert_array_equal(np.asarray(ro.correct), res.correct)


@pytest.mark.parametrize("rule, hint", [("kl-lucb", "threshold='gk16'"),
                                        ("kl-racing", "use a GLLR rule")])
def test_rules_with_their_own_stop_are_refused(rule, hint):
  with pytest.raises(ValueError, match=hint):
    jbai.simulate(jax.random.key(0), "gaussian", MEANS, rule, 0.1, 4, eps_good=EPS)


@pytest.mark.parametrize("eps", [-0.1, float("nan"), "x"])
def test_bad_eps_is_refused(eps):
  with pytest.raises(ValueError, match="eps"):
    eps_lib.eps_gllr(eps)


@pytest.mark.slow
def test_eps_good_is_delta_pac_and_faster_than_exact():
  """2,000 trials at delta = 0.1: the error rate (answers not eps-good) is at most
  delta, tested at 99% confidence (Wilson 99% lower bound <= delta); eps-good
  stopping is at least 3 times faster than exact BAI (200 trials)."""
  delta, n = 0.1, 2000
  res = jbai.simulate(jax.random.key(11), "gaussian", MEANS, "tcb", delta, n, eps_good=EPS)
  s = res.summary[0]
  assert s["hit_cap"] == 0
  errors = int(np.sum(~res.correct))
  assert wilson(errors, n, z=2.5758)[0] <= delta
  exact = jbai.simulate(jax.random.key(11), "gaussian", MEANS, "tcb", delta, 200)
  assert 3 * s["mean_tau"] < exact.summary[0]["mean_tau"]


def test_cli_eps_good_and_its_refusals(capsys):
  import json
  from jbai import cli
  base = ["run", "--family", "gaussian", "--means", "1,0.95,0.5,0.4", "--delta", "0.1",
          "--trials", "8"]
  assert cli.main(base + ["--rule", "tcb", "--eps-good", "0.1", "--json"]) == 0
  rec = json.loads(capsys.readouterr().out)
  assert rec["eps_good"] == EPS and rec["threshold"].startswith("eps-gllr(eps=0.1")
  assert rec["error_rate"] == 0.0
  for rule, hint in (("kl-lucb", "add --stop gllr"), ("kl-racing", "--rule tcb")):
    assert cli.main(base + ["--rule", rule, "--eps-good", "0.1"]) == 2
    assert hint in capsys.readouterr().err
  assert cli.main(base + ["--eps-good", "-0.1"]) == 2
  assert "--eps-good must be" in capsys.readouterr().err
