"""eps-good answers: the eps-GLLR's costs, its stop in the engine, and delta-PAC."""

import jax
import numpy as np
import pytest

import jbai
from jbai import families
from jbai.core import records
from jbai import eps_transport as transport_lib
from jbai.stops import eps_good as eps_lib

from helpers import assert_delta_correct

# Two arms within eps = 0.1 of the best: eps-good answers {0, 1}; exact BAI must
# tell 1.0 from 0.95 apart, eps-good stopping need not.
MEANS = [1.0, 0.95, 0.5, 0.4]
EPS = 0.1


@pytest.mark.parametrize("args", [(10.0, 1.0, 5.0, 0.4, 0.1), (3.0, 0.2, 7.0, 0.1, 0.0),
                                  (3.0, 0.2, 7.0, 0.3, 0.2), (40.0, 0.5, 2.0, 0.45, 0.05)])
def test_gaussian_closed_form_agrees_with_golden_section(args):
  fam = families.gaussian(sigma=0.7)
  with jax.enable_x64(True):
    closed, golden = map(float, jax.jit(lambda *args: (
        transport_lib.eps_cost(fam, *args, method="closed"),
        transport_lib.eps_cost(fam, *args, method="golden")))(*args))
  assert closed > 0
  assert golden == pytest.approx(closed, rel=1e-9)


def test_eps_cost_zero_is_the_transport_cost_and_grows_with_eps():
  from jbai.transport import transport_cost
  fam = families.bernoulli()
  with jax.enable_x64(True):
    zero, exact, *costs, empty = map(float, jax.jit(lambda: (
        transport_lib.eps_cost(fam, 30.0, 0.6, 20.0, 0.4, 0.0),
        transport_cost(fam, 30.0, 0.6, 20.0, 0.4).value,
        *(transport_lib.eps_cost(fam, 30.0, 0.6, 20.0, 0.4, e) for e in (0.05, 0.1)),
        # No pair of Bernoulli means is 1.5 apart: every arm is eps-good.
        transport_lib.eps_cost(fam, 30.0, 0.6, 20.0, 0.4, 1.5)))())
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
    x = jnp.linspace(max(m_b - eps, fam.lo), min(m_a, fam.hi - eps), 200_001)
    golden, grid = map(float, jax.jit(lambda x, n_a, m_a, n_b, m_b, eps: (
        transport_lib.eps_cost(fam, n_a, m_a, n_b, m_b, eps),
        jnp.min(n_a * fam.kl(m_a, x) + n_b * fam.kl(m_b, x + eps))))(x, *args))
  assert golden > 0
  assert golden <= grid + 1e-9 and golden == pytest.approx(grid, rel=1e-6)


# ------------------------------------------------------------ bisection against SciPy

def _np_kl(name):
  """kl(m, x) in numpy (no clipping), and a bound on its rounding in ulps: the sum of
  the magnitudes of its terms, and for Bernoulli arms (1 - m) / (1 - x), the
  condition of log(1 - x) where 1 - x is rounded: (kl, size)."""
  from scipy.special import xlogy
  if name == "bernoulli":
    terms = lambda p, q: (xlogy(p, p), -xlogy(p, q), xlogy(1 - p, 1 - p), -xlogy(1 - p, 1 - q))
    extra = lambda p, q: (1 - p) / (1 - q)
  elif name == "poisson":
    terms, extra = (lambda m, q: (xlogy(m, m), -xlogy(m, q), -m, q)), (lambda m, q: 0.0)
  else:  # exponential
    terms, extra = (lambda m, q: (m / q, -1.0, -np.log(m / q))), (lambda m, q: 0.0)
  return (lambda m, q: sum(terms(m, q))), (
      lambda m, q: sum(np.abs(t) for t in terms(m, q)) + extra(m, q))


