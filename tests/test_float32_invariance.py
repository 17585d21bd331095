"""Same key, same trial in float32, JAX's default dtype (the suite runs in float64):
a trial's results do not depend on the pool's width, the chunk, the number of
devices or the shape of the means (docs/design/ties.md has the table of every rule
and family; `experiments/float32_invariance.py` prints it)."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import jax
import numpy as np
import pytest

import jbai
from jbai.core.inputs import rule_refusal

from helpers import suite_cache_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTANCES = {"bernoulli": [0.5, 0.45, 0.43, 0.4], "poisson": [1.0, 0.9, 0.86, 0.8]}
CAP = 20_000  # trials past it are compared at the cap (always-top's run to 10^6)


def outcomes(result) -> np.ndarray:
  """[trials, 2 D] the stopping times and answers of a result (of one instance,
  given as [K] or [1, K])."""
  n = int(np.prod(np.shape(result.counts)[:-1]))
  return np.concatenate([np.reshape(result.tau, (n, -1)), np.reshape(result.answer, (n, -1))],
                        axis=1)


def differing(a, b) -> int:
  return int((outcomes(a) != outcomes(b)).any(-1).sum())


def trials(family: str, rule: str, lanes: int):
  """The run that the checks of every rule's widths and devices compare: 16
  trials on the family's instance, delta = 0.1, in float32, on `lanes` lanes of
  one device (the subprocess of two devices runs the same call)."""
  with jax.enable_x64(False):
    return jbai.simulate(jax.random.key(5), family, INSTANCES[family], rule, 0.1, 16,
                         lanes=lanes, max_steps=CAP, shrink=None)


@pytest.mark.parametrize("other", ["8 lanes", pytest.param("[1, K]", marks=pytest.mark.slow)])
def test_the_issues_bernoulli_trials_do_not_depend_on_the_pool(other):
  """TCB on Bernoulli arms, two levels of delta: the default pool (16 lanes, then
  its tail on 4) and 8 lanes (or the means as [1, K]) run the same 60 trials (57
  of them differed between 15 and 8 lanes when the KL's terms cancelled in
  float32; 1 lane, and two devices of 32 lanes: the slow tier, below)."""
  means = INSTANCES["bernoulli"]
  with jax.enable_x64(False):
    run = lambda m=means, **kw: jbai.simulate(jax.random.key(11), "bernoulli", m, "tcb",
                                              [0.1, 0.01], 60, threshold="gk16", **kw)
    assert differing(run(lanes=8) if other == "8 lanes" else run([means]), run()) == 0


def _rules():
  """The rules that stop (those run to a budget: tests/test_budget.py)."""
  return [name for name, factory in jbai.rules.RULES.items() if factory().budget is None]


@pytest.mark.slow  # every rule on two families, two widths: a seventh of the slow tier (testing.md)
@pytest.mark.parametrize("family", sorted(INSTANCES))
@pytest.mark.parametrize("rule", _rules())
def test_every_rules_trials_are_the_same_on_one_lane_and_on_eight(family, rule):
  """One lane against eight: XLA compiles a program over one lane without its lane
  axis, the program that rounds otherwise if anything does (a pool runs at least
  two lanes: `jbai.core.pool.width`); 8 lanes against two devices of 32: the
  sitting of docs/design/ties.md, and below. A rule that refuses the family (its
  bounds need sub-Gaussian rewards) is skipped."""
  refusal = rule_refusal(jbai.families.get(family), jbai.rules.get(rule),
                         len(INSTANCES[family]))
  if refusal:
    pytest.skip(refusal)
  assert differing(trials(family, rule, 1), trials(family, rule, 8)) == 0


# The rules of another question, with it (docs/guide/beyond.md): Bernoulli arms.
QUESTIONS = {"ebtc-top-m": ("m", 2), "lucb-top-m": ("m", 2), "tas-top-m": ("m", 2),
             "fws-top-m": ("m", 2), "apt": ("level", 0.6), "tas-above": ("level", 0.6)}


@pytest.mark.slow  # six rules, two widths: about 40 s
@pytest.mark.parametrize("rule", sorted(QUESTIONS))
def test_a_question_rules_trials_are_the_same_on_one_lane_and_on_eight(rule):
  """As above for the rules of the top m and of thresholding, with their question
  (16 trials, delta = 0.1)."""
  key, value = QUESTIONS[rule]
  problem = jbai.problems.top_m(value) if key == "m" else jbai.problems.above(value)
  with jax.enable_x64(False):
    run = lambda lanes: jbai.simulate(jax.random.key(5), "bernoulli", [0.7, 0.55, 0.45, 0.3, 0.2],
                                      jbai.rules.get(rule, **{key: value}), 0.1, 16,
                                      lanes=lanes, max_steps=CAP, shrink=None, problem=problem)
    assert differing(run(1), run(8)) == 0


@pytest.mark.slow  # 64 trials, two widths, two dtypes: about 60 s
@pytest.mark.parametrize("x64", [False, True], ids=["float32", "float64"])
def test_track_and_stop_for_top_m_reads_a_tie_across_the_edge_off_the_means(x64):
  """Bernoulli means tie often (k / n = k' / n'), and at a tie across the top m's
  edge the warm solver's output turned on the last bit of a weighted mean: 18 of
  256 float64 trials (8 of 256 in float32) differed between 1 lane and 8 before
  the warm solver read the tie off the means (docs/design/float32.md)."""
  with jax.enable_x64(x64):
    run = lambda lanes: jbai.simulate(jax.random.key(6), "bernoulli", [0.7, 0.55, 0.45, 0.3, 0.2],
                                      jbai.rules.get("tas-top-m", m=2), 0.1, 64, lanes=lanes,
                                      max_steps=CAP, shrink=None, problem=jbai.problems.top_m(2))
    assert differing(run(1), run(8)) == 0


TWO_DEVICES = """
import json, sys
import jax
import jbai
jbai.use_cpu_cores(2)
rules, family, means, cap, cache = json.loads(sys.argv[1])
jbai.enable_compilation_cache(cache, max_bytes=-1)  # the suite's (conftest.py)
out = {}
for rule in rules:
  two = jbai.simulate(jax.random.key(5), family, means, rule, 0.1, 16, lanes=32,
                      max_steps=cap, shrink=None)
  out[rule] = {k: getattr(two, k).tolist() for k in ("tau", "answer", "counts")}
print(json.dumps(out))
"""


@pytest.mark.slow  # a subprocess with two CPU devices
@pytest.mark.parametrize("family", sorted(INSTANCES))
def test_two_devices_of_a_wide_pool_give_the_trials_of_one_narrow_pool(family):
  """The paper's rules and those whose decisions read an iterated oracle or
  posterior draws, on two devices of 32 lanes each (a pool wider than 8 lanes, and
  sharded), against 8 lanes of one device: the trials of the test above."""
  rules = ["tcb", "itcb", "tas-c", "tas-d", "t3c", "ttts", "fws", "ebtc-eps"]
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  for name in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS", "PJRT_NPROC", "JAX_ENABLE_X64"):
    env.pop(name, None)
  proc = subprocess.run([sys.executable, "-c", TWO_DEVICES,
                         json.dumps([rules, family, INSTANCES[family], CAP, suite_cache_dir()])],
                        env=env, capture_output=True, text=True, check=True)
  two = json.loads(proc.stdout.strip().splitlines()[-1])
  for rule in rules:
    assert differing(SimpleNamespace(**two[rule]), trials(family, rule, 8)) == 0, rule
