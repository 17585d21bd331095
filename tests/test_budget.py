"""Runs to a fixed budget (`jbai.budget`, `jbai run --budget`): the same trials as
`jbai.simulate`, the recommendations, the fixed-budget rules against independent
numpy implementations, the uniform allocation against its exact error, and the
refusals."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import cli

from helpers import uniform_error

KEY = jax.random.key(0)
BERN = [0.5, 0.45, 0.43, 0.4, 0.3]
GAUSS = [1.0, 0.9, 0.86, 0.8, 0.6]


def test_a_budget_run_has_the_trials_of_simulate():
  """The same key, the same trials: at the budget T the counts are those of the
  trials of `simulate` capped at T (whose tiny delta never lets them stop), and
  every trial takes exactly T rewards."""
  with jax.enable_x64(False):
    res = jbai.budget(KEY, "gaussian", GAUSS, "tcb", budget=600, n_trials=16)
    sim = jbai.simulate(KEY, "gaussian", GAUSS, "tcb", 1e-300, 16, max_steps=600)
  assert sim.hit_cap.all()
  np.testing.assert_array_equal(res.counts, sim.counts)
  assert (res.counts.sum(-1) == 600).all()
  assert res.checkpoints[-1] == 600 and res.recommendation.dtype == np.int16


def test_uniform_at_a_budget_takes_each_arms_share_as_one_block():
  """Round robin's counts are fixed in advance (`Rule.schedule`): on Gaussian arms
  a run to T takes each arm's share of the next checkpoint in one step (K steps a
  checkpoint), and its answer at T is the arm of largest mean over its block, the
  arm's share of T drawn in one go under the key of its first reward, computed
  here from the keys alone. Other checkpoints give the same trials ("same key,
  same trial" between runs to T; lanes, chunks and scores: tests/test_blocks.py;
  its law: the exact-error test below). Not `simulate`'s bits: that run draws
  reward by reward."""
  from jbai.core import lane as lane_lib
  means, shares, n = [0.5, 0.45, 0.4], [34, 33, 33], 16
  fam = jbai.families.get("gaussian")

  def block_means(trial):  # [K] each arm's mean over its share of T = 100
    count = lane_lib.count_dtype()
    return jnp.stack([fam.sample_block(
        lane_lib.reward_key(trial, jnp.int32(a), jnp.zeros((), count)), jnp.float32(m),
        jnp.asarray(share, count))[0] / share for a, (m, share) in enumerate(zip(means, shares))])

  with jax.enable_x64(False):
    res = jbai.budget(KEY, "gaussian", means, "uniform", budget=100, n_trials=n,
                      checkpoints=[10, 50])
    other = jbai.budget(KEY, "gaussian", means, "uniform", budget=100, n_trials=n,
                        checkpoints=[7, 50])
    trials = jax.vmap(lambda j: jax.random.key_data(jax.random.fold_in(KEY, j)))(jnp.arange(n))
    best = np.argmax(np.asarray(jax.jit(jax.vmap(block_means))(trials)), axis=-1)
  assert res.stats["useful_steps"] == n * 3 * len(means)
  np.testing.assert_array_equal(res.counts, np.tile(shares, (n, 1)))
  np.testing.assert_array_equal(res.recommendation[:, -1], best)
  np.testing.assert_array_equal(res.recommendation[:, 1:], other.recommendation[:, 1:])


def test_the_recommendation_is_the_empirical_best_arm_at_each_checkpoint():
  """At the budget, the default recommendation is the empirical best arm (ties at
  random), and the error and simple regret are its frequency and mean."""
  with jax.enable_x64(False):
    res = jbai.budget(KEY, "gaussian", [1.0, 0.8, 0.0], "uniform", budget=30, n_trials=200,
                      checkpoints=[3, 12])
  assert res.checkpoints.tolist() == [3, 12, 30]
  wrong = res.recommendation != 0
  np.testing.assert_allclose(res.error, wrong.mean(0))
  gaps = np.array([0.0, 0.2, 1.0])
  np.testing.assert_allclose(res.regret, gaps[res.recommendation].mean(0), rtol=1e-6)
  assert ((res.error_ci[:, 0] <= res.error) & (res.error <= res.error_ci[:, 1])).all()
  assert res.error[0] > res.error[-1]  # the empirical best after one pull each, then 10


@pytest.mark.parametrize("rule", ["uniform", "successive-rejects", "sequential-halving"])
def test_recommendations_break_ties_at_random_whatever_the_other_checkpoints(rule):
  """Four Poisson arms equal but for 1e-4 (the best must be unique; Poisson draws
  reward by reward, so no block of pulls is cut at a checkpoint), a budget of 8:
  most answers come from ties, and every arm is recommended about as often
  (lowest-index ties answered arm 0 in 35% to 41% of these trials; each share is
  within 5 standard errors of 1/4, about 6e-7 to fail by chance per arm). A
  checkpoint's recommendation and the trial's counts do not depend on which other
  checkpoints the run records (the tie-breaks come from the key of step t alone),
  and the fixed-budget rules answer an arm their eliminations kept to the end."""
  n = 800
  with jax.enable_x64(False):
    run = lambda times: jbai.budget(KEY, "poisson", [1.0, 1.0, 1.0, 1.0001], rule, budget=8,
                                    n_trials=n, checkpoints=times)
    many, one = run([3, 5, 8]), run([4, 5, 8])
  np.testing.assert_array_equal(many.recommendation[:, 1:], one.recommendation[:, 1:])
  np.testing.assert_array_equal(many.counts, one.counts)
  share = np.bincount(many.recommendation[:, -1], minlength=4) / n
  assert np.all(np.abs(share - 0.25) <= 5 * math.sqrt(0.25 * 0.75 / n)), share
  if rule != "uniform":
    kept = np.take_along_axis(many.counts, many.recommendation[:, -1:].astype(int), 1)[:, 0]
    assert (kept == many.counts.max(-1)).all()


@pytest.mark.slow  # three budget runs that compile: about 10 s (the judgement: test_assembly)
def test_an_eps_good_arm_at_a_budget_scores_the_same_recommendations():
  """problem=eps_good(eps): the trials and recommendations of the best arm's run,
  an error where the arm's mean is below the largest by more than eps, in
  `jbai.budget`, `jbai.rollout` and on the command line (eps = 0: the best arm's
  errors)."""
  means, eps = [0.5, 0.45, 0.3, 0.1], 0.06
  kw = dict(budget=300, checkpoints=[8, 40])
  with jax.enable_x64(False):
    best = jbai.budget(KEY, "bernoulli", means, "tcb", n_trials=200, **kw)
    good = jbai.budget(KEY, "bernoulli", means, "tcb", n_trials=200,
                       problem=jbai.problems.eps_good(eps), **kw)
    exact = jbai.budget(KEY, "bernoulli", means, "tcb", n_trials=200,
                        problem=jbai.problems.eps_good(0.0), **kw)
    run = jbai.rollout(KEY, "bernoulli", means, "tcb", None, 200,
                       problem=jbai.problems.eps_good(eps), **kw)
  np.testing.assert_array_equal(good.recommendation, best.recommendation)
  np.testing.assert_array_equal(good.regret, best.regret)
  np.testing.assert_allclose(good.error, (good.recommendation >= 2).mean(0), rtol=1e-12)
  np.testing.assert_array_equal(exact.error, best.error)
  assert 0 < good.error[0] < best.error[0]  # arm 1 is 0.05 from the best: eps-good
  np.testing.assert_array_equal(np.asarray(run.answer), good.recommendation)
  np.testing.assert_allclose(np.asarray(run.correct).mean(0), 1 - good.error, rtol=1e-12)
  argv = ["run", "--family", "bernoulli", "--means", "0.5,0.45,0.3,0.1", "--rule", "tcb",
          "--budget", "40", "--trials", "200", "--json"]
  with jax.enable_x64(False):
    assert cli.main(argv + ["--eps-good", str(eps)]) == 0
  assert cli.main(argv + ["--eps-good", "0.1", "--top", "2"]) == 2


def test_uniform_on_gaussian_arms_has_the_exact_error():
  """P(error) of round robin at six checkpoints against numerical integration;
  each within 4.5 binomial standard errors (about 7e-6 to fail per checkpoint by
  chance)."""
  means = [0.5, 0.3, 0.2, 0.0]
  n = 4000
  with jax.enable_x64(False):
    res = jbai.budget(KEY, "gaussian", means, "uniform", budget=200, n_trials=n,
                      checkpoints=[4, 9, 20, 50, 120])
  for t, p_hat in zip(res.checkpoints, res.error):
    p = uniform_error(means, int(t))
    assert abs(p_hat - p) <= 4.5 * math.sqrt(p * (1 - p) / n), (t, p_hat, p)


# ------------------------------------------------ the fixed-budget rules in numpy

def log_bar(k: int) -> float:
  return 0.5 + sum(1.0 / i for i in range(2, k + 1))


def np_successive_rejects(rng, means, n: int) -> int:
  """Successive Rejects as the paper states it: in phase k each active arm is
  pulled up to n_k times, then the active arm of lowest mean is rejected (ties at
  random)."""
  k = len(means)
  active, sums, counts = list(range(k)), np.zeros(k), np.zeros(k)
  prev = 0
  for phase in range(1, k):
    nk = math.ceil((n - k) / (log_bar(k) * (k + 1 - phase)))
    for a in active:
      draws = rng.random(nk - prev) < means[a]
      sums[a] += draws.sum()
      counts[a] += nk - prev
    prev = nk
    avg = [sums[a] / max(counts[a], 1) for a in active]
    low = min(avg)
    worst = rng.choice([i for i, v in enumerate(avg) if v == low])  # ties at random
    active.pop(worst)
  return active[0]


def np_sequential_halving(rng, means, n: int) -> int:
  """Sequential Halving: each round t_r = floor(n / (|S| ceil(log2 K))) pulls of
  each arm of S, the better half by the round's averages kept (ties at random)."""
  k = len(means)
  rounds = math.ceil(math.log2(k))
  active = list(range(k))
  for _ in range(rounds):
    if len(active) == 1:
      break
    t = n // (len(active) * rounds)
    avg = np.array([(rng.random(t) < means[a]).mean() for a in active])
    u = rng.random(len(active))  # ties at random
    order = sorted(range(len(active)), key=lambda i: (-avg[i], u[i]))
    active = sorted(active[i] for i in order[:math.ceil(len(active) / 2)])
  return active[0]


