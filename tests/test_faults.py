"""The reproducers of issue 25, one test each: bad inputs and faults that were
silently wrong, lost work, or ended in a traceback, and now run correctly or are
refused with one line (exit 2 on the command line, ValueError or TypeError in
the API) before any work.

The suite runs in float64 (conftest); the float32 reproducers run the command
line in a subprocess with JAX_ENABLE_X64=0, or call the float32 paths directly.
"""

import json
import math
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jbai
from jbai import cli
from jbai.cli import run as run_mod
from jbai.core import inputs
from jbai.host.jsonlines import JsonLines

KEY = jax.random.key(0)


def run_cli(capsys, *argv):
  code = cli.main([str(a) for a in argv])
  out, err = capsys.readouterr()
  return code, out, err


def refused(capsys, *argv, fragment=""):
  """The command exits 2 with one line on stderr that contains `fragment`."""
  code, out, err = run_cli(capsys, *argv)
  assert code == 2, (code, out, err)
  assert len(err.strip().splitlines()) == 1 and err.startswith("jbai: error: "), err
  assert fragment in err, err
  return err


def float32_cli(*argv, timeout=300):
  """The command line in float32 (as users run it), in a subprocess."""
  env = dict(os.environ, JAX_ENABLE_X64="0")
  proc = subprocess.run([sys.executable, "-m", "jbai.cli", *map(str, argv)], env=env,
                        capture_output=True, text=True, timeout=timeout)
  return proc.returncode, proc.stdout, proc.stderr


# ---------------------------------------------------------------- 1. delta at any magnitude

def test_tiny_delta_in_float32_stops_trials_as_float64_does():
  """Was: every trial at the cap, error rate 1.0, exit 0 (delta rounded to 0 in float32)."""
  code, out, err = float32_cli("run", "--means", "1,0", "--rule", "tcb", "--delta", "1e-300",
                               "--trials", "20", "--max-steps", "100000", "--json")
  assert code == 0, err
  res = json.loads(out)
  assert res["hit_cap"] == 0 and res["error_rate"] == 0.0
  assert 0.9 < res["ratio"] < 1.2  # tau ~ T* log(1/delta) = 8 * 690.8


def test_float32_thresholds_carry_log_inv_delta_below_the_normal_range():
  for name in ("gk16", "kk", "paper"):
    thr = jbai.thresholds.get(name)
    tiny = inputs.threshold_params(thr, [1e-300], 3, np.float32)
    for leaf in jax.tree.leaves(tiny):
      assert np.all(np.isfinite(leaf)) and np.asarray(leaf).dtype == np.float32
  params = inputs.threshold_params(jbai.thresholds.gk16(), [1e-300, "1e-400"], 3, np.float32)
  np.testing.assert_allclose(params["log_inv_delta"], [300 * math.log(10), 400 * math.log(10)],
                             rtol=1e-6)


def test_normal_deltas_reach_the_threshold_as_before():
  """Levels in float32's normal range: the same array as before, to the bit."""
  for thr in (jbai.thresholds.gk16(), jbai.thresholds.kk(), jbai.thresholds.paper()):
    for dtype in (np.float32, np.float64):
      deltas = [0.1, 1e-8, 2e-38]
      before = thr.init(jax.numpy.asarray(np.asarray(deltas, float), dtype), 4)
      after = inputs.threshold_params(thr, deltas, 4, dtype)
      for b, a in zip(jax.tree.leaves(before), jax.tree.leaves(after)):
        assert np.array_equal(np.asarray(b), np.asarray(a))


def test_delta_below_float64_keeps_its_text(capsys):
  """Was: `--delta 1e-400` refused with "got 0.0"."""
  code, out, _ = run_cli(capsys, "run", "--means", "1,0", "--rule", "tcb", "--delta", "1e-400",
                         "--trials", "6", "--max-steps", "100000", "--json")
  assert code == 0
  res = json.loads(out)
  assert res["delta"] == "1e-400" and res["hit_cap"] == 0 and 0.8 < res["ratio"] < 1.3
  refused(capsys, "run", "--delta", "0", fragment="got 0")
  refused(capsys, "run", "--delta", "-1e-400", fragment="got -1e-400")
  res = jbai.simulate(KEY, "gaussian", [1.0, 0.0], "tcb", "1e-400", 4, max_steps=100_000)
  assert not res.hit_cap.any() and res.summary[0]["t_star_log"] == pytest.approx(
      8 * 400 * math.log(10), rel=1e-6)


