"""Arms of any law in [0, 1] in the engine, the rules and the command line
(jbai.bounded.family; issue 76, bounded half)."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import bounded as B
from jbai import cli
from jbai.bounded import histogram

from helpers import assert_delta_correct

ARMS = (B.beta(4, 2), B.discrete([0.0, 0.5, 1.0], [0.4, 0.3, 0.3]), B.beta(2, 3))
LAWS = "beta(4,2);discrete(0,0.5,1:0.4,0.3,0.3);beta(2,3)"


def test_hook_costs_are_the_pair_glr():
  """The family's pair_costs at the counts are jbai.bounded.glr's Lambda(a, b) of the
  trial's histograms (rewards on and off the grid), +inf at the leader; with other
  weights, pair_glr's at those weights; the mean is the sample mean."""
  fam = B.bounded_family(ARMS)
  grid = histogram.uniform_grid()
  rewards = np.array([0.9, 0.7, 0.25, 1.0, 0.5, 0.0, 0.333, 0.6, 0.1, 0.45])
  arms = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 0])
  hist = histogram.from_rewards(grid, rewards, arms, 3)
  stats = jnp.concatenate([jnp.asarray([rewards[arms == k].sum() for k in range(3)])[:, None],
                           hist.masses], axis=1)
  np.testing.assert_allclose(jax.vmap(fam.stat)(jnp.asarray(rewards))[:, 0], rewards)
  counts = hist.counts.astype(stats.dtype)
  mean = fam.mean(counts, stats)
  np.testing.assert_allclose(mean, [rewards[arms == k].mean() for k in range(3)], rtol=1e-5)
  want = B.statistic(grid, hist)
  got = jax.jit(fam.pair_costs)(counts, mean, want.leader, stats)
  np.testing.assert_allclose(got, want.glr, rtol=1e-5)
  assert int(want.leader) == 0 and np.all(np.asarray(got)[1:] > 0)
  w = jnp.asarray([0.5, 0.2, 0.3])
  probs = histogram.probabilities(hist)
  ref = B.pair_glr(grid, w[0], probs[0], w, probs).value
  np.testing.assert_allclose(fam.pair_costs(w, mean, 0, stats)[1:], ref[1:], rtol=1e-5)


@pytest.mark.parametrize("rule", [
    "uniform", pytest.param("tcb", marks=pytest.mark.slow)])
def test_rule_stops_and_answers(rule):
  """A rule with the bounded threshold on two Beta arms and a discrete one stops
  before the cap with the best arm, in every trial, on a grid of 11 points. TCB
  is in the slow tier: its program (three pair GLRs a step) compiles for about
  9 s on a CPU, 12 s cold in all; uniform's (the stop's alone) in a few."""
  fam = B.bounded_family(ARMS, points=11)
  res = jbai.simulate(jax.random.key(1), fam, B.true_means(fam), rule, 0.1, 2,
                      threshold="bounded", max_steps=5000)
  assert not np.any(res.hit_cap) and np.all(res.correct)


def test_which_rules_run_on_the_model():
  """TCB, ITCB, EB-TC, EB-TCI and uniform trace on the model (nothing compiled),
  and stop by default with the threshold bounded;
  tas-c (an oracle) and kl-lucb (a KL) are refused by name in one line, means that
  are not the laws', and the threshold bounded on another family."""
  from jbai.core.inputs import resolve, rule_refusal
  fam = B.bounded_family(ARMS)
  for name in B.family.RULES:
    assert rule_refusal(fam, jbai.rules.get(name), 3) is None, name
  assert resolve(fam, "tcb", None)[2].name == "bounded"  # the model's default threshold
  for name in ("tas-c", "kl-lucb", "ttts"):
    with pytest.raises(ValueError, match=f"'{name}' cannot run on the bounded model"):
      jbai.simulate(jax.random.key(0), fam, B.true_means(fam), name, 0.1, 2,
                    threshold="bounded")
  with pytest.raises(ValueError, match="the bounded model's means are its laws'"):
    jbai.simulate(jax.random.key(0), fam, [0.7, 0.4, 0.3], "tcb", 0.1, 2)
  with pytest.raises(ValueError, match="threshold 'bounded' calibrates"):
    jbai.simulate(jax.random.key(0), jbai.families.bernoulli(), [0.5, 0.3], "tcb", 0.1, 2,
                  threshold="bounded")


