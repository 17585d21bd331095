"""The rules for eps-good answers: EB-TC_eps (ebtc-eps, ebtc-eps-ids) and LUCB1's eps
version (lucb1-eps): the challenger and the trackers on hand-made statistics, the
eps stops, one key one result through `jbai run`, `simulate` and `rollout`, x64 on
and off, and (slow) delta-PAC for eps-good answers."""

import importlib
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

import jbai
from jbai import cli, families, rules, stops
from jbai.state import arm_stats, empty_stats, observe

from helpers import assert_delta_correct, eps_run_three_ways

# Arms 0 and 1 are eps-good (eps = 0.1); exact BAI would have to tell 1 from 0.97.
MEANS = [1.0, 0.97, 0.5, 0.3]
EPS = 0.1
EPS_RULES = ("ebtc-eps", "ebtc-eps-ids", "lucb1-eps")
# The module (jbai.rules.ebtc_eps is also the name of its factory).
ebtc_eps_lib = importlib.import_module("jbai.rules.ebtc_eps")


def gaussian_stats(counts, means, sigma=1.0):
  """ArmStats of a Gaussian trial whose sample means are exactly `means`."""
  fam = families.gaussian(sigma=sigma)
  counts = jnp.asarray(counts, jnp.int32)
  sums = jnp.asarray(means) * counts
  return fam, arm_stats(fam, counts, sums[:, None], jnp.sum(counts))


# ------------------------------------------------------------ the challenger

@pytest.mark.parametrize("eps", [0.05, 0.1, 1.0])
def test_tc_eps_challenger_is_the_papers_argmin(eps):
  """C_n = argmin_{j != B} (mu_B - mu_j + eps) / sqrt(1/N_B + 1/N_j) (Gaussian), and
  the costs are (mu_B - mu_j + eps)^2 / (2 sigma^2 (1/N_B + 1/N_j))."""
  counts, means, sigma = [100, 100, 10, 40], [1.0, 0.95, 0.6, 0.3], 0.5
  fam, stats = gaussian_stats(counts, means, sigma)
  lead = 0
  costs = ebtc_eps_lib.tc_eps_costs(fam, stats, jnp.asarray(lead), eps).value
  c, m = np.asarray(counts, float), np.asarray(means)
  ratio = (m[lead] - m + eps) / np.sqrt(1 / c[lead] + 1 / c)
  ratio[lead] = np.inf
  np.testing.assert_allclose(np.asarray(costs)[1:], (ratio ** 2 / (2 * sigma ** 2))[1:],
                             rtol=1e-12)
  select = rules.ebtc_eps(eps, beta=0.5).select
  state = rules.ebtc_eps(eps).init(4)
  # A fresh pair pulls its challenger first (N = 0 <= (1 - beta) * 1).
  arm, _ = select(jax.random.key(0), fam, stats, state)
  assert int(arm) == int(np.argmin(ratio))


def test_the_slack_changes_the_challenger():
  """On these statistics TC (eps = 0) picks arm 1, TC_eps with eps = 1 picks arm 2:
  (1 - 0.95 + 1) / sqrt(2/100) = 7.4 > (1 - 0.6 + 1) / sqrt(1/100 + 1/10) = 4.2."""
  fam, stats = gaussian_stats([100, 100, 10, 40], [1.0, 0.95, 0.6, 0.3])
  lead = jnp.asarray(0)
  costs = {e: ebtc_eps_lib.tc_eps_costs(fam, stats, lead, e).value for e in (1e-9, 1.0)}
  assert int(jnp.argmin(costs[1e-9])) == 1 and int(jnp.argmin(costs[1.0])) == 2
  from jbai.rules.top_two import transport_costs
  assert int(jnp.argmin(transport_costs(fam, stats, lead))) == 1