def test_estimate_and_simulate_take_a_tiny_delta_in_float32():
  """Was: estimate refused 1e-300 with "got 0.0" and simulate ran every trial to
  the cap (delta rounded to 0 in float32)."""
  script = ("import jax, jbai, numpy as np; k = jax.random.key(0); "
            "e = jbai.estimate(k, 'gaussian', [1.0, 0.0], 'tcb', 1e-300, 4, max_steps=100000); "
            "r = jbai.simulate(k, 'gaussian', [1.0, 0.0], 'tcb', 1e-300, 4, max_steps=100000); "
            "print(float(e.mean_tau), bool(np.asarray(e.trials.hit_cap).any()), "
            "bool(r.hit_cap.any()), r.summary[0]['ratio'])")
  proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        env=dict(os.environ, JAX_ENABLE_X64="0"), timeout=300)
  assert proc.returncode == 0, proc.stderr
  mean_tau, est_capped, sim_capped, ratio = proc.stdout.split()
  assert est_capped == sim_capped == "False" and 0.8 < float(ratio) < 1.3
  assert 4000 < float(mean_tau) < 8000  # T* log(1/delta) = 8 * 690.8


# ---------------------------------------------------------------- 2. --out r.npz

def test_out_npz_keeps_the_summary_apart(capsys, tmp_path):
  """Was: the JSON summary written to r.npz, then overwritten by the arrays."""
  out = tmp_path / "r.npz"
  code, _, _ = run_cli(capsys, "run", "--means", "1,0", "--rule", "tcb", "--delta", "0.1",
                       "--trials", "8", "--out", out)
  assert code == 0
  assert json.loads((tmp_path / "r.json").read_text())["trials"] == 8
  assert np.load(out)["tau"].shape == (8,)
  assert sorted(os.listdir(tmp_path)) == ["r.json", "r.npz"]


# ---------------------------------------------------------------- 3. runtime parameters

@pytest.mark.parametrize("rule, params, fragment", [
    ("t3c", {"beta": 1.5}, "beta must be in (0, 1), got 1.5"),
    ("t3c", {"beta": 0.0}, "beta must be in (0, 1), got 0.0"),
    ("t3c", {"beta": float("nan")}, "got nan"),
    ("tcb", {"eps": -1}, "eps must be > 0 and finite, got -1"),
    ("tcb", {"eps": float("inf")}, "eps must be > 0 and finite, got inf"),
    ("t3c", {"beta": [0.3, 0.5]}, "must be a scalar"),
    ("t3c", {"gamma": 0.5}, "no runtime parameter 'gamma'"),
])
def test_runtime_parameters_are_checked(rule, params, fragment):
  """Was: estimate ran with beta = 1.5 and returned E[tau] and gradients."""
  for call in (jbai.estimate, jbai.rollout):
    with pytest.raises(ValueError, match=None) as e:
      call(KEY, "gaussian", [1, .5, 0], jbai.rules.get(rule), 0.1, 16, params=params)
    assert fragment in str(e.value) and len(str(e.value).splitlines()) == 1


def test_traced_runtime_parameters_pass_through():
  run = jax.jit(lambda b: jbai.rollout(KEY, "gaussian", [1.0, 0.5, 0.0], jbai.rules.t3c(), 0.1,
                                       4, params={"beta": b}).tau.mean())
  assert np.isfinite(run(0.5))


# ---------------------------------------------------------------- 4. late crashes