@pytest.mark.parametrize("laws, extra, message", [
    ("beta(0,2);beta(1,1)", [], "Beta parameter a = 0.0 must be > 0"),
    ("beta(2,-1);beta(1,1)", [], "Beta parameter b = -1.0 must be > 0"),
    ("discrete(0,1:0.5,0.6);beta(1,1)", [], "discrete probabilities sum to 1.1, not 1"),
    ("discrete(0,1.5:0.5,0.5);beta(1,1)", [], "discrete value 1.5 is outside the support"),
    ("bernoulli(1.2);beta(1,1)", [], "Bernoulli mean 1.2 is outside [0, 1]"),
    ("gauss(1);beta(1,1)", [], "is not beta(a,b), bernoulli(p) or discrete"),
    ("discrete(0,1);beta(1,1)", [], "needs its values, ':', then their probabilities"),
    (LAWS, ["--rule", "tas-c"], "'tas-c' cannot run on the bounded model"),
    (LAWS, ["--threshold", "kk"], "use --threshold bounded"),
    (LAWS, ["--means", "0.7,0.4,0.3"], "--laws gives the arms' means"),
    (LAWS, ["--sigma", "1"], "does not take --sigma"),
    (LAWS, ["--top", "2"], "are not built for it yet"),
])
def test_cli_refusals_are_one_line_exit_2(capsys, laws, extra, message):
  code = cli.main(["run", "--trials", "2", "--laws", laws] + extra)
  err = capsys.readouterr().err
  assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_cli_parses_laws_and_the_oracle_prints_t_star(capsys):
  """--laws gives the family, the means and the default threshold; `jbai oracle`
  prints the T* of jbai.bounded.optimal."""
  args = cli.build_parser().parse_args(["run", "--laws", LAWS.replace(";", " ; ")])
  plan = cli.plan_command(args)
  assert plan.family == B.bounded_family(ARMS)
  assert repr(plan.runs[0].threshold) == "bounded()"
  np.testing.assert_allclose(plan.means, [2 / 3, 0.45, 0.4], rtol=1e-12)
  code = cli.main(["oracle", "--laws", LAWS, "--delta", "0.1", "--json"])
  out = json.loads(capsys.readouterr().out)
  want = B.optimal(B.arm_laws(ARMS))
  assert code == 0 and math.isclose(out["t_star"], float(want.t_star), rel_tol=1e-5)
  assert math.isclose(sum(out["w"]), 1, rel_tol=1e-9)


@pytest.mark.slow
def test_tcb_with_the_glr_stop_is_delta_correct_on_beta_and_discrete_arms():
  """P(error) <= delta = 0.1 for TCB with the KL_inf GLR stop (threshold bounded)
  on Beta and discrete arms, one with atoms at 0 and 1 whose variance a Bernoulli
  rule would misjudge. One-sided binomial test at level 0.01
  (`assert_delta_correct`, 400 trials, a first look at 100 that passes with at most
  3 errors; 0 in 100 measured). A grid of 21 points (step 0.05; the discrete arm
  is on it, the Beta arms' rewards spread, which only delays the stop) keeps it
  near 30 s on a CPU (G = 101: 180 s for 100 trials). Its mean tau is
  above T* kl(delta, 1 - delta) (the lower bound of any delta-correct rule) and
  printed against T* log(1/delta)."""
  fam = B.bounded_family(ARMS, points=21)
  means = B.true_means(fam)
  res = assert_delta_correct(
      lambda n: jbai.simulate(jax.random.key(7), fam, means, "tcb", 0.1, n,
                              threshold="bounded", max_steps=20_000), 0.1, n=400)
  t_star = float(B.optimal(B.arm_laws(ARMS)).t_star)
  mean_tau = float(np.mean(res.tau))
  assert mean_tau > t_star * 0.8 * math.log(9)  # kl(0.1, 0.9)
  print(f"errors {int(np.sum(~np.asarray(res.correct)))} in {len(res.tau)}; mean tau "
        f"{mean_tau:.0f}; T* log(1/delta) {t_star * math.log(10):.0f}; ratio "
        f"{mean_tau / (t_star * math.log(10)):.2f}")