def test_bernoulli_costs_agree_with_scipy():
  """Other families: W^eps(B, j) = min_x N_B kl(mu_B, x) + N_j kl(mu_j, x + eps),
  against SciPy's bounded scalar minimiser, and the challenger is its argmin."""
  fam = families.bernoulli()
  counts, means = np.array([50, 30, 8, 20]), np.array([0.7, 0.62, 0.45, 0.3])
  stats = arm_stats(fam, jnp.asarray(counts, jnp.int32),
                    jnp.asarray(means * counts)[:, None], jnp.asarray(counts.sum()))
  costs = np.asarray(ebtc_eps_lib.tc_eps_costs(fam, stats, jnp.asarray(0), EPS).value)

  def kl(p, q):
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))

  for j in (1, 2, 3):
    ref = optimize.minimize_scalar(
        lambda x: counts[0] * kl(means[0], x) + counts[j] * kl(means[j], x + EPS),
        bounds=(means[j] - EPS, means[0]), method="bounded",
        options={"xatol": 1e-12})
    assert costs[j] == pytest.approx(ref.fun, rel=1e-7)
  assert costs[0] == np.inf
  arm, _ = rules.ebtc_eps(EPS).select(jax.random.key(1), fam, stats, rules.ebtc_eps(EPS).init(4))
  assert int(arm) == int(np.argmin(costs))


# ------------------------------------------------------------ the trackers

@pytest.mark.parametrize("pulled, expected", [(1, "challenger"), (2, "challenger"),
                                              (3, "leader")])
def test_tracking_pulls_the_challenger_while_it_is_behind(pulled, expected):
  """Pair (0, 1) seen 3 times before, its challenger pulled `pulled` times: with
  beta = 0.5 the challenger is pulled iff N <= (1 - beta) T_{n+1} = 2."""
  fam, stats = gaussian_stats([20, 20, 20, 20], [1.0, 0.97, 0.2, 0.1])
  rule = rules.ebtc_eps(EPS, beta=0.5)
  state = rule.init(4)
  state = state._replace(rounds=state.rounds.at[0, 1].set(3),
                         challenger_pulls=state.challenger_pulls.at[0, 1].set(pulled))
  arm, new = rule.select(jax.random.key(0), fam, stats, state)
  assert int(arm) == (1 if expected == "challenger" else 0)
  assert int(new.rounds[0, 1]) == 4
  assert int(new.challenger_pulls[0, 1]) == pulled + (expected == "challenger")
  assert int(jnp.sum(new.rounds)) == 4  # no other tracker moved


def test_ids_proportion_and_its_tracker():
  """IDS for Gaussian arms: beta = N_C / (N_B + N_C); the tracker compares N with
  T_{n+1} - sum beta_t."""
  fam, stats = gaussian_stats([30, 10, 20, 20], [1.0, 0.97, 0.2, 0.1])
  rule = rules.ebtc_eps(EPS, beta="ids")
  state = rule.init(4)
  # Seen once before with beta 0.4, challenger pulled once: T = 2, sum beta = 0.4 +
  # 10/40 = 0.65, (1 - beta-bar) T = 1.35 >= 1: the challenger.
  state = state._replace(rounds=state.rounds.at[0, 1].set(1),
                         challenger_pulls=state.challenger_pulls.at[0, 1].set(1),
                         beta_sum=state.beta_sum.at[0, 1].set(0.4))
  arm, new = rule.select(jax.random.key(0), fam, stats, state)
  assert int(arm) == 1
  assert float(new.beta_sum[0, 1]) == pytest.approx(0.4 + 10 / 40, rel=1e-12)


def run_steps(rule, fam, means, n_steps, key):
  """(counts, final rule state) of one trial of `rule` run for n_steps pulls."""
  means = jnp.asarray(means)

  def body(carry, k):
    stats, state = carry
    k_sel, k_rew = jax.random.split(k)
    arm, state = rule.select(k_sel, fam, stats, state)
    reward = fam.sample(k_rew, means[arm])
    return (observe(fam, stats, arm, reward), state), None

  init = (empty_stats(fam, len(means)), rule.init(len(means)))
  (stats, state), _ = jax.jit(lambda c, ks: jax.lax.scan(body, c, ks))(
      init, jax.random.split(key, n_steps))
  return stats, state


@pytest.mark.parametrize("beta", [0.5, 0.3, "ids"])
def test_each_tracker_stays_within_one_pull_of_its_target(beta):
  """After 3,000 steps, every pair (i, j): |N^i_j - (1 - beta-bar) T(i, j)| <= 1,
  and the steps that are no initial pull are the pairs' steps."""
  fam = families.bernoulli() if beta == "ids" else families.gaussian()
  means = [0.6, 0.57, 0.5, 0.3] if beta == "ids" else MEANS
  stats, state = run_steps(rules.ebtc_eps(EPS, beta=beta), fam, means, 3000,
                           jax.random.key(2))
  rounds, pulls = np.asarray(state.rounds), np.asarray(state.challenger_pulls)
  assert rounds.sum() == 3000 - len(means) and np.all(np.diag(rounds) == 0)
  target = rounds - np.asarray(state.beta_sum) if beta == "ids" else (1 - beta) * rounds
  assert np.all(np.abs(pulls - target) <= 1 + 1e-9)
  if beta == "ids":
    assert np.all((state.beta_sum >= 0) & (state.beta_sum <= rounds))


