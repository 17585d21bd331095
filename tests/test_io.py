"""Files and progress lines on the host (jbai/host/atomic.py,
jbai/host/jsonlines.py, jbai/host/progress.py): atomic writes, the
JSON-lines store, the progress bar. The store's behaviour after a kill is also
tested through its callers (tests/test_cli.py, tests/test_reproduce.py)."""

import io
import json
import os

import pytest

from jbai.host.atomic import atomic_write, write_csv, write_json
from jbai.host.jsonlines import JsonLines, checksum
from jbai.host.progress import Progress


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path):
  path = str(tmp_path / "out.json")
  write_json(path, {"x": 1})

  def fail(f):
    f.write('{"x": ')
    raise RuntimeError("killed mid-write")

  with pytest.raises(RuntimeError):
    atomic_write(path, fail)
  assert json.loads(open(path).read()) == {"x": 1}
  assert os.listdir(tmp_path) == ["out.json"]


def test_csv_floats_carry_ten_significant_digits(tmp_path):
  path = str(tmp_path / "t.csv")
  write_csv(path, ["a", "b"], [[1 / 3, "x"], [2, 0.5]])
  assert open(path, newline="").read() == "a,b\r\n0.3333333333,x\r\n2,0.5\r\n"


def test_json_lines_keeps_the_last_record_of_each_name(tmp_path):
  path = str(tmp_path / "log.jsonl")
  store = JsonLines(path, key="run", fsync=False)
  store.add({"run": "a", "n": 1})
  store.add({"run": "a", "n": 2})
  with open(path, "a") as f:
    f.write('[1, 2]\n{"no": "name"}\n')  # not records: skipped
  seen = []
  again = JsonLines(path, key="run", check=seen.append)
  assert again.get("a") == {"run": "a", "n": 2} and again.loaded == 2 and len(seen) == 2
  assert JsonLines(None).get("a") is None


def test_progress_over_one_task_and_over_a_sequence():
  stream = io.StringIO()
  bar = Progress("tcb", stream=stream, live=True)
  bar(5, 10)
  assert stream.getvalue().startswith("\rtcb [" + "#" * 15 + " " * 15 + "] 5/10, ")
  assert " left " in stream.getvalue()  # the time left, from the rate so far
  bar(10, 10)  # the line ends when the task completes
  last = stream.getvalue().split("\r")[-1]  # padded to clear the longer line before it
  assert last.endswith("\n") and last.rstrip().endswith("s") and not bar.open
  stream = io.StringIO()  # not a terminal: one line per finished task, no bar
  jobs = Progress(stream=stream, tasks=2)
  jobs.begin("first job")
  jobs.update(3, 4, "trials")
  jobs.end("done")
  assert stream.getvalue().startswith("[1/2] first job done (")
  assert stream.getvalue().count("\n") == 1


def test_a_full_disk_names_the_file_it_could_not_write(tmp_path, monkeypatch):
  """errno 28 from a write or fsync names no file: the error names the one lost."""
  def full(fd):
    raise OSError(28, "No space left on device")
  monkeypatch.setattr(os, "fsync", full)
  target = tmp_path / "summary.json"
  with pytest.raises(OSError, match=r"No space left on device: '.*summary\.json'"):
    write_json(str(target), {"a": 1})
  assert not target.exists() and os.listdir(tmp_path) == []
  log = JsonLines(str(tmp_path / "trials.jsonl"))
  with pytest.raises(OSError, match=r"No space left on device: '.*trials\.jsonl'"):
    log.add({"key": "a", "value": 1})


def test_a_marked_store_refuses_a_line_without_its_checksum(tmp_path):
  """A file this version writes (`mark`) names its format on its first line: a
  record whose checksum was deleted (and its value edited) is damaged, in every
  mode, and the mark stays out of the records."""
  from jbai.host.jsonlines import FORMAT, FORMAT_VERSION, SUM, DamagedLine
  path = str(tmp_path / "runs.jsonl")
  store = JsonLines(path, mark=True)
  for name in "abc":
    store.add({"key": name, "tau": 5})
  lines = open(path).read().splitlines()
  assert json.loads(lines[0])[FORMAT] == FORMAT_VERSION and FORMAT not in lines[1]
  assert JsonLines(path).get("a") == {"key": "a", "tau": 5}  # read without `mark` too
  row = json.loads(lines[1])
  del row[SUM]
  row["tau"] = 50
  open(path, "w").write("\n".join([lines[0], json.dumps(row), lines[2]]) + "\n")
  skipped = JsonLines(path, mark=True)
  assert set(skipped.records) == {"a", "c"} and skipped.marked
  assert "line 2: has no checksum, in a store whose every record" in str(skipped.damaged[0])
  with pytest.raises(DamagedLine, match="line 2: has no checksum.*; do this"):
    JsonLines(path, on_damage="raise", hint="; do this")
  cut = JsonLines(path, on_damage="truncate")
  assert set(cut.records) == {"a"} and open(path).read().count("\n") == 1
  first = json.loads(lines[0])  # a mark from a newer version: refused
  first[FORMAT] = FORMAT_VERSION + 1
  first[SUM] = checksum(first)
  open(path, "w").write(json.dumps(first) + "\n")
  with pytest.raises(DamagedLine, match=f"line 1: marks a store of format {FORMAT_VERSION + 1}"):
    JsonLines(path, on_damage="raise")


def test_an_unmarked_store_of_an_earlier_version_reads_as_before(tmp_path):
  """No mark on its first line: records without a checksum are read, and records
  appended to it leave it unmarked; an emptied file is marked anew."""
  path = str(tmp_path / "runs.jsonl")
  open(path, "w").write('{"key": "old", "tau": 1}\n')
  store = JsonLines(path, mark=True)
  assert store.get("old") == {"key": "old", "tau": 1} and not store.marked
  store.add({"key": "new", "tau": 2})
  open(path, "a").write('{"key": "older", "tau": 3}\n')
  again = JsonLines(path, mark=True)
  assert set(again.records) == {"old", "new", "older"} and not again.damaged
  assert "jbai_store" not in open(path).read()
  open(path, "w").close()
  JsonLines(path, mark=True).add({"key": "a"})
  assert JsonLines(path, mark=True).marked