def np_ucb_e(rng, means, n: int, a: float, trials: int) -> np.ndarray:
  """UCB-E for `trials` trials at once: each arm once, then argmax mean +
  sqrt(a / T_i); [trials] the empirical best arms at the end."""
  means = np.asarray(means)
  sums = (rng.random((trials, len(means))) < means).astype(float)
  counts = np.ones_like(sums)
  rows = np.arange(trials)
  for _ in range(n - len(means)):
    i = np.argmax(sums / counts + np.sqrt(a / counts), axis=1)
    sums[rows, i] += rng.random(trials) < means[i]
    counts[rows, i] += 1
  return np.argmax(sums / counts, axis=1)


# Setups of Audibert, Bubeck & Munos (2010), Section 6, Bernoulli arms: their
# experiment 1 (one group of bad arms) and experiment 3 (a geometric progression),
# at budgets near H_1.
SETUPS = {"one-group": ([0.5] + [0.4] * 19, 2000),
          "geometric": ([0.5] + [0.5 - 0.37 ** i for i in (2, 3, 4)], 1000)}


def h1(means) -> float:
  top = max(means)
  return sum(1 / (top - m) ** 2 for m in means if m < top)


@pytest.mark.slow  # 4,000 trials of three rules on two setups, in numpy too
@pytest.mark.parametrize("setup", sorted(SETUPS))
@pytest.mark.parametrize("rule", ["successive-rejects", "sequential-halving", "ucb-e"])
def test_fixed_budget_rules_agree_with_numpy(setup, rule):
  """P(error) at the budget, jbai against an independent numpy implementation,
  within 4.5 standard errors of their difference (about 7e-6 to fail by chance)."""
  means, n = SETUPS[setup]
  a = (n - len(means)) / h1(means)  # c = 1 of the paper's experiments
  trials = 4000
  with jax.enable_x64(False):
    res = jbai.budget(KEY, "bernoulli", means, jbai.rules.get(rule, a=a), budget=n,
                      n_trials=trials, checkpoints=[n])
  rng = np.random.default_rng(1)
  if rule == "ucb-e":
    ref = np.mean(np_ucb_e(rng, means, n, a, trials) != 0)
  else:
    play = {"successive-rejects": np_successive_rejects,
            "sequential-halving": np_sequential_halving}[rule]
    ref = np.mean([play(rng, means, n) != 0 for _ in range(trials)])
  got = float(res.error[-1])
  se = math.sqrt((got * (1 - got) + ref * (1 - ref)) / trials)
  assert abs(got - ref) <= 4.5 * se + 1e-9, (got, ref, se)


