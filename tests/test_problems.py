"""The answer interface (`jbai.problems`): top-m and thresholding, their oracles
against SciPy and against the best arm's exact oracle, gradients, and refusals."""

import doctest
import importlib
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

import jbai
from jbai import cli, families, problems
from jbai.core.lane import stopping_statistic
from jbai.oracle import exact_solve
from jbai.oracle.pieces import pair_cost, pairs_solve
from jbai.state import arm_stats

from helpers import assert_delta_correct

INSTANCES = {  # name: a family with a closed-form minimiser, or golden section (weibull)
    "gaussian": [1.0, 0.8, 0.6, 0.4, 0.2],
    "bernoulli": [0.6, 0.45, 0.3, 0.2],
    "poisson": [2.0, 1.5, 1.0, 0.5],
    "weibull": [2.0, 1.5, 1.0, 0.5],
}


# numpy divergences, written apart from the families' (an independent reference)
def _kl_gaussian(p, q):
  return (p - q) ** 2 / 2


def _kl_bernoulli(p, q):
  return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


def _kl_poisson(p, q):
  return q - p + p * np.log(p / q)


NUMPY_KL = {"gaussian": (_kl_gaussian, (-1.0, 1.0)), "bernoulli": (_kl_bernoulli, (0.05, 0.95)),
            "poisson": (_kl_poisson, (0.2, 5.0))}


def _pair(kl, w_a, m_a, w_b, m_b):
  x = (w_a * m_a + w_b * m_b) / (w_a + w_b)
  return w_a * kl(m_a, x) + w_b * kl(m_b, x)


def scipy_top_m(kl, mu, m):
  """T* of top-m by SciPy's SLSQP on min sum v s.t. c_ij(v) >= 1, in units of a
  feasible start and restarted from its own solution until it settles."""
  order = np.argsort(-mu)
  pairs = [(i, j) for i in order[:m] for j in order[m:]]
  scale = 2 / min(_pair(kl, 1.0, mu[i], 1.0, mu[j]) for i, j in pairs)
  cons = {"type": "ineq", "fun": lambda u: np.array(
      [_pair(kl, scale * u[i], mu[i], scale * u[j], mu[j]) for i, j in pairs]) - 1.0}
  u = np.ones(len(mu))
  for _ in range(4):
    u = optimize.minimize(lambda u: u.sum(), u, jac=np.ones_like, constraints=[cons],
                          bounds=[(1e-12, None)] * len(mu), method="SLSQP",
                          options={"ftol": 1e-16, "maxiter": 2000}).x
  return scale * u.sum()


def _instances(rng, lo, hi, n, k, m):
  """n instances of k means uniform on [lo, hi], the m-th and (m+1)-th apart by a
  twentieth of the range at least (SLSQP stalls short of 1e-8 on closer ones,
  where the barrier solver's point is feasible and lower)."""
  out = []
  while len(out) < n:
    mu = rng.uniform(lo, hi, k)
    ranked = np.sort(mu)[::-1]
    if ranked[m - 1] - ranked[m] >= 0.05 * (hi - lo):
      out.append(mu)
  return np.array(out)


@pytest.mark.parametrize("name", ["gaussian", pytest.param("bernoulli", marks=pytest.mark.slow),
                                  pytest.param("poisson", marks=pytest.mark.slow)])
def test_top_m_oracle_agrees_with_scipy_on_100_instances(name):
  kl, (lo, hi) = NUMPY_KL[name]
  mus = _instances(np.random.default_rng(0), lo, hi, 100, 5, 2)
  sol = problems.oracle(problems.top_m(2), name, mus)
  ref = np.array([scipy_top_m(kl, mu, 2) for mu in mus])
  np.testing.assert_allclose(np.asarray(sol.t_star), ref, rtol=1e-8)
  np.testing.assert_allclose(np.asarray(sol.w).sum(-1), 1.0, rtol=1e-12)
  assert (np.asarray(sol.answer).sum(-1) == 2).all()


@pytest.mark.parametrize("name", ["gaussian"] + [pytest.param(n, marks=pytest.mark.slow)
                                                 for n in ("bernoulli", "poisson", "weibull")])
def test_top_1_is_the_best_arm_and_its_exact_oracle(name):
  family = families.get(name)
  mu = jnp.asarray(INSTANCES[name])
  top1, best, (w, gamma) = jax.jit(lambda mu: (problems.oracle(problems.top_m(1), family, mu),
                                                problems.oracle(problems.best_arm(), family, mu),
                                                exact_solve(family, mu)))(mu)
  np.testing.assert_allclose(float(top1.t_star), 1 / float(gamma), rtol=1e-10)
  np.testing.assert_allclose(np.asarray(top1.w), np.asarray(w), atol=1e-9)
  np.testing.assert_allclose(float(best.t_star), 1 / float(gamma), rtol=1e-14)
  np.testing.assert_array_equal(np.asarray(top1.answer), np.arange(len(mu)) == 0)
  # and the gradient of T*, implicit in both solvers
  g_top = jax.jit(jax.grad(lambda m: problems.oracle(problems.top_m(1), family, m).t_star))(mu)
  g_best = jax.jit(jax.grad(lambda m: 1 / exact_solve(family, m)[1]))(mu)
  np.testing.assert_allclose(np.asarray(g_top), np.asarray(g_best), rtol=1e-6, atol=1e-8)


def test_the_pairs_solver_in_float32_stops_where_float32_does():
  """Float32 means: fewer barrier stages (the slacks lose their digits beyond),
  and T* within 1e-5 of float64's. The stages are relative to T*: with stages of
  absolute size, top-2 of [1, 0.8, 0.75, 0.2] (T* = 3,238) gave NaN in float32."""
  family = families.gaussian()
  top_2 = (jnp.asarray([0, 0, 1, 1]), jnp.asarray([2, 3, 2, 3]))
  mu = jnp.asarray([1.0, 0.8, 0.75, 0.2], jnp.float32)
  t_star = jax.jit(lambda mu: pairs_solve(family, mu, *top_2).t_star)
  assert t_star(mu).dtype == jnp.float32
  np.testing.assert_allclose(float(t_star(mu)), float(t_star(mu.astype(jnp.float64))), rtol=1e-5)


@pytest.mark.slow  # float32's stop at top-2: above, in the fast tier
def test_the_pairs_solver_in_float32_agrees_with_the_exact_oracle_and_at_a_near_tie():
  """Float32 means, m = 1: T* within 1e-5 of the exact oracle's and a finite
  gradient; at a near tie (T* = 8e6, which gave NaN with stages of absolute
  size) too."""
  family = families.gaussian()
  mu = jnp.asarray(INSTANCES["gaussian"], jnp.float32)
  pairs = (jnp.zeros(4, int), jnp.arange(1, 5))
  sol = pairs_solve(family, mu, *pairs)
  assert sol.t_star.dtype == jnp.float32
  _, gamma = exact_solve(family, mu.astype(jnp.float64))
  np.testing.assert_allclose(float(sol.t_star), 1 / float(gamma), rtol=1e-5)
  np.testing.assert_allclose(float(jnp.sum(sol.w)), 1.0, rtol=1e-6)
  assert np.isfinite(np.asarray(jax.grad(lambda m: pairs_solve(family, m, *pairs).t_star)(mu))).all()
  tie = mu.at[1].set(0.999 * mu[0])
  _, gamma = exact_solve(family, tie.astype(jnp.float64))
  assert 1 / float(gamma) > 1e6
  np.testing.assert_allclose(float(pairs_solve(family, tie, *pairs).t_star), 1 / float(gamma),
                             rtol=1e-5)


# Golden section's path (weibull) compiles in 3 times as long, the Bernoulli case in about
# 9 s: the slow tier's.
@pytest.mark.parametrize("name, means", [
    ("gaussian", INSTANCES["gaussian"]),
    ("gaussian", np.linspace(1.2, 0.0, 20).tolist()),
    pytest.param("bernoulli", [0.6, 0.5, 0.45, 0.3, 0.2], marks=pytest.mark.slow),
    pytest.param("weibull", INSTANCES["weibull"], marks=pytest.mark.slow)],
    ids=["gaussian", "gaussian-20", "bernoulli", "weibull"])
