"""The reproduction item gk16 (Garivier & Kaufmann 2016, Table 1): its settings,
a tiny run end to end, resuming, and (slow) every rule at the smoke size."""

import csv
import io
import os

import pytest

from jbai import reproduce
from jbai.reproduce import gk16, specs

TINY = {"instances": specs.GK16_INSTANCES[:1], "rules": ["tcb", "kl-racing"],
        "deltas": [0.1], "trials": 4, "max_steps": 100_000, "seed": 0}


def test_paper_settings_are_the_papers():
  config = specs.spec("gk16", "paper")
  assert [i["means"] for i in config["instances"]] == [[0.5, 0.45, 0.43, 0.4],
                                                       [0.3, 0.21, 0.2, 0.19, 0.18]]
  assert config["deltas"] == [0.1, 0.01] and config["trials"] == 3000
  labels = {rule: (params, gllr) for _, rule, params, gllr in gk16.RULES}
  assert labels["tas-c"] == ({"forced": "sqrt-t-k2", "projection": "none"}, True)
  assert labels["tas-d"] == ({"forced": "sqrt-t-k2"}, True)
  for rule in ("kl-lucb", "kl-racing", "chernoff-racing"):
    assert labels[rule] == ({"rate": "gk16"}, False)
  # A GLLR rule runs both levels on one trajectory; an own-stop rule one per level.
  per_rule = {}
  for _, _, rule, _, deltas, job in gk16.plan(config):
    per_rule.setdefault(rule, []).append(deltas)
    assert job["threshold"] == ("gk16" if labels[rule][1] else None)
  assert per_rule["tcb"] == [[0.1, 0.01]] * 2
  assert per_rule["kl-lucb"] == [[0.1], [0.01]] * 2


def test_tiny_run_writes_the_table_and_resumes(tmp_path):
  out = str(tmp_path)
  first = reproduce.run(["gk16"], out=out, progress=False, configs={"gk16": TINY})
  assert first["failed"] == [] and first["computed"] == 2
  with open(os.path.join(out, "gk16.csv"), newline="") as f:
    rows = list(csv.DictReader(f))
  assert [r["rule"] for r in rows] == ["KL-Racing", "TCB"]
  assert [r["stop"] for r in rows] == ["own", "gllr(gk16)"]
  for r in rows:
    assert int(r["trials"]) == 4
    assert float(r["tau_lo"]) <= float(r["mean_tau"]) <= float(r["tau_hi"])
    assert float(r["error_lo"]) <= float(r["error_rate"]) <= float(r["error_hi"])
  table = open(os.path.join(out, "gk16.md")).read()
  assert table.count("\n") == 2 + len(rows) and "| TCB | gllr(gk16) | 4 |" in table
  assert "| gk16: " in open(os.path.join(out, "claims.md")).read()
  again = reproduce.run(["gk16"], out=out, progress=False, configs={"gk16": TINY})
  assert again["computed"] == 0 and again["skipped"] == 2


@pytest.mark.slow
def test_every_rule_runs_at_smoke_size(tmp_path):
  log = io.StringIO()
  config = dict(specs.spec("gk16", "smoke"), rules=specs.GK16_RULES)
  summary = reproduce.run(["gk16"], out=str(tmp_path), stream=log, configs={"gk16": config})
  assert summary["failed"] == []
  with open(os.path.join(str(tmp_path), "gk16.csv"), newline="") as f:
    rows = list(csv.DictReader(f))
  assert [r["rule"] for r in rows] == [label for label, *_ in gk16.RULES]