def test_fixed_budget_rules_spend_the_budget_on_their_phases():
  """Successive Rejects' counts are its phases' (n_k per rejected arm, the rest to
  the last two); Sequential Halving's survivor has the most pulls."""
  k, n = 5, 1000
  with jax.enable_x64(False):
    sr = jbai.budget(KEY, "bernoulli", BERN, "successive-rejects", budget=n, n_trials=8)
    sh = jbai.budget(KEY, "bernoulli", BERN, "sequential-halving", budget=n, n_trials=8)
  nk = [math.ceil((n - k) / (log_bar(k) * (k + 1 - p))) for p in range(1, k)]
  for counts in sr.counts:
    assert sorted(counts)[:k - 2] == nk[:k - 2]  # the arms rejected after phases 1..K-2
    assert counts.sum() == n
  assert (sh.counts.argmax(-1) == sh.recommendation[:, -1]).all()


@pytest.mark.slow  # compiles for several seconds: the fast tier stays within 5 min cold
def test_successive_rejects_phases_are_exact_in_float32():
  """n_k from float64 on the host: at T = 1,000,054 and K = 20 the float32 quotient
  rounds n_18 up to 107,610 where (T - K) / (log-bar(K) 3) is just under 107,609;
  the arm rejected after phase k has n_k rewards in a float32 run too."""
  k, n = 20, 1_000_054
  means = list(np.linspace(0.6, 0.3, k))
  with jax.enable_x64(False):
    sr = jbai.budget(KEY, "bernoulli", means, "successive-rejects", budget=n, n_trials=2)
  nk = [math.ceil((n - k) / (log_bar(k) * (k + 1 - p))) for p in range(1, k)]
  assert nk[17] == 107_609
  for counts in sr.counts:
    assert sorted(counts)[:k - 2] == nk[:k - 2] and counts.sum() == n