def test_the_warm_pairs_solver_reaches_and_follows_the_optimum(name, means):
  """`pairs_warm` (one Newton step a call) from a cold start (v = 1, gap = 1),
  then along means that move as a trial's do: from the 20th call on, within 1e-2
  of the full solver's w*(means) at every call and 1e-3 at half of them
  (measured: at most 1.7e-3 Gaussian, 8.7e-3 Gaussian at K = 20, 7.9e-3
  Bernoulli and 1.4e-3 Weibull; medians 2.2e-4 to 7.4e-4), for a closed-form
  minimiser and for golden section. A piece of cost 0 (a tie across the top m's
  edge) gives a non-finite point, which the rule does not keep
  (`jbai.rules.tas_top_m`)."""
  from jbai.oracle.pieces import pairs_warm
  from jbai.problems.top_m import grid
  rng = np.random.default_rng(0)
  family, mu = families.get(name), np.asarray(means)
  path = [mu.copy() for _ in range(10)]
  for t in range(10, 110):  # one reward's move of a mean at about 1000 pulls an arm
    mu = mu.copy()
    mu[t % mu.shape[0]] += rng.normal() * 0.5 / 1000
    path.append(mu)
  path = jnp.asarray(np.stack(path))
  step = lambda carry, m: (pairs_warm(family, m, grid(m, 2), *carry),) * 2
  _, (v, _) = jax.jit(lambda p: jax.lax.scan(step, (jnp.ones(p.shape[1]), jnp.ones(())), p))(path)
  best = jax.jit(jax.vmap(lambda m: problems.oracle(problems.top_m(2), family, m).w))(path)
  errors = np.max(np.abs(v / jnp.sum(v, -1, keepdims=True) - best), -1)[20:]
  assert errors.max() < 1e-2 and np.median(errors) < 1e-3, (name, errors)
  tied = jnp.asarray([1.0, 0.5, 0.5, 0.2])
  warm = jax.jit(lambda m: pairs_warm(family, m, grid(m, 2), jnp.ones(4), jnp.asarray(1e-3)))
  assert not np.isfinite(np.asarray(warm(tied)[0])).all()


def test_thresholding_closed_form_is_the_optimum_of_its_linear_program():
  """w*_a proportional to 1 / kl(mu_a, tau): SciPy's linear program max z s.t.
  w_a kl(mu_a, tau) >= z on the simplex finds the same T* and w*, and the answer is
  the arms above the level."""
  from scipy.optimize import linprog
  mu = np.array([0.6, 0.45, 0.3, 0.2, 0.05])
  sol = problems.oracle(problems.above(0.35), "bernoulli", mu)
  k = np.array([_kl_bernoulli(m, 0.35) for m in mu])
  # variables (w, z): minimise -z, z - w_a k_a <= 0, sum w = 1
  lp = linprog(np.r_[np.zeros(5), -1.0], A_ub=np.c_[-np.diag(k), np.ones(5)], b_ub=np.zeros(5),
               A_eq=np.r_[np.ones(5), 0.0][None], b_eq=[1.0], bounds=[(0, None)] * 6)
  np.testing.assert_allclose(float(sol.t_star), 1 / -lp.fun, rtol=1e-9)
  np.testing.assert_allclose(np.asarray(sol.w), lp.x[:5], atol=1e-9)
  assert np.asarray(sol.answer).tolist() == [True, True, False, False, False]