def test_ties_in_float32_are_refused_before_the_run():
  """Was: every trial to the cap, then ZeroDivisionError."""
  code, _, err = float32_cli("run", "--means", "1,1.00000001,0", "--trials", "4")
  assert code == 2 and "tie for the best arm" in err and "float32" in err
  assert len(err.strip().splitlines()) == 1
  with pytest.raises(ValueError, match="in float32"):
    jbai.families.check_means(jbai.families.gaussian(), [1, 1.00000001, 0], dtype=np.float32)


def test_oracle_refuses_an_unresolvable_gap(capsys):
  """Was: ZeroDivisionError in float64 (a KL that rounds to 0: here 0.125 / sigma^2
  below float64's smallest number; the Bernoulli KL of a gap of 1e-9, the first
  such case, is now computed to a few units of roundoff and is positive)."""
  refused(capsys, "oracle", "--family", "gaussian", "--sigma", "1e160", "--means",
          "0.5,0,-0.1", fragment="cannot be told apart")
  with pytest.raises(ValueError, match="cannot be told apart"):
    jbai.oracle.optimal_allocation(jbai.families.gaussian(sigma=1e160), [0.5, 0.0, -0.1],
                                   method="exact")


def test_infinite_sigma_is_refused_at_once(capsys):
  """Was: a crash after 21 s of simulation."""
  refused(capsys, "run", "--sigma", "inf", "--means", "1,0", fragment="--sigma must be a finite")
  with pytest.raises(ValueError, match="cannot be told apart"):
    jbai.simulate(KEY, jbai.families.gaussian(sigma=float("inf")), [1.0, 0.0], "tcb", 0.1, 4)


def _bad_outs(tmp_path, command):
  (tmp_path / "afile").write_text("x")
  outs = [tmp_path, "/dev/full", tmp_path / "afile" / "r.json"]
  if command == "run":  # the name of run's own finished-trial file
    outs.append(tmp_path / "r.partial.jsonl")
  if os.geteuid() != 0:  # root writes anywhere
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    outs.append(ro / "r.json")
  return outs


@pytest.mark.parametrize("command", ["run", "grad"])
def test_an_unwritable_out_is_refused_before_the_run(capsys, tmp_path, monkeypatch, command):
  """Was: found only after the whole run (grad lost everything)."""
  import jbai.host.simulate as simulate_mod

  def no_run(*a, **k):
    raise AssertionError("simulated before checking --out")

  monkeypatch.setattr(simulate_mod, "simulate", no_run)
  for out in _bad_outs(tmp_path, command):
    refused(capsys, command, "--means", "1,0", "--rule", "tcb", "--delta", "0.1",
            "--trials", "4", "--out", out, fragment="--out")
  assert not any(p.endswith(".partial.jsonl") for p in os.listdir(tmp_path))


# ---------------------------------------------------------------- 5. memory

def test_a_run_that_would_not_fit_in_memory_is_refused(capsys, monkeypatch):
  """Was: killed by the kernel at 23.6 GB (3e9), a MemoryError traceback (1e12)."""
  for trials in ("3e9", "1e12"):
    err = refused(capsys, "run", "--trials", trials, "--delta", "0.1",
                  fragment="of memory for its per-trial results")
    assert "JBAI_MEMORY_LIMIT" in err
  with pytest.raises(ValueError, match="JBAI_MEMORY_LIMIT"):
    jbai.simulate(KEY, "gaussian", [1.0, 0.0], "tcb", 0.1, 2**31)
  monkeypatch.setenv("JBAI_MEMORY_LIMIT", "1K")
  with pytest.raises(ValueError, match=r"limit of 1\.02 KB \(JBAI_MEMORY_LIMIT\)"):
    jbai.rollout(KEY, "gaussian", [1.0, 0.0], "tcb", 0.1, 1000)
  monkeypatch.setenv("JBAI_MEMORY_LIMIT", "lots")
  with pytest.raises(ValueError, match="not a size"):
    jbai.rollout(KEY, "gaussian", [1.0, 0.0], "tcb", 0.1, 10)


# ---------------------------------------------------------------- 6. saved state

RUN = ["run", "--means", "1,0.5", "--rule", "tcb", "--delta", "0.1", "--trials", "24",
       "--chunk", "8", "--json"]