# ------------------------------------------------------------ the eps stops

def test_ebtc_eps_brings_the_eps_gllr_and_checks_the_runs_eps():
  rule = rules.ebtc_eps(EPS)
  assert rule.stop == stops.eps_gllr(EPS, "gk16", from_rule=True)
  assert stops.eps_of(rule.stop) == EPS
  with pytest.raises(ValueError, match="built for eps-good answers with eps_good=0.1"):
    jbai.simulate(jax.random.key(0), "gaussian", MEANS, rule, 0.1, 4, eps_good=0.05)
  for bad in (0.0, -0.1, float("inf"), "x"):
    with pytest.raises(ValueError, match="eps_good"):
      rules.ebtc_eps(bad)
  for bad in (0.0, 1.0, "thompson"):
    with pytest.raises(ValueError, match="beta"):
      rules.ebtc_eps(EPS, beta=bad)
  with pytest.raises(ValueError, match="use rule 'lucb1'"):
    rules.lucb1_eps(0.0)


def test_lucb1_eps_stops_when_the_bounds_overlap_by_less_than_eps():
  """L_h > U_l - eps stops, L_h > U_l does not yet: h and l 0.04 apart with
  bounds of half-width about 0.07 each (sub-Gaussian index, sigma = 1), so that
  U_l - L_h is about 0.095 < eps."""
  fam, stats = gaussian_stats([20_000, 20_000], [1.0, 0.96])
  log_inv = jnp.asarray([np.log(1 / 0.1)])
  stat = {}
  for eps in (0.0, EPS):
    stop = rules.lucb1_eps(EPS).stop if eps else rules.lucb1().stop
    top, _, value, level = stop.test(stop.init(jnp.asarray([0.1]), 2), fam, stats, None)
    stat[eps] = bool(value[0] > level[0])
    assert int(top) == 0
  low, up = stops.bounds.rule_bounds(fam, "subgaussian", "lucb1", stats, log_inv[0])
  assert low[0] < up[1] < low[0] + EPS  # the case this test is about
  assert stat == {0.0: False, EPS: True}
  assert stops.eps_of(rules.lucb1_eps(EPS).stop) == EPS
  assert stops.eps_of(rules.lucb1().stop) == 0.0


# ------------------------------------------------------------ one key, one result

@pytest.mark.parametrize("name", EPS_RULES)
def test_same_key_same_result_through_run_simulate_and_rollout(name, tmp_path, capsys):
  """Per trial, `jbai run`, `simulate` and `rollout` agree; every answer is eps-good
  (delta = 0.01: gk16 is a heuristic threshold that may stop after the first K
  pulls, which at delta = 0.1 errs in about 2 trials in 1,000) and the run says
  what its error rate counts."""
  _, sim = eps_run_three_ways(name, MEANS, EPS, 8, tmp_path, capsys)
  assert set(np.unique(sim.answer)) <= {0, 1} and not sim.hit_cap.any()


def test_cli_threshold_and_default_eps(capsys):
  """--threshold kk gives ebtc-eps the eps-GLLR against kk; without --eps-good the
  rule's own eps (0.1) is the run's."""
  base = ["run", "--family", "gaussian", "--means", "1,0.97,0.5,0.3", "--delta", "0.1",
          "--trials", "4", "--json"]
  assert cli.main(base + ["--rule", "ebtc-eps", "--threshold", "kk", "--eps-good",
                          "0.05"]) == 0
  rec = json.loads(capsys.readouterr().out)
  assert rec["threshold"].startswith("eps-gllr(eps=0.05, threshold=kk")
  assert rec["rule"] == "ebtc-eps(eps_good=0.05, beta=0.5)"
  assert cli.main(base + ["--rule", "lucb1-eps"]) == 0
  assert json.loads(capsys.readouterr().out)["eps_good"] == EPS
  assert cli.main(base + ["--rule", "ebtc-eps", "--eps-good", "0"]) == 2
  assert "use rule 'ebtc'" in capsys.readouterr().err


