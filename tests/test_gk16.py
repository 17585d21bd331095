"""The reproduction item gk16 (Garivier & Kaufmann 2016, Table 1): its settings,
a tiny run end to end, resuming, and (slow) every rule at the smoke size."""

import csv
import io
import os

import pytest

from jbai import reproduce
from jbai.reproduce import gk16, specs
from jbai.studies import plan as plan_lib, spec as spec_lib

TINY = specs.spec("gk16", "smoke")  # KL-Racing and TCB on gk16-1, delta = 0.1
TINY["study"]["trials"] = 4


def test_paper_settings_are_the_papers():
  resolved = spec_lib.resolve(specs.spec("gk16", "paper"))
  assert [i["means"] for i in resolved["instances"]] == [[0.5, 0.45, 0.43, 0.4],
                                                         [0.3, 0.21, 0.2, 0.19, 0.18]]
  assert resolved["study"]["delta"] == [0.1, 0.01] and resolved["study"]["trials"] == 3000
  labels = {s["rule"]: (s["params"], s["threshold"]) for s in resolved["settings"]}
  assert list(labels) == list(gk16.LABELS)
  assert labels["tas-c"] == ({"forced": "sqrt-t-k2", "projection": "none"}, "gk16")
  assert labels["tas-d"] == ({"forced": "sqrt-t-k2"}, "gk16")
  for rule in ("kl-lucb", "kl-racing", "chernoff-racing"):
    assert labels[rule] == ({"rate": "gk16"}, "own")
  # A GLLR rule runs both levels on one trajectory; an own-stop rule one per level.
  per_rule = {}
  for _, setting, deltas, job in plan_lib.plan(resolved):
    per_rule.setdefault(setting["rule"], []).append(deltas)
    own = labels[setting["rule"]][1] == "own"
    assert job["threshold"] == (None if own else "gk16")
    assert (job["trials"], job["max_steps"], job["seed"]) == (3000, 1_000_000, 0)
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
  config = dict(specs.spec("gk16", "smoke"), rules=specs.GK16["rules"])
  summary = reproduce.run(["gk16"], out=str(tmp_path), stream=log, configs={"gk16": config})
  assert summary["failed"] == []
  with open(os.path.join(str(tmp_path), "gk16.csv"), newline="") as f:
    rows = list(csv.DictReader(f))
  assert [r["rule"] for r in rows] == list(gk16.LABELS.values())