@pytest.fixture
def kept_partial(capsys, tmp_path, monkeypatch):
  """A finished run's trial file, kept (TrialLog.remove made a no-op), and the
  run's JSON: (path of the partial file, out, JSON of the clean run)."""
  monkeypatch.setattr(run_mod.TrialLog, "remove", lambda self: None)
  out = tmp_path / "r.json"
  code, stdout, _ = run_cli(capsys, *RUN, "--out", out)
  assert code == 0
  partial = tmp_path / "r.partial.jsonl"
  assert len(partial.read_text().splitlines()) >= 3
  clean = json.loads(stdout)
  return partial, out, {k: clean[k] for k in ("mean_tau", "error_rate", "max_tau")}


def _damage(partial, line: int, text: bytes):
  lines = partial.read_bytes().split(b"\n")
  lines.insert(line - 1, text)
  partial.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("text, why", [
    (b"garbage", "is not JSON"),
    (b"{}", "has no 'run' name"),
    (b"[1,2,3]", "is not a record"),
    (b'{"run": "x\xff"}', "is not UTF-8"),
])
def test_a_damaged_line_is_named_by_file_and_line(capsys, kept_partial, text, why):
  """Was: "Expecting value: line 1 column 1 (char 0)", KeyError, TypeError."""
  partial, out, _ = kept_partial
  _damage(partial, 2, text)
  err = refused(capsys, *RUN, "--out", out, fragment=f"{partial} line 2: {why}")
  assert "--repair" in err


def test_an_out_of_range_index_and_an_altered_line(capsys, kept_partial):
  """Was: IndexError; and tau x 10 summed silently (now a checksum per record)."""
  from jbai.host.jsonlines import checksum
  partial, out, _ = kept_partial
  lines = partial.read_text().splitlines()
  row = json.loads(lines[1])
  row["tau"] = [[10 * t for t in taus] for taus in row["tau"]]  # altered, old checksum kept
  partial.write_text("\n".join([lines[0], json.dumps(row)] + lines[2:]) + "\n")
  refused(capsys, *RUN, "--out", out, fragment="line 2: its checksum does not match")
  row = json.loads(lines[1])
  row["index"][0] = 10**6
  row["sum"] = checksum(row)  # well-formed, its checksum right, its index out of range
  partial.write_text("\n".join([lines[0], json.dumps(row)] + lines[2:]) + "\n")
  refused(capsys, *RUN, "--out", out, fragment="line 2: a trial index out of range [0, 24)")


def test_repair_drops_the_damaged_tail_and_recomputes_it(capsys, kept_partial):
  partial, out, clean = kept_partial
  _damage(partial, 3, b"garbage")
  code, stdout, err = run_cli(capsys, *RUN, "--out", out, "--repair")
  assert code == 0 and "repair: dropped" in err and "line 3" in err
  again = json.loads(stdout)
  assert {k: again[k] for k in clean} == clean  # the same trials: bit-identical


def test_another_command_names_the_setting_that_differs(capsys, kept_partial):
  partial, out, _ = kept_partial
  argv = [a if a != "24" else "30" for a in RUN]
  refused(capsys, *argv, "--out", out, fragment="differs in trials: file 24, this command 30")


def test_a_non_utf8_byte_spoils_one_line_of_the_reproduce_store(tmp_path):
  """Was: one such byte made the whole store unusable."""
  path = str(tmp_path / "runs.jsonl")
  store = JsonLines(path)
  store.add({"key": "a", "result": 1})
  with open(path, "ab") as f:
    f.write(b'{"key": "b\xff", "result": 2}\n')
  store.add({"key": "c", "result": 3})
  again = JsonLines(path)
  assert set(again.records) == {"a", "c"} and "line 2: is not UTF-8" in str(again.damaged[0])
  with open(path, "rb") as f:
    altered = f.read().replace(b'"result":3', b'"result":30')
  with open(path, "wb") as f:
    f.write(altered)
  assert set(JsonLines(path).records) == {"a"}  # the altered line is skipped (run again)


# ---------------------------------------------------------------- 7. silent truncation

