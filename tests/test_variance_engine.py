"""Gaussian arms with a sigma per arm in the engine, the rules and the command line
(jbai.variance.families; issue 76)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbai
from jbai import cli, variance
from jbai.families.base import draw
from jbai.variance import families as vf

from helpers import assert_delta_correct

MEANS = [1.0, 0.8, 0.5, 0.3]
SIGMA = (1.0, 0.3, 2.0, 1.0)


def test_equal_sigmas_draw_the_gaussian_family_bits():
  """Per-arm sigma, all equal, draws the rewards of gaussian(sigma) bit for bit; and
  one --sigma value keeps today's family (its trials unchanged)."""
  het, gauss = vf.known_sigma((2.0,) * 4), jbai.families.gaussian(2.0)
  means = jnp.asarray(MEANS)
  for n in range(8):
    key, arm = jax.random.key(n), jnp.asarray(n % 4)
    assert np.asarray(draw(het, key, means, arm)) == np.asarray(draw(gauss, key, means, arm))
  args = cli.build_parser().parse_args(["run", "--means", "1,0.5", "--sigma", "2"])
  assert cli.plan.family_from_args(args) == gauss


def test_hook_costs_are_jbai_variance_costs():
  """The families' pair_costs hooks give jbai.variance's costs: known sigma, and the
  EV-GLR and unknown-variance GLR of a trial's statistics (sum x, sum x^2, n)."""
  w, means = jnp.asarray([5.0, 3.0, 4.0, 2.0]), jnp.asarray(MEANS)
  got = vf.known_sigma(SIGMA).pair_costs(w, means, jnp.asarray(0), None)
  want = variance.pair_costs("known", w, means, jnp.asarray(SIGMA) ** 2, 0)
  np.testing.assert_allclose(got, want, rtol=1e-6)
  rewards = [np.array([1.0, 2.5, 0.2]), np.array([0.1, 0.9]), np.array([0.3]),
             np.array([0.0, 0.4, -0.2, 0.7])]
  counts = jnp.asarray([len(r) for r in rewards])
  two = jnp.asarray([[r.sum(), (r * r).sum()] for r in rewards])
  three = jnp.concatenate([two, counts[:, None] * 1.0], axis=1)
  for glr, ref in (("ev", variance.ev_glr), ("uv", variance.uv_glr)):
    z, leader = ref(counts, two)
    mean = two[:, 0] / counts
    got = vf.unknown_sigma(SIGMA, glr).pair_costs(counts * 1.0, mean, leader, three)
    np.testing.assert_allclose(got, z, rtol=1e-6)
    assert np.isfinite(got[np.arange(4) != leader]).all()
    assert got[2] == 0  # one reward: no variance, no evidence


@pytest.mark.parametrize("model", ["het", "ev"])
def test_tcb_stops_and_answers(model):
  """TCB on per-arm sigma (kk) and on unknown variances (ev; uv in the slow test,
  whose program compiles in about 12 s): every trial stops before the cap with the
  best arm, on an easy instance."""
  means = [1.0, 0.0, -0.5]
  family, threshold = {"het": (vf.known_sigma((1.0, 0.3, 2.0)), "kk"),
                       "uv": (vf.unknown_sigma((1.0, 0.3, 2.0), "uv"), "uv"),
                       "ev": (vf.unknown_sigma((1.0, 0.3, 2.0), "ev"), "ev")}[model]
  res = jbai.simulate(jax.random.key(1), family, means, "tcb", 0.1, 8, threshold=threshold,
                      max_steps=20_000)
  assert not np.any(res.hit_cap) and np.all(res.correct)
  assert np.all(np.asarray(res.tau) >= 2 * len(means))  # two rewards of each arm first


def test_which_rules_trace_on_which_model():
  """Found by tracing, nothing compiled: Track-and-Stop and best challenger run on
  known per-arm sigma through the model's oracle; TCB, ITCB, EB-TC and EB-TCI on
  both; on unknown variances an oracle rule is refused by name, a KL rule on both."""
  from jbai.core.inputs import rule_refusal
  het, uv = vf.known_sigma(SIGMA), vf.unknown_sigma(SIGMA, "uv")
  for name in ("tcb", "itcb", "ebtc", "ebtci"):
    assert rule_refusal(het, jbai.rules.get(name), 4) is None
    assert rule_refusal(uv, jbai.rules.get(name), 4) is None
  for name in ("tas-c", "tas-d", "best-challenger"):
    assert rule_refusal(het, jbai.rules.get(name), 4) is None
    assert "unknown-variance" in rule_refusal(uv, jbai.rules.get(name), 4)
  assert "no KL" in rule_refusal(het, jbai.rules.get("kl-lucb"), 4)