@pytest.mark.slow  # the fast tier differentiates T* at m = 1 against the exact oracle
def test_t_star_gradients_match_finite_differences_under_jit_and_vmap():
  family = families.bernoulli()
  table = jnp.asarray([[0.6, 0.5, 0.4, 0.2], [0.7, 0.3, 0.5, 0.1]])
  for problem in (problems.top_m(2), problems.above(0.45)):
    t_star = lambda m: problems.oracle(problem, family, m).t_star
    grads = jax.jit(jax.vmap(jax.grad(t_star)))(table)
    h = 1e-6
    for i, mu in enumerate(np.asarray(table)):
      for a in range(4):
        e = np.eye(4)[a] * h
        fd = (float(t_star(jnp.asarray(mu + e))) - float(t_star(jnp.asarray(mu - e)))) / (2 * h)
        np.testing.assert_allclose(float(grads[i, a]), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k, m", [(6, 1), (6, 2), (6, 5), (12, 1), (12, 2), (12, 9), (12, 11)])
def test_the_top_m_leaders_and_pieces_follow_the_sorted_order(k, m):
  """`leaders` (ranks up to PACKED = 8 arms and beyond UNROLLED = 8 rows, m
  arg-maxes between) gives the rows of a stable sort by decreasing mean, the
  lower index first among equal means; `Problem.costs` and `Problem.arms` lay
  pair (S_r, c) at r R + c, the column arms c the R = K - m arms outside S in
  that order up to PACKED arms, else every arm (R = K, +inf at S's columns); on
  2,000 drawn instances with many ties (means from 6 values)."""
  from jbai.problems.top_m import PACKED, leaders, ranks, split
  rng, n = np.random.default_rng(m), 2000
  means = jnp.asarray(rng.integers(0, 6, (n, k)) / 10.0)
  problem, columns = problems.top_m(m), k - m if k <= PACKED else k
  pick = jnp.asarray(rng.integers(0, m, n) * columns + rng.integers(0, columns, n))
  rows, answer, order, arms, costs = jax.jit(jax.vmap(lambda mu, kk: (
      *leaders(mu, m), jnp.concatenate(split(mu, m)), problem.arms(mu, kk),
      problem.costs(families.gaussian(), jnp.ones(k), mu))))(means, pick)
  order, answer = np.asarray(order), np.asarray(answer)
  np.testing.assert_array_equal(np.argmax(np.asarray(rows), -1), order[:, :m])
  assert np.asarray(rows).sum(-1).max() == 1
  np.testing.assert_array_equal(answer, np.asarray(jax.vmap(ranks)(means)) < m)
  np.testing.assert_array_equal(np.sort(order[:, :m], -1),
                                np.argwhere(answer)[:, 1].reshape(-1, m))
  r, c = np.asarray(pick) // columns, np.asarray(pick) % columns
  np.testing.assert_array_equal(np.asarray(arms[0]), order[np.arange(n), r])
  j = c if k > PACKED else order[np.arange(n), m + c]
  np.testing.assert_array_equal(np.asarray(arms[1]), j)
  inside = np.asarray(costs).reshape(n, m, columns)[np.arange(n), :, c] == np.inf
  np.testing.assert_array_equal(inside.all(-1), answer[np.arange(n), j])


def test_the_glr_of_the_best_arm_is_the_engines_statistic_and_top_m_takes_its_pairs():
  family = families.gaussian()
  counts = jnp.asarray([30, 20, 10, 5])
  means = jnp.asarray([1.0, 0.7, 0.6, 0.1])

  @jax.jit
  def statistics(counts, means):
    stats = arm_stats(family, counts, (counts * means)[:, None], jnp.sum(counts))
    costs = jnp.stack([pair_cost(family, counts[i], means[i], counts[j], means[j])
                       for i in (0, 1) for j in (2, 3)])
    return (stats.mle, problems.glr(problems.best_arm(), family, counts, means)[1],
            stopping_statistic(family, stats)[2], problems.glr(problems.top_m(2), family, counts,
                                                               means), costs,
            problems.glr(problems.above(0.5), family, counts, means)[1])

  mle, best, engine, (answer, top_2), costs, above = statistics(counts, means)
  np.testing.assert_allclose(np.asarray(mle), np.asarray(means))
  np.testing.assert_allclose(float(best), float(engine), rtol=1e-12)
  assert np.asarray(answer).tolist() == [True, True, False, False]
  np.testing.assert_allclose(float(top_2), float(costs.min()), rtol=1e-12)
  np.testing.assert_allclose(float(above), min(float(n) * (m - 0.5) ** 2 / 2
                                               for n, m in zip(counts, means)), rtol=1e-12)


def test_the_best_arm_and_the_eps_good_arm_are_problems_whose_statistic_is_the_engines():
  # Weibull arms, whose MLE of the mean is not the sample mean: the leader comes
  # from the sample means (answer_of), the costs from the MLEs, as the paper's stop.
  family = families.weibull()
  counts = jnp.asarray([40, 40, 12, 7])
  sums = jnp.asarray([[80.0, 170.0], [79.0, 190.0], [18.0, 30.0], [7.0, 8.0]])

  @jax.jit
  def statistics(counts, sums):
    stats = arm_stats(family, counts, sums, jnp.sum(counts))
    top = jnp.argmax(stats.mean)
    costs = jbai.pair_costs(family, counts, stats.mle, top)
    return dict(
        stats=stats, costs=costs, best=problems.statistic(problems.best_arm(), family, stats),
        engine=stopping_statistic(family, stats),
        top_1=problems.statistic(problems.top_m(1), family, stats)[0],
        eps_0=problems.statistic(problems.eps_good(0.0), family, stats),
        eps=[(problems.statistic(problems.eps_good(eps), family, stats),
              jbai.stops.eps_good.statistic(family, stats, eps)) for eps in (0.1, 0.4)])

  out = statistics(counts, sums)
  assert int(jnp.argmax(out["stats"].mean)) == 0 and int(jnp.argmax(out["stats"].mle)) == 1
  ch = int(jnp.argmin(out["costs"]))
  answer, a, b, value = out["best"]
  assert (int(answer), int(a), int(b)) == (0, 0, ch)
  assert float(value) == float(out["costs"][ch])  # bit for bit
  assert [int(x) for x in out["engine"][:2]] == [0, ch]
  assert int(jnp.argmax(out["top_1"])) == 1  # top-m reads its answer off the MLEs
  assert [float(x) for x in out["eps_0"]] == [float(x) for x in out["best"]]
  for got, want in out["eps"]:  # the MLEs of arms 0 and 1 are 0.104 apart
    assert [float(got[i]) for i in (0, 2, 3)] == [float(x) for x in want]
  assert float(value) == 0 and float(out["eps"][1][0][3]) > 0.5

  means = [1.0, 0.8, 0.75, 0.3]
  via = problems.oracle(problems.eps_good(0.1), "gaussian", means)
  ref = jbai.oracle.eps_optimal_allocation("gaussian", means, 0.1)
  np.testing.assert_array_equal(np.asarray(via.w), np.asarray(ref.w))
  np.testing.assert_array_equal(np.asarray(via.t_star), 1.0 / np.asarray(ref.gamma))
  with pytest.raises(ValueError, match="eps must be a finite number >= 0, got -0.1"):
    problems.eps_good(-0.1)
  with pytest.raises(ValueError, match="at least the width of Theta"):
    problems.oracle(problems.eps_good(1.0), "bernoulli", means)


def test_runs_asking_the_best_arm_or_an_eps_good_arm_as_problems_are_the_engines_trials():
  kw = dict(delta=[0.1, 0.01], n_trials=24, max_steps=20_000)
  means = [3.0, 2.0, 1.9, 1.0]  # Weibull: leader and costs from different estimates
  plain = jbai.simulate(jax.random.key(4), "weibull", [means], "tcb", **kw)
  for asked in (dict(problem=problems.best_arm()),
                dict(threshold=jbai.stops.answer_gllr(problems.best_arm()))):
    run = jbai.simulate(jax.random.key(4), "weibull", [means], "tcb", **kw, **asked)
    for field in ("tau", "answer", "counts", "correct"):
      np.testing.assert_array_equal(getattr(run, field), getattr(plain, field))
  means = [1.0, 0.8, 0.75, 0.3]
  eps = jbai.simulate(jax.random.key(4), "gaussian", [means], "ebtc-eps", eps_good=0.1, **kw)
  run = jbai.simulate(jax.random.key(4), "gaussian", [means], "ebtc-eps",
                      problem=problems.eps_good(0.1), **kw)
  for field in ("tau", "answer", "counts", "correct"):
    np.testing.assert_array_equal(getattr(run, field), getattr(eps, field))
  with pytest.raises(ValueError, match="ask two different slacks"):
    jbai.simulate(jax.random.key(4), "gaussian", [means], "tcb", problem=problems.eps_good(0.1),
                  eps_good=0.2, **kw)


@pytest.mark.parametrize("problem, means, message", [
    (lambda: problems.top_m(0), None, "m (the number of arms to find) must be an integer >= 1"),
    (lambda: problems.top_m(4), [0.9, 0.5, 0.2, 0.1], "m = 4 must be less than"),
    (lambda: problems.top_m(2), [0.9, 0.5, 0.5, 0.1], "tie across the top 2 at mean 0.5"),
    (lambda: problems.above(0.5), [0.9, 0.5, 0.2], "mean 0.5 equals the level 0.5"),
    (lambda: problems.above(1.0), [0.9, 0.5, 0.2], "the level 1.0 must lie inside Theta"),
    (lambda: problems.above(float("nan")), None, "the level must be a finite number"),
    (lambda: problems.get("top"), None, "unknown problem 'top'"),
])
def test_bad_input_is_refused_naming_the_value(problem, means, message):
  with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
    problems.oracle(problem(), "bernoulli", means)


@pytest.mark.parametrize("args, message", [
    (["--top", "0"], "must be an integer >= 1"),
    (["--top", "3"], "m = 3 must be less than the number of arms K = 3"),
    (["--top", "2", "--above", "0.5"], "--top and --above ask two different questions"),
    (["--above", "0.8"], "mean 0.8 equals the level 0.8"),
    (["--above", "2", "--family", "bernoulli", "--means", "0.6,0.2,0.1"],
     "the level 2.0 must lie inside Theta"),
    (["--top", "2", "--eps-good", "0.1"], "it does not take --eps-good"),
])
def test_the_command_line_refuses_in_one_line_with_exit_code_2(capsys, args, message):
  argv = args if "--means" in args else ["--means", "1,0.8,-0.2"] + args
  assert cli.main(["oracle", *argv]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and message in err[0], err


def test_jbai_oracle_prints_the_answer_set(capsys):
  assert cli.main(["oracle", "--family", "gaussian", "--means", "1,0.8,-0.2", "--above", "0.5",
                   "--delta", "0.01", "--json"]) == 0
  got = json.loads(capsys.readouterr().out)
  assert got["answer"] == [0, 1] and got["problem"] == "above(level=0.5)"
  inv = 1 / np.array([0.125, 0.045, 0.245])
  np.testing.assert_allclose(got["t_star"], inv.sum(), rtol=1e-12)
  np.testing.assert_allclose(got["t_star_log"], inv.sum() * np.log(100), rtol=1e-12)
  assert cli.main(["oracle", "--family", "bernoulli", "--means", "0.6,0.5,0.4,0.2",
                   "--top", "2"]) == 0
  lines = capsys.readouterr().out.splitlines()
  assert [line.split()[0] for line in lines if line.endswith("answer")] == ["0", "1"]


def test_the_docstring_examples_run():
  for name in ("", ".best_arm", ".threshold", ".top_m"):
    module = importlib.import_module("jbai.problems" + name)
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0, module.__name__


# ----------------------------------------------- simulations of answer sets (jbai.simulate)

ABOVE = ("bernoulli", [0.7, 0.55, 0.4, 0.25], 0.5)  # family, means, level


def _thresholding_run():
  name, means, level = ABOVE
  return jbai.simulate(jax.random.key(3), name, means, jbai.rules.apt(level), [0.1, 0.01], 100,
                       problem=problems.above(level))


def test_a_thresholding_run_answers_sets_and_counts_its_capped_trials():
  name, means, level = ABOVE
  problem = problems.above(level)
  res = _thresholding_run()
  truth = np.asarray(means) > level
  assert res.answer.shape == (100, 2, 4) and res.answer.dtype == bool
  np.testing.assert_array_equal(res.correct, (res.answer == truth).all(-1) & ~res.hit_cap)
  assert res.correct.mean() > 0.9 and not res.hit_cap.any()
  np.testing.assert_allclose(res.summary[0]["t_star"],
                             float(problems.oracle(problem, name, means).t_star), rtol=1e-6)
  capped = jbai.simulate(jax.random.key(3), name, means, jbai.rules.apt(level), [0.1, 0.01], 100,
                         problem=problem, max_steps=30)  # the program above: the cap is traced
  assert capped.hit_cap.all() and not capped.answer.any() and not capped.correct.any()
  assert capped.summary[0]["error_rate"] == 1.0


@pytest.mark.slow  # rollout(problem=) in the fast tier: at a budget, below
def test_rollout_gives_a_thresholding_runs_trials():
  name, means, level = ABOVE
  res = _thresholding_run()
  pure = jbai.rollout(jax.random.key(3), name, means, jbai.rules.apt(level), [0.1, 0.01], 100,
                      problem=problems.above(level), scores=False)
  for field in ("tau", "answer", "correct"):
    np.testing.assert_array_equal(np.asarray(getattr(pure, field)), getattr(res, field))


def test_a_top_m_run_resumes_from_its_finished_trials():
  args = (jax.random.key(5), "gaussian", [1.0, 0.8, 0.5, 0.2], jbai.rules.ebtc_top_m(2), 0.05, 60)
  chunks = []
  full = jbai.simulate(*args, problem=problems.top_m(2), chunk=64,
                       on_chunk=lambda r: chunks.append(r) if len(r["index"]) else None)
  done = {k: np.concatenate([c[k] for c in chunks[:len(chunks) // 2]]) for k in chunks[0]}
  assert 10 < len(done["index"]) < 50
  resumed = jbai.simulate(*args, problem=problems.top_m(2), chunk=64, done=done)
  for field in ("tau", "answer", "correct"):
    np.testing.assert_array_equal(getattr(resumed, field), getattr(full, field))
  assert full.answer.shape == (60, 4)
  assert (full.answer.sum(-1) == 2).all() and full.correct.all()


def test_the_command_lines_trial_log_keeps_answer_sets(tmp_path):
  """`jbai run --above --out` saves finished trials as they come (`TrialLog`): a
  set answer is a [D, K] record, read back and checked for that shape, and the
  resumed run is the uninterrupted one."""
  from jbai.cli.trials import TrialLog
  name, means, level = ABOVE
  args = (jax.random.key(3), name, means, jbai.rules.apt(level), [0.1, 0.01], 100)
  spec = {"means": means, "delta": [0.1, 0.01], "trials": 100, "problem": "above(level=0.5)"}
  path = str(tmp_path / "run.partial.jsonl")
  log = TrialLog(path, {"k": spec})
  saver, chunks = log.saver("k"), []
  full = jbai.simulate(*args, problem=problems.above(level), chunk=64,
                       on_chunk=lambda r: chunks.append(r) if len(r["index"]) else None)
  for records in chunks[:len(chunks) // 2]:
    saver(records)
  done = TrialLog(path, {"k": spec}).done("k")
  assert done["answer"].shape[1:] == (2, 4) and 10 < len(done["index"]) < 90
  resumed = jbai.simulate(*args, problem=problems.above(level), chunk=64, done=done)
  for field in ("tau", "answer", "correct"):
    np.testing.assert_array_equal(getattr(resumed, field), getattr(full, field))
  with pytest.raises(ValueError, match="whose 'answer' has shape"):
    TrialLog(path, {"k": {k: v for k, v in spec.items() if k != "problem"}})


@pytest.mark.slow  # lucb-top-m's own stop in the fast tier: the test below
@pytest.mark.parametrize("threshold", [None, "gk16"], ids=["own stop", "gllr"])
def test_lucb_for_the_top_1_is_kl_lucb_with_either_stop(threshold):
  """At m = 1 LUCB's round is KL-LUCB's (the weakest of a one-arm top is the leader)
  and so is its own stop (the top's L above every other U), so with the same stop,
  its own or the GLLR, the trials are the same, bit for bit (Gaussian means: no
  tie for the leader after the first pulls)."""
  means = [1.0, 0.8, 0.5, 0.2]
  top = jbai.simulate(jax.random.key(4), "gaussian", means, jbai.rules.lucb_top_m(1), 0.05, 100,
                      threshold, problem=problems.top_m(1))
  best = jbai.simulate(jax.random.key(4), "gaussian", means, jbai.rules.kl_lucb(), 0.05, 100,
                       threshold)
  assert top.stats["threshold"].startswith("confidence" if threshold is None else "answer-gllr")
  np.testing.assert_array_equal(top.tau, best.tau)
  np.testing.assert_array_equal(top.answer.argmax(-1), best.answer)
  assert (top.answer.sum(-1) == 1).all()


def test_lucbs_own_stop_for_the_top_m_serves_the_command_line_and_studies(capsys):
  """lucb-top-m stops with its own stop by default (the top m's lower bounds above
  the others' upper bounds), refuses a --threshold with it, and takes --stop gllr;
  a study of the top 2 runs it with threshold "own"."""
  argv = ["run", "--family", "bernoulli", "--means", "0.7,0.55,0.4,0.25", "--top", "2",
          "--rule", "lucb-top-m", "--trials", "10", "--delta", "0.1"]
  assert cli.main(argv + ["--threshold", "gk16"]) == 2
  assert "stops with 'confidence', which takes no --threshold" in capsys.readouterr().err
  stop = jbai.stops.get("confidence", jbai.rules.lucb_top_m(2))
  assert stop.problem == problems.top_m(2) and jbai.stops.refusal(
      stop, jbai.rules.lucb_top_m(2), families.bernoulli()) is None
  assert "cannot answer" in jbai.stops.refusal(stop, jbai.rules.tcb(), families.bernoulli())
  with pytest.raises(ValueError, match="the stop of the top 2 takes none"):
    jbai.stops.confidence(eps=0.1, m=2)
  resolved = jbai.studies.spec.load('[study]\ntop = 2\n[[instances]]\nfamily = "bernoulli"\n'
                                    'means = [0.7, 0.55, 0.4]\n[[rules]]\nname = "lucb-top-m"\n')
  assert resolved["settings"] == [{"rule": "lucb-top-m", "params": {}, "threshold": "own"}]


@pytest.mark.parametrize("name", ["ebtc-top-m", "lucb-top-m", "tas-top-m", "fws-top-m"])
def test_a_top_m_rule_is_checked_against_a_family_at_the_runs_arms(name):
  """The command line's check that a rule takes the family traces it at the run's
  K arms (at 3 arms, a rule built for m >= 3 could not be traced: `--top 3`
  was refused for every rule)."""
  from jbai.cli.plan import check_combinations
  for m in (1, 3, 4):
    check_combinations(families.bernoulli(), [name], ["gk16"], 5, options={"m": m})


def test_track_and_stop_for_top_m_keeps_its_allocation_through_a_tie():
  """At a tie across the top m's edge (no w* exists) the rule's state and its
  allocation stay the last ones; elsewhere it tracks the warm solver's point."""
  family, rule = families.bernoulli(), jbai.rules.tas_top_m(2)
  counts = jnp.asarray([400, 400, 400, 400])
  state = rule.init(4)._replace(v=jnp.asarray([1.0, 5.0, 5.0, 1.0]), gap=jnp.asarray(1e-2))
  select = jax.jit(lambda means: rule.select(
      jax.random.key(0), family,
      arm_stats(family, counts, (counts * means)[:, None], jnp.sum(counts)), state)[1])
  for means, moved in (([0.6, 0.45, 0.45, 0.2], False), ([0.6, 0.47, 0.45, 0.2], True)):
    new = select(jnp.asarray(means))
    assert (not np.array_equal(np.asarray(new.v), np.asarray(state.v))) == moved
    assert np.isfinite(np.asarray(new.v)).all() and (np.asarray(new.v) > 0).all()


@pytest.mark.parametrize("rows, cols", [(3, 4), pytest.param(9, 8, marks=pytest.mark.slow)])
def test_the_matrix_game_solver_matches_scipy(rows, cols):
  """`solve_matrix_game` against SciPy's LP on 60 random games of a shape (a third
  with integer payoffs: degenerate pivots), value and achieved value to 1e-10
  relative in float64."""
  from jbai.rules.matrix_game import solve_matrix_game
  rng = np.random.default_rng(rows)
  payoff = rng.normal(size=(60, rows, cols)) * rng.uniform(0.01, 10, (60, 1, 1))
  payoff[::3] = np.round(payoff[::3])
  active = rng.random((60, rows)) < 0.7
  active[np.arange(60), rng.integers(rows, size=60)] = True
  zs, values = map(np.asarray, jax.jit(jax.vmap(solve_matrix_game))(jnp.asarray(payoff),
                                                                    jnp.asarray(active)))
  for game, act, z, value in zip(payoff, active, zs, values):
    game = game[act]
    lp = optimize.linprog(np.r_[np.zeros(cols), -1.0], A_ub=np.c_[-game, np.ones(len(game))],
                          b_ub=np.zeros(len(game)), A_eq=np.r_[np.ones(cols), 0.0][None],
                          b_eq=[1.0], bounds=[(0, None)] * cols + [(None, None)])
    scale = max(1.0, abs(lp.fun))
    assert z.min() >= 0 and abs(z.sum() - 1) < 1e-12
    assert abs(value + lp.fun) <= 1e-10 * scale
    assert abs((game @ z).min() + lp.fun) <= 1e-10 * scale


def test_the_matrix_game_solver_gives_a_lane_its_own_result_in_any_pool():
  """Under vmap the lanes with one active row take the best response and the others
  the simplex, GROUP at a time: 60 games (half with one active row, a third with
  integer payoffs) give the same z and value bit for bit as one pool, in pools of
  3 in reverse order, and as a [2, 30] batch (vmap of vmap), and an accelerator's
  path gives them up to rounding; the best response is the simplex's one pivot,
  bit for bit."""
  from jbai.rules.matrix_game import best_response, simplex, solve_matrix_game
  rng = np.random.default_rng(7)
  payoff = rng.normal(size=(60, 9, 6)) * rng.uniform(0.01, 10, (60, 1, 1))
  payoff[::3] = np.round(payoff[::3])
  active = (rng.random((60, 9)) < 0.4) & (np.arange(60) % 2 == 0)[:, None]
  active[np.arange(60), rng.integers(9, size=60)] = True
  payoff, active = jnp.asarray(payoff, jnp.float32), jnp.asarray(active)
  pool = jax.jit(jax.vmap(solve_matrix_game))
  whole = pool(payoff, active)
  threes = [pool(payoff[i:i + 3][::-1], active[i:i + 3][::-1]) for i in range(57, -1, -3)]
  parts = jax.tree.map(lambda *xs: jnp.concatenate(xs)[::-1], *threes)
  nested = jax.jit(jax.vmap(jax.vmap(solve_matrix_game)))(payoff.reshape(2, 30, 9, 6),
                                                          active.reshape(2, 30, 9))
  for other in (parts, jax.tree.map(lambda x: x.reshape((60,) + x.shape[2:]), nested)):
    for a, b in zip(whole, other):
      np.testing.assert_array_equal(a, b)
  # An accelerator's path (`lax.platform_dependent`'s default): every lane runs both.
  from jbai.rules.matrix_game import _several, by_weight
  everywhere = jax.jit(jax.vmap(by_weight(best_response, (simplex, _several))))(payoff, active)
  for a, b in zip(whole, everywhere):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  single = np.asarray(jnp.sum(active, axis=1) == 1)
  assert 25 <= single.sum() <= 35
  for a, b in zip(jax.jit(jax.vmap(best_response))(payoff[single], active[single]),
                  jax.jit(jax.vmap(simplex))(payoff[single], active[single])):
    np.testing.assert_array_equal(a, b)


def _pair_games(n, arms, pairs, seed):
  """n random games of `pairs` rows on `arms` arms (rows of two distinct arms,
  a third with integer payoffs), with 1 to `pairs` active rows."""
  rng = np.random.default_rng(seed)
  a, b = rng.uniform(0.0, 2.0, (2, n, pairs))
  c = rng.uniform(0.0, 1.0, (n, pairs))
  a[::3], b[::3], c[::3] = np.round(4 * a[::3]), np.round(4 * b[::3]), np.round(2 * c[::3])
  head = rng.integers(arms, size=(n, pairs))
  tail = (head + rng.integers(1, arms, size=(n, pairs))) % arms
  size = 1 + np.arange(n) % pairs
  active = np.argsort(rng.random((n, pairs)), axis=1) < size[:, None]
  return a, b, c, head, tail, active


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("arms, pairs", [
    (6, 12), pytest.param(20, 36, marks=pytest.mark.slow)])  # 20 arms: 7 s each to compile
def test_the_pair_game_solver_matches_scipy_and_any_pool(arms, pairs, dtype):
  """`solve_pair_game` on 120 random games of `pairs` rows on `arms` arms, 1 to
  `pairs` rows active (closed forms up to two; beyond, on 20 arms the compact game
  up to 8 rows and the dense one above, on 6 the dense one): the value of SciPy's
  LP (1e-10 relative in float64; in float32 1e-5 on 6 arms, 1e-4 on 20, whose
  dense games pivot up to 36 times), a z on the simplex that
  achieves it, and the same bits in one pool, in pools of 4 in reverse order and
  as a [2, 60] batch; an accelerator's path (every lane runs every branch) gives
  them up to rounding."""
  from jbai.rules.matrix_game import by_weight
  from jbai.rules.pair_game import _largest_compact, _parts, payoff, solve_pair_game
  largest = _largest_compact(pairs, arms)
  assert largest == (8 if arms == 20 else 2)
  with jax.enable_x64(dtype == jnp.float64):
    args = _pair_games(120, arms, pairs, seed=3)
    args = tuple(jnp.asarray(v, dtype) if v.dtype == float else jnp.asarray(v) for v in args)
    solve = lambda *g: solve_pair_game(*g, arms)
    zs, values = jax.jit(jax.vmap(solve))(*args)
    tol = 1e-10 if dtype == jnp.float64 else 1e-5 if arms == 6 else 1e-4
    for i in range(120):
      game = np.asarray(payoff(*(v[i] for v in args[:5]), arms), float)[np.asarray(args[5][i])]
      lp = optimize.linprog(np.r_[np.zeros(arms), -1.0], A_ub=np.c_[-game, np.ones(len(game))],
                            b_ub=np.zeros(len(game)), A_eq=np.r_[np.ones(arms), 0.0][None],
                            b_eq=[1.0], bounds=[(0, None)] * arms + [(None, None)])
      z, scale = np.asarray(zs[i], float), max(1.0, abs(lp.fun))
      assert z.min() >= 0 and abs(z.sum() - 1) <= tol
      assert abs(float(values[i]) + lp.fun) <= tol * scale
      assert abs((game @ z).min() + lp.fun) <= tol * scale
    pool = jax.jit(jax.vmap(solve))
    fours = [pool(*(v[i:i + 4][::-1] for v in args)) for i in range(116, -1, -4)]
    parts = jax.tree.map(lambda *xs: jnp.concatenate(xs)[::-1], *fours)
    nested = jax.jit(jax.vmap(jax.vmap(solve)))(*(v.reshape((2, 60) + v.shape[1:]) for v in args))
    for other in (parts, jax.tree.map(lambda x: x.reshape((120,) + x.shape[2:]), nested)):
      for x, y in zip((zs, values), other):
        np.testing.assert_array_equal(x, y)
    everywhere = jax.jit(jax.vmap(by_weight(*_parts(arms, pairs))))(*args)
    for x, y in zip((zs, values), everywhere):
      np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


@pytest.mark.slow  # the solver against SciPy: above, in the fast tier
def test_the_matrix_game_solver_has_the_value_of_the_best_arms_game():
  """On games whose rows each hold the top arm and one other (the best arm's), the
  same value as FWS's one-dimensional solver."""
  from jbai.rules.fws import solve_bai_game
  from jbai.rules.matrix_game import solve_matrix_game
  rng = np.random.default_rng(0)
  k, top = 6, 2
  a, b, c = rng.uniform(0.1, 2, (3, 20, k))
  active = (rng.random((20, k)) < 0.6) & (np.arange(k) != top)
  active[:, top + 1] = True
  payoff = np.where(np.arange(k) == top, a[:, :, None], 0.0)
  payoff = payoff + b[:, :, None] * np.eye(k) - c[:, :, None]
  _, values = jax.jit(jax.vmap(solve_matrix_game))(jnp.asarray(payoff), jnp.asarray(active))
  _, expected = jax.vmap(solve_bai_game, (0, 0, 0, 0, None))(*map(jnp.asarray, (a, b, c, active)),
                                                             top)
  np.testing.assert_allclose(values, expected, rtol=1e-9)


@pytest.mark.parametrize("name, arms", [("bernoulli", 4), ("weibull", 4), ("gaussian", 10)])
def test_fws_for_top_m_takes_the_pairs_gradients(name, arms):
  """The pairs' costs and gradients of fws-top-m are `Problem.costs` and its
  forward-mode Jacobian (the envelope theorem: kl(mu_i, x*) at i, kl(mu_j, x*) at
  j), on its grid: S against S^c up to PACKED arms, S against every arm beyond
  (S's own pairs cost +inf). Its trials: `test_top_m_rules_are_delta_correct`
  (slow tier)."""
  from jbai.rules.fws_top_m import pairs
  from jbai.rules.pair_game import payoff
  family, problem = families.get(name), problems.top_m(2)
  means = jnp.asarray(INSTANCES[name] if arms == 4 else np.linspace(1.0, 0.1, arms)[::-1])
  x = jnp.arange(arms, 0, -1) / (arms * (arms + 1) / 2)
  (f, a, b, head, tail), costs, jacobian = jax.jit(lambda x: (
      pairs(family, x, means, 2), problem.costs(family, x, means),
      jax.jacfwd(lambda w: problem.costs(family, w, means))(x)))(x)
  np.testing.assert_allclose(f, costs, rtol=1e-12)
  piece = np.isfinite(np.asarray(f))
  assert piece.sum() == 2 * (arms - 2)
  np.testing.assert_allclose(payoff(a, b, 0 * a, head, tail, arms)[piece], jacobian[piece],
                             rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("rule, problem, kwargs, message", [
    ("tcb", problems.top_m(2), {}, "rule 'tcb' samples for the best arm; it cannot answer top-m"),
    ("apt", None, {}, "rule 'apt' is built for its question's level"),
    (jbai.rules.apt(0.5), None, {}, "rule 'apt' samples for above, not the best arm"),
    (jbai.rules.apt(0.4), problems.above(0.5), {}, "was built for level = 0.4"),
    (jbai.rules.ebtc_top_m(1), problems.top_m(2), {}, "was built for m = 1"),
    (jbai.rules.ebtc_top_m(2), problems.above(0.5), {}, "cannot answer above(level=0.5)"),
    (jbai.rules.lucb_top_m(2), None, {}, "rule 'lucb-top-m' samples for top-m, not the best arm"),
    ("uniform", problems.top_m(2), {"eps_good": 0.1}, "it cannot go with top-m(m=2)"),
    ("lucb1", problems.top_m(2), {}, "not with stop 'confidence' (rule 'lucb1')"),
    ("uniform", problems.above(0.55), {}, "mean 0.55 equals the level 0.55"),
    ("uniform", "top-2", {}, "problem must be a jbai.problems.Problem"),
])
def test_a_rule_or_stop_that_cannot_answer_the_question_is_refused(rule, problem, kwargs,
                                                                    message):
  with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
    jbai.simulate(jax.random.key(0), "bernoulli", [0.7, 0.55, 0.4, 0.25], rule, 0.1, 10,
                  problem=problem, **kwargs)


def test_jbai_run_answers_above_a_level_and_refuses_what_cannot(capsys):
  assert cli.main(["run", "--family", "bernoulli", "--means", "0.7,0.55,0.4,0.25",
                   "--above", "0.5", "--rule", "apt", "--delta", "0.1,0.01", "--trials", "100",
                   "--seed", "3", "--json"]) == 0
  records = json.loads(capsys.readouterr().out)
  assert [r["delta"] for r in records] == [0.1, 0.01]
  assert all(r["error_rate"] <= 0.1 and r["ratio"] > 0 for r in records)
  for argv, message in [(["--rule", "apt"], "give it (on the command line, --above LEVEL)"),
                        (["--rule", "tcb", "--top", "2"], "cannot answer top-m(m=2)"),
                        (["--rule", "uniform", "--top", "2", "--stop", "confidence"],
                         "not with stop 'confidence'"),
                        (["--rule", "uniform", "--top", "2", "--eps-good", "0.1"],
                         "does not go with --top"),
                        (["--rule", "tcb", "--top", "2", "--budget", "100"],
                         "cannot answer top-m(m=2)"),
                        (["--rule", "apt", "--above", "0.5", "--budget", "100", "--delta",
                          "0.1"], "--delta belongs to a run that stops")]:
    assert cli.main(["run", "--family", "bernoulli", "--means", "0.7,0.55,0.4,0.25",
                     "--trials", "10", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


# ---------------------------------------------------------------- runs to a budget

@pytest.mark.slow  # the fast tier's question at a budget: thresholding, below
def test_the_top_1_at_a_budget_is_the_best_arm_run_as_sets():
  """The empirical top 1 is the empirical best arm (the lowest index among equal
  means, as `empirical_best`): the same trials give its one-hot sets, the same
  error and the same regret (mu* - mu_J is the top 1's sum minus the answer's)."""
  means, key = [1.0, 0.8, 0.5, 0.2], jax.random.key(4)
  run = lambda **kw: jbai.budget(key, "gaussian", means, "uniform", budget=64, n_trials=16,
                                 checkpoints=[8, 32], **kw)
  best, top1 = run(), run(problem=problems.top_m(1))
  assert top1.recommendation.shape == (16, 3, 4) and top1.recommendation.dtype == bool
  np.testing.assert_array_equal(top1.recommendation, np.eye(4, dtype=bool)[best.recommendation])
  np.testing.assert_array_equal(top1.error, best.error)
  np.testing.assert_allclose(top1.regret, best.regret, rtol=1e-6)
  assert 0 < best.error[0] and best.error[-1] < best.error[0]


def test_a_rollout_of_the_top_m_runs_under_a_users_jit_and_vmap_as_alone():
  """fws-top-m's rollout under the caller's `jax.jit(jax.vmap(...))` over two
  instances (the game solver's pool rule batched again), then each instance under
  a second `jax.jit`: the same trials. The cached program built in the first
  trace held a tracer of it in its answer prototype, which the second trace then
  met (UnexpectedTracerError)."""
  means = jnp.asarray([[0.7, 0.55, 0.45, 0.3, 0.2], [0.8, 0.6, 0.5, 0.3, 0.25]])
  run = lambda m: jbai.rollout(jax.random.key(3), "bernoulli", m, jbai.rules.fws_top_m(2), 0.1,
                               8, problem=problems.top_m(2), max_steps=20_000, scores=False)
  with jax.enable_x64(False):
    both = jax.jit(jax.vmap(run))(means)
    for i in range(2):
      alone = jax.jit(run)(means[i])
      for field in ("tau", "answer", "counts"):
        np.testing.assert_array_equal(getattr(both, field)[i], getattr(alone, field))


def test_thresholding_at_a_budget_scores_its_answer_sets_and_rollout_gives_the_same():
  name, means, level = "gaussian", [1.0, 0.7, 0.35, 0.1], 0.5
  problem, key = problems.above(level), jax.random.key(5)
  res = jbai.budget(key, name, means, jbai.rules.apt(level), budget=200, n_trials=32,
                    checkpoints=[20, 100], problem=problem)
  truth = np.asarray(means) > level
  wrong = (res.recommendation != truth).any(-1)                              # [n, C]
  np.testing.assert_array_equal(res.error, wrong.mean(0))
  far = np.where(res.recommendation != truth, np.abs(np.asarray(means) - level), 0).max(-1)
  np.testing.assert_allclose(res.regret, far.mean(0), rtol=1e-6)
  assert res.error[-1] < res.error[0] < 1
  pure = jbai.rollout(key, name, means, jbai.rules.apt(level), None, 32, budget=200,
                      checkpoints=[20, 100], problem=problem, scores=False)
  np.testing.assert_array_equal(np.asarray(pure.answer), res.recommendation)
  np.testing.assert_array_equal(np.asarray(pure.correct), ~wrong)
  with pytest.raises(ValueError, match="samples for the best arm; it cannot answer"):
    jbai.budget(key, name, means, "tcb", budget=200, n_trials=4, problem=problem)


@pytest.mark.slow  # the fast tier's: test_thresholding_at_a_budget_... (rollout, problem=)
def test_the_gradients_of_a_question_at_a_budget_are_jax_grads_with_the_regrets_path():
  """`jax.grad` of the error and of the regret at a budget, for the top 2, are the
  estimate's fields, and the regret is the top 2's sum minus the answer's."""
  means, problem = jnp.array([1.0, 0.8, 0.5, 0.2]), problems.top_m(2)
  est = lambda m: jbai.estimate(jax.random.key(6), "gaussian", m, "uniform", None, 64,
                                budget=40, problem=problem)
  e = est(means)
  both = jax.grad(lambda m: (lambda x: x.error_rate + 10 * x.regret)(est(m)))(means)
  np.testing.assert_allclose(both, e.grad_error_rate["means"] + 10 * e.grad_regret["means"],
                             rtol=1e-5, atol=1e-7)
  sets = np.asarray(e.trials.answer)                                     # [n, K]
  assert sets.sum(-1).tolist() == [2] * 64 and 0 < float(e.error_rate) < 1
  np.testing.assert_allclose(float(e.regret), np.mean(
      1.8 - np.where(sets, np.asarray(means), 0).sum(-1)), rtol=1e-5)


def test_jbai_run_answers_a_question_at_a_budget(capsys):
  """`jbai run --budget --top 2`'s rows are jbai.budget's."""
  means = [1.0, 0.8, 0.5, 0.2]
  assert cli.main(["run", "--means", ",".join(map(str, means)), "--top", "2", "--rule",
                   "uniform", "--budget", "30,60", "--trials", "64", "--seed", "1",
                   "--json"]) == 0
  rows = json.loads(capsys.readouterr().out)["rows"]
  res = jbai.budget(jax.random.key(1), "gaussian", means, "uniform", budget=60, n_trials=64,
                    checkpoints=[30], problem=problems.top_m(2))
  assert [r["budget"] for r in rows] == [30, 60]
  np.testing.assert_allclose([r["error_rate"] for r in rows], res.error, rtol=1e-12)
  np.testing.assert_allclose([r["simple_regret"] for r in rows], res.regret, rtol=1e-6)


@pytest.mark.slow  # the command line's gradients of a question (the library's: above)
def test_jbai_grad_answers_a_question_beside_its_t_stars_gradient(capsys):
  """`jbai grad --top 2` reports E[tau] to the question's stop next to its
  T* log(1/delta) and that one's gradient through the pair solver."""
  means = [1.0, 0.8, 0.5, 0.2]
  assert cli.main(["grad", "--means", ",".join(map(str, means)), "--top", "2", "--rule",
                   "uniform", "--delta", "0.1", "--trials", "32", "--json"]) == 0
  (rec,) = [json.loads(capsys.readouterr().out)]
  assert rec["question"] == "top-m(m=2)" and rec["hit_cap"] == 0
  problem = problems.top_m(2)
  with jax.enable_x64(True):
    t_star = lambda m: problems.oracle(problem, "gaussian", m).t_star
    x = jnp.asarray(means, jnp.float64)
    np.testing.assert_allclose(rec["t_star_log"], float(t_star(x)) * np.log(10), rtol=1e-9)
    np.testing.assert_allclose(rec["grad_t_star_log"], np.asarray(jax.grad(t_star)(x))
                               * np.log(10), rtol=1e-6, atol=1e-9)


HARD_ABOVE = {"bernoulli": ([0.62, 0.55, 0.46, 0.3], 0.5),
              "gaussian": ([1.0, 0.7, 0.35, 0.1], 0.5)}


@pytest.mark.slow
@pytest.mark.parametrize("family_name", sorted(HARD_ABOVE))
@pytest.mark.parametrize("rule_name", ["apt", "tas-above", "uniform"])
def test_thresholding_rules_are_delta_correct(rule_name, family_name):
  """P(error) <= delta = 0.1 for the thresholding GLLR stop with gk16, tested
  one-sided at 99% over 500 or 2,000 trials, none at the cap
  (`helpers.assert_delta_correct`), and the Wilson 95% interval of the error rate
  starts below delta. In float32."""
  means, level = HARD_ABOVE[family_name]
  delta = 0.1
  with jax.enable_x64(False):
    res = assert_delta_correct(lambda n: jbai.simulate(
        jax.random.key(11), family_name, means, jbai.rules.get(rule_name, level=level),
        delta, n, problem=problems.above(level), max_steps=1_000_000), delta)
  assert res.summary[0]["error_ci95"][0] < delta


@pytest.mark.slow
@pytest.mark.parametrize("rule_name", ["ebtc-top-m", "lucb-top-m", "tas-top-m", "fws-top-m",
                                       "uniform"])
def test_top_m_rules_are_delta_correct(rule_name):
  """P(error) <= delta = 0.1, tested one-sided at 99% over 500 or 2,000 trials, none
  at the cap (`helpers.assert_delta_correct`); 125 or 500 for lucb-top-m, whose own
  stop (LUCB's) takes 6 to 7 times as many rewards as the GLLR."""
  n, delta = (500 if rule_name == "lucb-top-m" else 2000), 0.1
  with jax.enable_x64(False):
    assert_delta_correct(lambda n: jbai.simulate(
        jax.random.key(12), "bernoulli", [0.6, 0.5, 0.45, 0.3, 0.2],
        jbai.rules.get(rule_name, m=2), delta, n, problem=problems.top_m(2)), delta, n=n)


@pytest.mark.slow
@pytest.mark.parametrize("family_name", sorted(HARD_ABOVE))
def test_track_and_stop_for_thresholding_reaches_the_ratio_1(family_name):
  """E[tau] / (T* log(1/delta)) at delta = 1e-10: within [0.9, 1.3] (gk16's
  log(1 + log t) and the forced exploration keep it above 1 at finite delta),
  200 trials; the ratio's 95% interval half-width is about 0.02."""
  means, level = HARD_ABOVE[family_name]
  res = jbai.simulate(jax.random.key(13), family_name, means, jbai.rules.tas_above(level),
                      1e-10, 200, problem=problems.above(level))
  assert res.correct.all()
  assert 0.9 <= res.summary[0]["ratio"] <= 1.3, res.summary[0]["ratio"]


TOP_2 = {"bernoulli": [0.6, 0.5, 0.45, 0.3, 0.2], "gaussian": [1.0, 0.8, 0.5, 0.2]}


@pytest.mark.slow
@pytest.mark.parametrize("family_name", sorted(TOP_2))
def test_track_and_stop_for_top_m_reaches_the_ratio_1(family_name):
  """E[tau] / (T* log(1/delta)) of tas-top-m at delta = 1e-10 for the top 2:
  within [0.9, 1.3], 200 trials (1.12 Bernoulli, 1.06 Gaussian when measured)."""
  res = jbai.simulate(jax.random.key(13), family_name, TOP_2[family_name],
                      jbai.rules.tas_top_m(2), 1e-10, 200, problem=problems.top_m(2))
  assert res.correct.all()
  assert 0.9 <= res.summary[0]["ratio"] <= 1.3, res.summary[0]["ratio"]


# ---------------------------------------------------------------- issue 73: the level's tie,
# the eps-tolerant question, the union bound's pieces, constructors

def test_a_mean_at_the_level_is_above_it_wherever_an_answer_is_read():
  """mu_hat >= tau is "above" (Locatelli et al.'s S_tau): the problem's answer, the
  GLLR stop's empirical answer and a budget's recommendation read one definition."""
  problem, family = problems.above(0.5), families.bernoulli()
  np.testing.assert_array_equal(problem.answer(jnp.array([0.5, 0.49, 0.51])), [True, False, True])
  stats = arm_stats(family, jnp.array([4, 4, 4]), jnp.array([[2.0], [1.0], [3.0]]),
                    jnp.int32(12))
  answer, a, b, value = problems.statistic(problem, family, stats)
  np.testing.assert_array_equal(answer, [True, False, True])
  assert int(a) == int(b) == 0 and float(value) == 0.0  # the tied arm's piece costs 0
  stop = jbai.stops.budget_stop(jbai.rules.base.recommendation(jbai.rules.apt(0.5)), problem)
  top = stop.decide(jax.random.key(0), stop.init(jnp.array([12]), 3), family, stats, ())[0]
  np.testing.assert_array_equal(top, [True, False, True])


def test_the_eps_tolerant_question_costs_scores_and_solves_by_locatellis_loss():
  """above(level, eps): arm a's piece costs w_a kl(mu_a, tau -/+ eps) (0 beyond the
  band), an arm within eps of the level is right either way, the oracle is the
  closed form over those divergences, and eps = 0 is the exact question."""
  family, level, eps = families.gaussian(), 0.5, 0.1
  problem = problems.above(level, eps=eps)
  assert repr(problem) == "above(level=0.5, eps=0.1)" and repr(problems.above(0.5)) == \
      "above(level=0.5)" and problems.above(0.5) == problems.above(0.5, eps=0.0)
  means, w = jnp.array([0.5, 0.58, 0.3, 1.0]), jnp.array([1.0, 2.0, 3.0, 4.0])
  ends = np.array([0.4, 0.4, 0.6, 0.4])  # the band's far end of each arm's answer
  expect = np.asarray(w) * (np.asarray(means) - ends) ** 2 / 2
  np.testing.assert_allclose(problem.costs(family, w, means), expect, rtol=1e-6)
  at = jnp.array([0.5, 0.3, 0.3, 1.0])  # arm 1 answered below, its mean 0.58 short of 0.6
  np.testing.assert_allclose(problem.costs(family, w, means, at)[1], 2.0 * 0.02 ** 2 / 2,
                             rtol=1e-5)
  past = means.at[1].set(0.7)  # arm 1 answered below while its mean is past tau + eps
  assert float(problem.costs(family, w, past, at)[1]) == 0.0
  scored, regret = jbai.problems.judge(np, problem, means[None], jnp.array(
      [[[True, True, False, True], [False, False, False, True], [True, True, True, True]]]))
  scored, regret = scored[0], regret[0]
  np.testing.assert_array_equal(scored, [True, True, False])  # arms 0, 1 within the band
  np.testing.assert_allclose(regret, [0.0, 0.0, 0.2], rtol=1e-6)
  sol = problems.oracle(problem, family, means)
  inverse = 1 / ((np.asarray(means) - ends) ** 2 / 2)
  np.testing.assert_allclose(sol.t_star, inverse.sum(), rtol=1e-5)
  np.testing.assert_allclose(sol.w, inverse / inverse.sum(), rtol=1e-5)
  exact = problems.oracle(problems.above(level), family, [0.55, 0.3, 1.0])
  np.testing.assert_allclose(exact.t_star, sum(1 / ((m - level) ** 2 / 2) for m in
                                               [0.55, 0.3, 1.0]), rtol=1e-5)
  with pytest.raises(ValueError, match=r"the band \[0.0, 1.0\] must lie inside Theta"):
    problems.oracle(problems.above(0.5, eps=0.5), "bernoulli", [0.2, 0.7])


def test_the_union_bound_counts_each_questions_pieces():
  """Problem.pieces: K - 1 for the best arm and an eps-good arm, m (K - m) for the
  top m (100 at K = 20, m = 10), K for thresholding."""
  count = jbai.problems.base.piece_count
  assert count(None, 20) == count(problems.best_arm(), 20) == 19
  assert count(problems.eps_good(0.1), 20) == 19
  assert count(problems.top_m(10), 20) == 100 and count(problems.top_m(1), 20) == 19
  assert count(problems.above(0.5), 20) == count(problems.above(0.5, eps=0.1), 20) == 20


@pytest.mark.parametrize("make, message", [
    (lambda: problems.above("0.5"), "the level must be a number, got '0.5'"),
    (lambda: problems.above(True), "the level must be a number, got True"),
    (lambda: problems.above(0.5, eps="0.1"), "eps (the tolerance around the level) must be a "
                                            "number, got '0.1'"),
    (lambda: problems.above(0.5, eps=-0.1), "must be >= 0, got -0.1"),
    (lambda: problems.eps_good("0.1"), "eps must be a number, got '0.1'"),
    (lambda: problems.top_m("2"), "must be an integer >= 1, got '2'"),
    (lambda: problems.top_m(0), "must be an integer >= 1, got 0"),
    (lambda: jbai.rules.apt(0.5, eps="0.1"), "must be a number, got '0.1'"),
])
def test_the_questions_constructors_refuse_strings_in_one_line(make, message):
  with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
    make()
  assert "\n" not in str(e.value)


def test_apt_answers_the_question_of_its_eps_and_stops_inside_the_band():
  """APT(level, eps) samples for above(level, eps): a run that asks another eps is
  refused; asked its own, the GLLR stop ends on an instance with a mean at the
  level (no exact answer) and its answers are right by the tolerant loss."""
  with pytest.raises(ValueError, match="built for eps = 0.1, but the run asks above"):
    jbai.simulate(jax.random.key(0), "gaussian", [0.5, 1.0], jbai.rules.apt(0.5, 0.1), 0.1, 2,
                  problem=problems.above(0.5))
  with pytest.raises(ValueError, match="built for eps = 0.0, but the run asks above"):
    jbai.simulate(jax.random.key(0), "gaussian", [0.5, 1.0], jbai.rules.apt(0.5), 0.1, 2,
                  problem=problems.above(0.5, eps=0.1))
  res = jbai.simulate(jax.random.key(1), "gaussian", [0.5, 1.0, 0.0], jbai.rules.apt(0.5, 0.25),
                      0.1, 16, problem=problems.above(0.5, eps=0.25), max_steps=100_000)
  assert not res.hit_cap.any() and res.correct.all()
  assert res.answer[:, 1].all() and not res.answer[:, 2].any()


def test_asked_builds_the_tolerant_question_from_above_and_eps():
  assert problems.asked(None, 0.5, eps=0.1) == problems.above(0.5, eps=0.1)
  assert problems.asked(None, 0.5) == problems.above(0.5) and problems.asked(2) == problems.top_m(2)
  with pytest.raises(ValueError, match="eps = 0.1 is a tolerance around the level of --above"):
    problems.asked(2, None, ("--top", "--above"), eps=0.1)