def _eps_draws(name, n, seed):
  """[n] random (n_a, m_a, n_b, m_b, eps) with m_a - m_b + eps > 0 over Theta: counts
  log-uniform in [1, 1e6], a tenth of the means at the ends of Theta (Poisson: 0
  and 50), a tenth of the eps within 1e-3 of hi - lo (Bernoulli; tiny brackets)
  and a tenth 0."""
  rng = np.random.default_rng(seed)
  fam = families.get(name)
  counts = np.exp(rng.uniform(0, np.log(1e6), (2, n))).round()
  if name == "bernoulli":
    m = rng.uniform(0, 1, (2, n))
    eps = rng.uniform(0, 0.5, n)
    wide = rng.random(n) < 0.1
    eps[wide] = 1 - rng.uniform(1e-6, 1e-3, wide.sum())
  elif name == "poisson":
    m = rng.uniform(0, 50, (2, n))
    eps = rng.uniform(0, 5, n)
  else:
    m = np.exp(rng.uniform(np.log(fam.lo), np.log(fam.hi), (2, n)))
    eps = np.exp(rng.uniform(np.log(1e-4), np.log(1e2), n))
  ends = rng.random((2, n)) < 0.1
  m[ends] = rng.choice([fam.lo, min(fam.hi, 50.0 if name == "poisson" else fam.hi)], ends.sum())
  eps[rng.random(n) < 0.1] = 0.0
  m_a, m_b = np.maximum(m[0], m[1]), np.minimum(m[0], m[1])
  keep = m_a - m_b + eps > 1e-3 * np.maximum(m_a, 1e-2)
  return tuple(v[keep] for v in (counts[0], m_a, counts[1], m_b, eps))


def _scipy_eps_costs(name, n_a, m_a, n_b, m_b, eps):
  """The eps cost by SciPy's bounded Brent search over the bracket (scaled to
  [0, 1]), and the objective at the bracket's ends (where Brent never looks)."""
  from scipy import optimize
  fam, (kl, _) = families.get(name), _np_kl(name)
  out = []
  with np.errstate(all="ignore"):
    for na, ma, nb, mb, e in zip(n_a, m_a, n_b, m_b, eps):
      f = lambda x: na * kl(ma, x) + nb * kl(mb, x + e)
      lo, hi = max(mb - e, fam.lo), min(ma, fam.hi - e)
      res = optimize.minimize_scalar(lambda t: f(lo + t * (hi - lo)), bounds=(0.0, 1.0),
                                     method="bounded", options={"xatol": 1e-14})
      out.append(np.nanmin([res.fun, f(lo), f(hi)]))
  return np.array(out)


def _rounding(name, n_a, m_a, n_b, m_b, eps, x, dtype):
  """A bound on the rounding of the objective at x in `dtype`: 4 ulps of its size
  (`_np_kl`)."""
  _, size = _np_kl(name)
  with np.errstate(all="ignore"):
    total = n_a * size(m_a, x) + n_b * size(m_b, x + eps)
  return 4 * np.finfo(dtype).eps * np.where(np.isfinite(total), total, 0.0)


def _assert_close(value, others, tol):
  """|value - other| <= tol for each of `others`, elementwise."""
  for other in others:
    assert np.all(np.abs(value - other) <= tol), np.max(np.abs(value - other) / tol)


@pytest.mark.parametrize("name", ["bernoulli", "poisson", "exponential"])
def test_bisection_agrees_with_scipy_and_golden_section_in_float64(name):
  """A few hundred random pairs: the bisection's cost (the default) within 1e-9
  relative (1e-12 absolute, plus the objective's own rounding) of SciPy's bounded
  minimiser and of golden section, and never above either by more."""
  draws = _eps_draws(name, 300, seed=1)
  fam = families.get(name)
  with jax.enable_x64(True):
    bisect, golden, (lo, hi) = jax.jit(lambda *draws: (
        transport_lib.eps_transport(fam, *draws), transport_lib.eps_cost(fam, *draws, method="golden"),
        transport_lib.eps_bracket(fam, draws[1], draws[3], draws[4])))(*draws)
  value, x, golden = np.asarray(bisect.value), np.asarray(bisect.x), np.asarray(golden)
  ref = _scipy_eps_costs(name, *draws)
  tol = 1e-9 * np.abs(ref) + 1e-12 + _rounding(name, *draws, x, np.float64)
  assert len(ref) > 200 and np.isfinite(value).all() and (value > 0).all()
  _assert_close(value, (ref, golden), tol)
  assert np.all((x >= lo) & (x <= hi))