@pytest.mark.parametrize("call, fragment", [
    (lambda: jbai.simulate(KEY, "gaussian", [1, 0], "tcb", 0.1, 2.5), "n_trials must be a whole"),
    (lambda: jbai.rollout(KEY, "gaussian", [1, 0], "tcb", 0.1, 2.5), "n_trials must be a whole"),
    (lambda: jbai.simulate(KEY, "gaussian", [1, 0], "tcb", 0.1, 4, max_steps=2.5),
     "max_steps must be a whole"),
    (lambda: jbai.rollout(KEY, "gaussian", [1, 0], "tcb", 0.1, 4, max_steps=2.5),
     "max_steps must be a whole"),
    (lambda: jbai.rollout(KEY, "gaussian", [1, 0], "tcb", 0.1, 4, max_steps=0),
     "max_steps must be >= 1, got 0"),
    (lambda: jbai.estimate(KEY, "gaussian", [1, 0], "tcb", 0.1, 4, max_steps=-5),
     "max_steps must be >= 1, got -5"),
    (lambda: jbai.finite_difference(KEY, "gaussian", [1, 0], "tcb", 0.1, 4, wrt=0, h=0),
     "h must be a finite number > 0, got 0"),
    (lambda: jbai.trace(KEY, "gaussian", [1, 0], "tcb", horizon=-5, n_trials=2),
     "horizon must be >= 1, got -5"),
])
def test_no_silent_truncation(call, fragment):
  """Was: 2.5 trials ran 2, max_steps 0 gave tau = 0, h = 0 gave NaN."""
  with pytest.raises((ValueError, TypeError), match=fragment.replace("(", r"\(")):
    call()


# ---------------------------------------------------------------- 8. tracebacks

@pytest.mark.parametrize("argv, fragment", [
    (["run", "--chunk", "0"], "--chunk: '0' must be >= 1"),
    (["run", "--seed", str(2**63)], "is not a seed in [0, 2^63)"),
    (["run", "--seed", "1e30"], "'1e30' is not a seed"),
    (["run", "--rule", "tcb", "--beta", "0.3"], "--beta is taken by none of --rule tcb"),
    (["run", "--rule", "t3c", "--eps", "2"], "--eps is taken by none of --rule t3c"),
])
def test_command_line_tracebacks_are_one_line(capsys, argv, fragment):
  refused(capsys, *argv, fragment=fragment)


def test_reproduce_into_an_existing_file(capsys, tmp_path):
  path = tmp_path / "afile"
  path.write_text("x")
  refused(capsys, "reproduce", "--only", "table1", "--out", path, fragment="is a file")


@pytest.mark.parametrize("call, error, fragment", [
    (lambda: jbai.rollout(KEY, "gaussian", [1, 0], "tcb", 0.1, 4, lanes=-4), ValueError,
     "lanes must be >= 1, got -4"),
    (lambda: jbai.simulate(KEY, "gaussian", [1, 0], "tcb", 0.1, 4, lanes=-4), ValueError,
     "lanes must be >= 1, got -4"),
    (lambda: jbai.simulate(0, "gaussian", [1, 0], "tcb", 0.1, 4), TypeError,
     "key must be a PRNG key"),
    (lambda: jbai.rollout(0, "gaussian", [1, 0], "tcb", 0.1, 4), TypeError,
     "key must be a PRNG key"),
    (lambda: jbai.simulate(KEY, "gaussian", np.zeros((0, 3)), "tcb", 0.1, 4), ValueError,
     "at least one instance"),
    (lambda: jbai.rollout(KEY, "gaussian", np.zeros((0, 3)), "tcb", 0.1, 4), ValueError,
     "at least one instance"),
    (lambda: jbai.oracle.optimal_allocation("gaussian", np.zeros((0, 3))), ValueError,
     "at least one instance"),
])
def test_api_tracebacks_are_one_line_errors(call, error, fragment):
  with pytest.raises(error) as e:
    call()
  assert fragment in str(e.value) and len(str(e.value).splitlines()) == 1