def test_rules_that_cannot_run_are_refused():
  uv = vf.unknown_sigma(SIGMA, "uv")
  with pytest.raises(ValueError, match="'tas-c' cannot run on the unknown-variance"):
    jbai.simulate(jax.random.key(0), uv, MEANS, "tas-c", 0.1, 2, threshold="uv")
  with pytest.raises(ValueError, match="no KL in the mean alone"):
    jbai.simulate(jax.random.key(0), vf.known_sigma(SIGMA), MEANS, "kl-lucb", 0.1, 2)
  with pytest.raises(ValueError, match="threshold 'uv' calibrates"):
    jbai.simulate(jax.random.key(0), vf.unknown_sigma(SIGMA, "ev"), MEANS, "tcb", 0.1, 2,
                  threshold="uv")


@pytest.mark.parametrize("argv, message", [
    (["--sigma", "1,0.3,2"], "sigma has 3 entries for 4 arms"),
    (["--sigma", "1,0,2,1"], "sigma must be finite and > 0, got 0.0"),
    (["--sigma", "1,0.3,2,1", "--family", "bernoulli"], "is for Gaussian arms"),
    (["--unknown-variance", "--rule", "tas-c"], "'tas-c' cannot run on the unknown-variance"),
    (["--glr", "ev"], "give --unknown-variance too"),
    (["--unknown-variance", "--top", "2"], "not built for it yet"),
])
def test_cli_refusals_are_one_line_exit_2(capsys, argv, message):
  code = cli.main(["run", "--means", "1,0.8,0.5,0.3", "--trials", "2"] + argv)
  err = capsys.readouterr().err
  assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_cli_oracle_prints_both_complexities(capsys):
  code = cli.main(["oracle", "--means", "1,0.8,0.5,0.3", "--sigma", "1,0.3,2,1",
                   "--unknown-variance", "--delta", "0.1", "--json"])
  import json
  out = json.loads(capsys.readouterr().out)
  ratio, uv, known = variance.cost_of_not_knowing(MEANS, SIGMA)
  assert code == 0 and math.isclose(out["t_star"], float(uv.t_star), rel_tol=1e-6)
  assert math.isclose(out["t_star_known"], float(known.t_star), rel_tol=1e-6)
  assert math.isclose(out["ratio_uv_known"], float(ratio), rel_tol=1e-6) and out["ratio_uv_known"] > 1


def test_cli_run_defaults_to_the_models_threshold(capsys):
  args = cli.build_parser().parse_args(["run", "--means", "1,0.5", "--unknown-variance",
                                        "--glr", "ev"])
  plan = cli.plan_command(args)
  assert plan.family.name == "gaussian-ev" and plan.runs[0].threshold.name == "ev"


@pytest.mark.slow
@pytest.mark.parametrize("glr", ["uv", "ev"])
def test_tcb_with_an_unknown_variance_glr_is_delta_correct_on_unequal_variances(glr):
  """P(error) <= delta = 0.1 for TCB with the unknown-variance GLR (or the EV-GLR)
  and its threshold, sigma from 0.3 to 2 (ratio of variances 44). One-sided
  binomial test at level 0.01 (`assert_delta_correct`: 500 trials settle it when
  the errors are few). Its mean tau is above the lower bound T*_uv kl(delta, 1 - delta)
  of any delta-correct rule that does not know the variances; printed against
  T*_known log(1/delta) and T*_uv log(1/delta)."""
  family = vf.unknown_sigma(SIGMA, glr)
  res = assert_delta_correct(
      lambda n: jbai.simulate(jax.random.key(7), family, MEANS, "tcb", 0.1, n,
                              threshold=glr, max_steps=200_000), 0.1)
  ratio, uv, known = variance.cost_of_not_knowing(MEANS, SIGMA)
  mean_tau = float(np.mean(res.tau))
  kl = 0.8 * math.log(9)  # kl(0.1, 0.9)
  assert mean_tau > float(uv.t_star) * kl
  print(f"{glr}: errors {int(np.sum(~np.asarray(res.correct)))} in {len(res.tau)}; "
        f"mean tau {mean_tau:.0f}; T*_known log(1/delta) {float(known.t_star) * math.log(10):.0f}; "
        f"T*_uv log(1/delta) {float(uv.t_star) * math.log(10):.0f}")