# ------------------------------------------------------------ x64 on and off

@pytest.mark.parametrize("x64", [True, False])
def test_eps_rules_in_float32_and_float64(x64):
  """Bernoulli arms (costs by bisection) in both float dtypes: every answer
  eps-good, no trial at the cap, the trackers' dtype the default float's."""
  means = [0.7, 0.65, 0.3, 0.2]
  with jax.enable_x64(x64):
    for rule in (rules.ebtc_eps(EPS), rules.ebtc_eps(EPS, beta="ids"), rules.lucb1_eps(EPS)):
      res = jbai.simulate(jax.random.key(5), "bernoulli", means, rule, 0.01, 8)
      assert res.correct.all() and not res.hit_cap.any(), (rule, x64)
    state = rules.ebtc_eps(EPS).init(4)
    assert state.beta_sum.dtype == (jnp.float64 if x64 else jnp.float32)


# ------------------------------------------------------------ delta-PAC (slow)

@pytest.mark.slow
@pytest.mark.parametrize("family, means, eps, rule, params", [
    # eps-good {0, 1, 2}, arm 3 (0.85) 0.05 beyond eps
    ("gaussian", [1.0, 0.95, 0.92, 0.85, 0.5], 0.1, "ebtc-eps", {"beta": 0.5}),
    ("gaussian", [1.0, 0.95, 0.92, 0.85, 0.5], 0.1, "ebtc-eps", {"beta": "ids"}),
    ("gaussian", [1.0, 0.95, 0.92, 0.85, 0.5], 0.1, "tas-d-eps", {}),
    # eps-good {0, 1, 2}, arm 3 (0.55) 0.05 beyond eps; one setting per rule
    ("bernoulli", [0.7, 0.66, 0.63, 0.55, 0.3], 0.1, "ebtc-eps", {"beta": 0.5}),
    ("bernoulli", [0.7, 0.66, 0.63, 0.55, 0.3], 0.1, "tas-d-eps", {}),
])
def test_eps_rules_are_delta_pac_for_eps_good_answers(family, means, eps, rule, params):
  """delta = 0.1 on instances with three eps-good arms and a bad arm 0.05 beyond
  eps: the rate of answers that are not eps-good is at most delta, tested
  one-sided at 99% over 500 or 2,000 trials, none at the cap
  (`helpers.assert_delta_correct`); and some answers are not the best arm (the
  eps-good task is what ran)."""
  delta = 0.1
  res = assert_delta_correct(lambda n: jbai.simulate(
      jax.random.key(12), family, means, rules.get(rule, eps_good=eps, **params), delta, n),
      delta)
  assert np.mean(res.answer != 0) > 0.01


def test_a_rule_named_with_eps_good_is_built_for_that_eps():
  """simulate(..., "ebtc-eps", eps_good=0.05): the named rule is built with the
  run's eps (its own stop carries it), not refused for its default 0.1."""
  import jax
  import jbai
  res = jbai.simulate(jax.random.key(0), "gaussian", [1.0, 0.97, 0.5], "ebtc-eps", 0.1, 8,
                      eps_good=0.05)
  assert res.summary[0]["eps_good"] == 0.05


def test_ebtc_eps_takes_eps_at_run_time_as_beta():
  """eps is a runtime value of EB-TC_eps and of its own stop: every eps shares one
  compiled program, and rollout's params vmap over it with the trials of rules
  built for each eps (answers judged eps-good at each)."""
  a, b = rules.ebtc_eps(0.1), rules.ebtc_eps(0.05)
  assert a.program() == b.program()
  assert stops.program_of(a.stop) == stops.program_of(b.stop)
  key = jax.random.key(3)
  run = jax.jit(jax.vmap(lambda e: jbai.rollout(key, "gaussian", MEANS, "ebtc-eps", 0.1, 8,
                                                params={"eps_good": e}, scores=False)))
  both = run(jnp.asarray([0.1, 0.05]))
  for i, rule in enumerate((a, b)):
    alone = jbai.rollout(key, "gaussian", MEANS, rule, 0.1, 8, scores=False)
    np.testing.assert_array_equal(both.tau[i], alone.tau)
    np.testing.assert_array_equal(both.correct[i], alone.correct)