@pytest.mark.parametrize("name", ["bernoulli", "poisson", "exponential"])
def test_bisection_in_float32_agrees_with_float64(name):
  """float32: the cost within 1e-5 relative of float64's at the same (float32)
  inputs, beyond the float32 rounding of the objective's terms."""
  draws = tuple(np.float32(v).astype(np.float64) for v in _eps_draws(name, 300, seed=2))
  fam = families.get(name)
  transport = jax.jit(lambda *draws: transport_lib.eps_transport(fam, *draws))
  with jax.enable_x64(True):
    exact = transport(*draws)
  with jax.enable_x64(False):
    single = transport(*(np.float32(v) for v in draws))
  assert single.value.dtype == np.float32
  v64, v32 = np.asarray(exact.value), np.asarray(single.value).astype(np.float64)
  tol = 1e-5 * v64 + _rounding(name, *draws, np.asarray(exact.x), np.float32)
  _assert_close(v32, (v64,), tol)


def test_bisection_at_the_ends_of_theta():
  """Bernoulli pairs at the ends of [0, 1]: m_b = 0 and m_a = 1 with eps up to a
  hair below 1 (the bracket [0, 1 - eps] where both divergences have infinite
  slopes at its ends), counts 1 to 1e6; the empty bracket (+inf) and m_b >= m_a +
  eps (0) as with golden section."""
  fam = families.bernoulli()
  n_a = np.array([1.0, 1e6, 1.0, 1e6, 1.0, 1e6, 30.0, 1.0, 5.0])
  m_a = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.3, 1.0, 1e-6, 0.0])
  n_b = np.array([1e6, 1.0, 1.0, 1e6, 1.0, 1e6, 30.0, 1e6, 5.0])
  m_b = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
  eps = np.array([1 - 1e-9, 1 - 1e-9, 1 - 1e-6, 1 - 1e-3, 0.5, 0.0, 0.01, 0.0, 0.0])
  draws = (n_a, m_a, n_b, m_b, eps)
  with jax.enable_x64(True):
    bisect, golden, empty = jax.jit(lambda *draws: (
        transport_lib.eps_transport(fam, *draws), transport_lib.eps_cost(fam, *draws, method="golden"),
        transport_lib.eps_cost(fam, 3.0, 0.6, 2.0, 0.4, np.array([1.0 + 1e-9, 1.5]))))(*draws)
    golden = np.asarray(golden)
  value, ref = np.asarray(bisect.value), _scipy_eps_costs("bernoulli", *draws)
  assert value[-1] == 0.0 and golden[-1] == 0.0 and (value[:-1] > 0).all()
  tol = 1e-9 * ref + 1e-12 + _rounding("bernoulli", *draws, np.asarray(bisect.x), np.float64)
  _assert_close(value, (ref, golden), tol)
  assert np.all(np.asarray(empty) == np.inf)


def test_bisection_on_a_general_family():
  """logcosh (a general family: kl from a table, its slope by autodiff) against
  golden section and SciPy on the family's own kl."""
  from scipy import optimize
  fam = families.logcosh()
  rng = np.random.default_rng(3)
  n = 40
  m = rng.uniform(-4, 4, (2, n))
  draws = (np.exp(rng.uniform(0, np.log(1e6), n)).round(), m.max(0),
           np.exp(rng.uniform(0, np.log(1e6), n)).round(), m.min(0), rng.uniform(0, 1, n))
  with jax.enable_x64(True):
    bisect, golden = map(np.asarray, jax.jit(lambda *draws: (
        transport_lib.eps_cost(fam, *draws), transport_lib.eps_cost(fam, *draws, method="golden")))(*draws))
    f = jax.jit(lambda x, na, ma, nb, mb, e: na * fam.kl(ma, x) + nb * fam.kl(mb, x + e))
    ref = []
    for na, ma, nb, mb, e in zip(*draws):
      lo, hi = max(mb - e, fam.lo), min(ma, fam.hi - e)
      res = optimize.minimize_scalar(lambda t: float(f(lo + t * (hi - lo), na, ma, nb, mb, e)),
                                     bounds=(0.0, 1.0), method="bounded",
                                     options={"xatol": 1e-14})
      ref.append(res.fun)
  np.testing.assert_allclose(bisect, ref, rtol=1e-9, atol=1e-12)
  np.testing.assert_allclose(bisect, golden, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, args", [("bernoulli", (30.0, 0.6, 20.0, 0.4, 0.1)),
                                        ("weibull", (12.0, 3.0, 7.0, 1.5, 0.5)),
                                        ("poisson", (1e4, 999.9, 1.0, 990.0, 0.5))])
