"""Every built-in (family, threshold, rule) combination on the command line: a
refused one names options that work, and no refusal points to another refusal.
Also the delta-correctness of the `kk` threshold on Weibull rewards."""

import functools
import itertools
import re

import jax
import pytest

import jbai
from jbai import cli, families, rules, thresholds
from jbai.linear.family import LINEAR_ONLY

from helpers import assert_delta_correct

MEANS = {"gaussian": "1,0,-1", "bernoulli": "0.7,0.5,0.3", "poisson": "3,2,1",
         "exponential": "3,2,1", "weibull": "3,2,1", "logcosh": "1,0,-1"}
COMBINATIONS = list(itertools.product(families.BUILTIN, thresholds.THRESHOLDS, rules.RULES))


@functools.lru_cache(maxsize=None)
def family(name: str):
  return families.get(name)


def plan(argv):
  """The runs of a `jbai run` command line (validation only: nothing compiles)."""
  args = cli.build_parser().parse_args(argv)
  return cli.plan_runs(args, family(args.family))


def own_stop(rule: str) -> bool:
  """Whether the rule brings its own stop (then --threshold does not apply to it,
  and giving one is refused: tests/test_stops.py)."""
  return jbai.stops.own_stop(rules.get(rule)) is not None


def budget_only(rule: str) -> bool:
  """Whether the rule samples with a fixed budget (it runs with --budget only)."""
  return rules.get(rule).budget is not None


def argv_of(family, threshold, rule, stop=None):
  thr = [] if own_stop(rule) and stop is None else ["--threshold", threshold]
  return ["run", "--family", family, "--means", MEANS[family], "--rule", rule] + thr + \
      (["--stop", stop] if stop else [])


def suggestion(message: str) -> dict:
  """The options of the one `; use --opt value ...` clause that ends a refusal."""
  assert message.count("; use ") == 1, message
  options = message.split("; use ")[1].split()
  assert len(options) % 2 == 0 and options, message
  pairs = dict(zip(options[::2], options[1::2]))
  assert set(pairs) <= {"--rule", "--threshold", "--stop"}, message
  return {k[2:]: v for k, v in pairs.items()}


def refusals():
  """{(family, threshold, rule): (message, suggested (family, threshold, rule))}."""
  out = {}
  for family, threshold, rule in COMBINATIONS:
    try:
      plan(argv_of(family, threshold, rule))
    except ValueError as e:
      alt = suggestion(str(e))
      given = "gk16" if own_stop(rule) else threshold  # the default where none is given
      out[family, threshold, rule] = (str(e), (family, alt.get("threshold", given),
                                               alt.get("rule", rule), alt.get("stop")))
  return out


def test_every_refusal_suggests_a_combination_that_is_accepted():
  found = refusals()
  for (family, threshold, rule), (message, alt) in sorted(found.items()):
    print(f"{family:<12} {threshold:<6} {rule:<10} -> --threshold {alt[1]} --rule {alt[2]}"
          f" --stop {alt[3]}")
    assert "\n" not in message
    assert re.search(rf"'({re.escape(rule)}|{threshold})'", message), message
    assert alt[3] is not None or alt[:3] not in found, \
        f"{(family, threshold, rule)} points to the refused {alt}"
    assert len(plan(argv_of(*alt))) == 1
  # The circle: kk is proven for Weibull rewards (exponential in x^k). The
  # rules that sample with a fixed budget are refused without --budget, everywhere;
  # the linear model's own rules on every built-in family.
  assert not any(k[:2] == ("weibull", "kk") and not own_stop(k[2]) and not budget_only(k[2])
                 and k[2] not in LINEAR_ONLY for k in found)
  assert all(k in found for k in COMBINATIONS if k[2] in LINEAR_ONLY)
  assert all(k in found for k in COMBINATIONS if budget_only(k[2]))
  assert ("weibull", "paper", "tcb") in found
  assert found["weibull", "paper", "tcb"][1] == ("weibull", "kk", "tcb", None)
  # Some combination runs for every family, and every threshold for some family.
  for family in families.BUILTIN:
    assert any(k[0] == family and k not in found for k in COMBINATIONS)
  for threshold in thresholds.THRESHOLDS:
    assert any(k[1] == threshold and k not in found for k in COMBINATIONS)


def test_lists_get_every_refused_entry_replaced():
  with pytest.raises(ValueError) as info:
    plan(["run", "--family", "logcosh", "--means", "1,0", "--rule", "tcb,t3c,ttts",
          "--threshold", "kk,gk16"])
  alt = suggestion(str(info.value))
  assert alt["rule"].split(",")[0] == "tcb" and len(alt["rule"].split(",")) == 3
  runs = plan(["run", "--family", "logcosh", "--means", "1,0", "--rule", alt["rule"],
               "--threshold", alt["threshold"]])
  assert len(runs) == 6


def covering(combos):
  """A few of `combos` that between them use every rule, family and threshold of it.

  Each rule once, on the threshold (then family) used least so far: one compile per
  rule rather than one per combination; then one more for each family or threshold
  that these left out.
  """
  chosen = []
  for rule in sorted({c[2] for c in combos}):
    used = [c[:2] for c in chosen]
    chosen.append(min((c for c in combos if c[2] == rule),
                      key=lambda c: (sum(u[1] == c[1] for u in used),
                                     sum(u[0] == c[0] for u in used), c)))
  for axis in (0, 1):
    for value in sorted({c[axis] for c in combos} - {c[axis] for c in chosen}):
      chosen.append(min(c for c in combos if c[axis] == value))
  return chosen


@pytest.mark.slow
def test_suggested_combinations_run(capsys):
  """Every rule, family and threshold that a refusal suggests runs (3 trials at
  delta = 0.1). Every suggestion is checked to be accepted by the fast test above;
  this one compiles a cover of them."""
  alternatives = sorted({alt for _, alt in refusals().values()})
  cover = covering(alternatives)
  for axis in range(3):
    assert {c[axis] for c in cover} == {a[axis] for a in alternatives}
  for alt in cover:
    code = cli.main(argv_of(*alt) + ["--trials", "3", "--delta", "0.1", "--json",
                                     "--max-steps", "20000"])
    out, err = capsys.readouterr()
    assert code == 0, (alt, err)


@pytest.mark.slow
def test_kk_is_delta_correct_for_weibull():
  """kk on Weibull rewards (shape 2) at delta = 0.1: one-sided exact binomial test
  at 99% over 500 or 2,000 trials, none at the cap (`helpers.assert_delta_correct`)."""
  delta = 0.1
  res = assert_delta_correct(lambda n: jbai.simulate(
      jax.random.key(7), families.weibull(shape=2.0), [1.0, 0.8, 0.6], "tcb", delta=delta,
      n_trials=n, threshold="kk", max_steps=10**6), delta)
  s = res.summary[0]
  print(f"weibull kk delta={delta}: {s['error_rate']} error rate in {s['trials']} trials "
        f"(Wilson 95% CI {s['error_ci95']}), mean tau {s['mean_tau']:.0f}, "
        f"ratio {s['ratio']:.2f}")
  assert s["trials"] == res.tau.size  # the summary counts every trial of the look