def test_help_says_what_beta_does_for_rules_without_it(capsys):
  code = cli.main(["run", "--help"])
  out = " ".join(capsys.readouterr().out.split())
  assert code == 0 and "rules that take no beta ignore it" in out


# ---------------------------------------------------------------- Ctrl-C at any moment

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A Ctrl-C that lands in a garbage-collection callback (JAX frees buffers from
# one) is dropped by Python ("Exception ignored in ..."): the handler raises it
# again once the callback is over, with no report.
DROPPED = """
import gc, os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from jbai.cli.interrupts import quiet_after_first_interrupt
def slow_callback(phase, info):
  if phase == "start" and not hit:
    hit.append(True)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)  # the KeyboardInterrupt is raised here, and dropped
hit = []
with quiet_after_first_interrupt():
  gc.callbacks.append(slow_callback)
  try:
    gc.collect()
    gc.callbacks.remove(slow_callback)
    time.sleep(2)
    print("lost", flush=True)
  except KeyboardInterrupt:
    print("raised again", flush=True)
"""


def test_a_ctrl_c_dropped_by_a_gc_callback_is_raised_again():
  proc = subprocess.run([sys.executable, "-c", DROPPED], capture_output=True, text=True,
                        timeout=120, env=dict(os.environ, PYTHONPATH=_ROOT))
  assert proc.stdout == "raised again\n" and proc.stderr == "", proc.stderr


# The `jbai` script, with SIGINT as in a terminal, saying when its imports are done.
READY = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "import jbai.cli; print('ready', file=sys.stderr, flush=True); "
         "sys.argv[0] = 'jbai'; sys.exit(jbai.cli.main())")


STUDY = """
[study]
name = "budget"
seed = 2
trials = 2000
budget = [3000, 9000]
[[instances]]
family = "bernoulli"
means = [0.5, 0.4, 0.3]
[[rules]]
name = "uniform"
[[rules]]
name = "successive-rejects"
"""


@pytest.mark.slow  # five subprocesses that compile, each ended early: about 30 s
@pytest.mark.parametrize("argv, delay", [
    # 0.05 s: parsing, the cache, the first tracing. A signal within microseconds of
    # "ready" meets Python's own handler before `main` is entered: a traceback, as
    # during the imports (docs/guide/command-line.md), which no code of jbai's can catch.
    (["run", "--trials", "3000", "--rule", "tcb"], 0.05),
    (["run", "--trials", "3000", "--rule", "tcb"], 2.0),   # tracing, compiling
    (["run", "--trials", "3000", "--rule", "tcb"], 5.0),   # running chunks
    (["grad", "--budget", "1000", "--trials", "1000", "--rule", "uniform"], 3.0),
    (["study", "SPEC", "--out", "OUT"], 4.0),              # a budget study
])
def test_ctrl_c_at_any_moment_is_130_and_one_line(tmp_path, argv, delay):
  """SIGINT `delay` seconds after the imports, compiling without the persistent
  cache (a Ctrl-C while XLA compiles ended in a segmentation fault, exit -11, at
  the interpreter's shutdown): exit 130, no traceback, no "Exception ignored",
  one line on stderr (or the note of the finished trials on stdout), whatever the
  command was doing."""
  import signal
  import time
  (tmp_path / "spec.toml").write_text(STUDY)
  argv = [{"SPEC": str(tmp_path / "spec.toml"), "OUT": str(tmp_path / "out")}.get(a, a)
          for a in argv]
  env = dict(os.environ, PYTHONPATH=_ROOT, JBAI_NO_COMPILATION_CACHE="1")
  proc = subprocess.Popen([sys.executable, "-c", READY, *argv], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  assert proc.stderr.readline() == "ready\n"
  time.sleep(delay)
  proc.send_signal(signal.SIGINT)
  out, err = proc.communicate(timeout=300)
  assert proc.returncode == 130, (out, err)
  assert "Traceback" not in err and "Exception ignored" not in err, err
  lines = [line for line in err.splitlines() if not line.startswith("[")]  # a study's jobs
  assert len(lines) + ("interrupted" in out) == 1, (out, err)