@pytest.mark.parametrize("argv, fragment", [
    (["--budget", "3", "--rule", "itcb"],
     "budget must be at least the number of arms, K = 5, got 3"),
    (["--budget", "10", "--rule", "sequential-halving"], "at least 15, the smallest of rule"),
    (["--budget", "2.5"], "is not a whole number"),
    (["--budget", "1e17"], "budget must be <= "),  # beyond 2^53 (x64) and 2^31
    (["--budget", "100", "--rule", "lucb1"], "depend on delta"),
    (["--budget", "100", "--delta", "0.1"], "--delta belongs to a run that stops"),
    (["--budget", "100", "--threshold", "kk"], "--threshold belongs to a run that stops"),
    (["--budget", "100", "--stop", "gllr"], "--stop belongs to a run that stops"),
    (["--budget", "100", "--max-steps", "10"], "--max-steps belongs to a run that stops"),
    (["--checkpoints", "5"], "give --budget"),
    (["--rule", "successive-rejects"], "samples with a fixed budget"),
])
def test_bad_budget_input_is_one_line_and_exit_2(capsys, argv, fragment):
  code = cli.main(["run", "--family", "bernoulli", "--means", "0.5,0.4,0.3,0.2,0.1",
                   "--trials", "4"] + argv)
  err = capsys.readouterr().err
  assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


def test_the_library_refuses_a_checkpoint_beyond_the_budget():
  with pytest.raises(ValueError, match="checkpoint 500 is beyond the budget 100"):
    jbai.budget(KEY, "bernoulli", BERN, "uniform", budget=100, n_trials=4,
                checkpoints=[10, 500])
  with pytest.raises(ValueError, match="samples with a fixed budget"):
    jbai.simulate(KEY, "bernoulli", BERN, "successive-rejects", 0.1, 4)


def test_run_budget_prints_one_table_and_resumes(tmp_path, capsys):
  """Rules side by side at two budgets; --out writes the rows, curves and arrays."""
  out = tmp_path / "b.json"
  argv = ["run", "--family", "bernoulli", "--means", "0.5,0.4,0.3", "--rule",
          "uniform,successive-rejects", "--budget", "60,120", "--trials", "32",
          "--checkpoints", "4", "--out", str(out)]
  assert cli.main(argv) == 0
  text = capsys.readouterr().out
  assert "successive-rejects" in text and "simple regret" in text
  import json
  payload = json.loads(out.read_text())
  assert [r["budget"] for r in payload["rows"]] == [60, 120, 60, 120]
  uniform_curve = payload["curves"][0]
  assert uniform_curve["t"][-1] == 120 and len(uniform_curve["t"]) >= 4
  arrays = np.load(tmp_path / "b.npz")
  assert arrays["recommendation_0"].shape == (32, len(uniform_curve["t"]))


@pytest.mark.parametrize("name", ["successive-rejects", "sequential-halving"])
def test_the_first_pull_of_a_phase_is_uniform_over_the_arms(name):
  """Within a phase (a round) the next arm is one of those with the fewest rewards,
  at random: at the start every arm is first equally often, so the answers between
  phase ends do not depend on the order of the arms (chi-square over K = 4 arms,
  4,000 keys, a false alarm with probability 1e-3; the lowest index first would put
  every key on arm 0)."""
  from jbai.state import empty_stats
  from jbai.stops.budget import with_budget
  scipy_stats = pytest.importorskip("scipy.stats")
  family, rule, num_arms = jbai.families.gaussian(), jbai.rules.get(name), 4
  state = with_budget(rule.init(num_arms), 400)
  stats = empty_stats(family, num_arms)
  keys = jax.random.split(jax.random.key(7), 4000)
  arms = jax.vmap(lambda k: rule.select(k, family, stats, state)[0])(keys)
  counts = np.bincount(np.asarray(arms), minlength=num_arms)
  assert scipy_stats.chisquare(counts).pvalue > 1e-3, counts