def test_bisection_cost_gradients(name, args):
  """The cost's derivatives in (n_a, m_a, n_b, m_b, eps) by autodiff: golden
  section's; where the minimiser is the end hi_Theta - eps of the bracket (Poisson
  means near hi = 1e3), d/d eps = -n_a d/dx kl(m_a, x) there."""
  fam = families.get(name)
  with jax.enable_x64(True):
    grads = {m: np.array(jax.grad(lambda *a: transport_lib.eps_cost(fam, *a, method=m),
                                  argnums=(0, 1, 2, 3, 4))(*args))
             for m in ("bisect", "golden")}
    x = float(transport_lib.eps_transport(fam, *args).x)
  np.testing.assert_allclose(grads["bisect"], grads["golden"], rtol=1e-6)
  if name == "poisson":
    n_a, m_a, eps = args[0], args[1], args[4]
    assert x == fam.hi - eps
    assert grads["bisect"][4] == pytest.approx(-n_a * (1 - m_a / x), rel=1e-12)


def test_bisect_root_keeps_to_the_bracket():
  """`bisect_root`: the crossing to the dtype's precision, an end where g keeps one
  sign, never evaluates g at the ends (here infinite there), NaN counts as >= 0."""
  import jax.numpy as jnp
  from jbai.transport import bisect_root
  with jax.enable_x64(True):
    root, ends, nan = jax.jit(lambda: (
        bisect_root(lambda x: 1 / (1 - x) - 2 / x, 0.0, 1.0),  # crossing at 2/3
        bisect_root(lambda x: x - jnp.array([-1.0, 2.0]), jnp.zeros(2), jnp.ones(2)),
        bisect_root(lambda x: jnp.where(x > 0.5, jnp.nan, -1.0), 0.0, 1.0)))()
  assert float(root) == pytest.approx(2 / 3, abs=3e-16)
  assert ends.tolist() == [0.0, 1.0]
  assert float(nan) == pytest.approx(0.5, abs=1e-15)


def test_is_eps_good_and_finish():
  means = np.array([MEANS, MEANS])
  answer = np.array([[0], [1], [2], [-1]])
  good = jbai.problems.is_eps_good(np, np.repeat(means, 2, axis=0), answer, EPS)
  assert good[:, 0].tolist() == [True, True, False, False]
  raw = {"tau": np.array([[5], [6], [7], [0]]), "steps": np.array([5, 6, 7, 9]),
         "answer": answer}
  exact = records.finish(np, dict(raw), means, 2, jbai.problems.best_arm())
  eps = records.finish(np, dict(raw), means, 2, jbai.problems.eps_good(EPS))
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
  """delta = 0.1: the error rate (answers not eps-good) is at most delta, tested
  one-sided at 99% over 500 or 2,000 trials, none at the cap
  (`helpers.assert_delta_correct`); eps-good stopping is at least 3 times faster
  than exact BAI (200 trials)."""
  delta = 0.1
  res = assert_delta_correct(lambda n: jbai.simulate(jax.random.key(11), "gaussian", MEANS,
                                                     "tcb", delta, n, eps_good=EPS), delta)
  s = res.summary[0]
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
