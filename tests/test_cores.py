"""Every core as a JAX device: `jbai.use_cpu_cores`, --devices and $JBAI_DEVICES."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from jbai import cli
from jbai.host import cores


def _cgroup(tmp_path, v2=None, quota=None, period=None):
  tmp_path.mkdir()
  if v2 is not None:
    (tmp_path / "cpu.max").write_text(v2)
  if quota is not None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(str(quota))
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text(str(period))
  return str(tmp_path)


def test_usable_cores_are_the_affinity_within_the_cgroup_quota(tmp_path):
  affinity = len(os.sched_getaffinity(0))
  assert cores.usable_cores(str(tmp_path / "none")) == affinity
  assert cores.usable_cores(_cgroup(tmp_path / "a", v2="max 100000\n")) == affinity
  assert cores.usable_cores(_cgroup(tmp_path / "b", v2="50000 100000\n")) == 1  # 0.5 core
  assert cores.usable_cores(_cgroup(tmp_path / "c", quota=-1, period=100000)) == affinity
  assert cores.usable_cores(_cgroup(tmp_path / "d", quota=150000, period=100000)) == min(
      affinity, 2)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "x", "", None.__class__])
def test_a_device_count_that_is_not_a_positive_whole_number_is_refused(bad):
  with pytest.raises(ValueError, match="devices must be a positive whole number, got"):
    cores.check_devices(bad)


def test_a_numpy_whole_number_of_devices_is_accepted():
  import numpy as np
  assert cores.check_devices(np.int64(3)) == 3 and type(cores.check_devices(np.int64(3))) is int


def test_the_started_backend_refuses_another_count_and_accepts_its_own():
  import jax
  have = len(jax.devices("cpu"))
  assert cores.use_cpu_cores(have) == have
  with pytest.raises(RuntimeError, match=rf"already started with {have} CPU device.*"
                     "before any JAX computation"):
    cores.use_cpu_cores(have + 1)


def _python(code, **env):
  environ = {k: v for k, v in os.environ.items()
             if k not in ("PJRT_NPROC", "JAX_NUM_CPU_DEVICES", cores.ENV_DEVICES, "XLA_FLAGS")}
  environ.update(env)
  return subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                        text=True, check=True).stdout


def test_import_changes_nothing_and_the_call_gives_one_device_per_core():
  out = _python(
      "import os, jax, jbai\n"
      "assert jax.config.jax_num_cpu_devices == -1 and 'PJRT_NPROC' not in os.environ\n"
      "n = jbai.use_cpu_cores()\n"
      "print(n, len(jax.devices('cpu')), os.environ['PJRT_NPROC'])\n")
  n = cores.usable_cores()
  assert out.split() == [str(n), str(n), "1"]


@pytest.mark.parametrize("env", [{"JAX_NUM_CPU_DEVICES": "3"},
                                 {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}])
def test_a_count_already_asked_of_jax_is_kept(env):
  out = _python("import jax, jbai\nprint(jbai.use_cpu_cores(), len(jax.devices('cpu')))\n",
                **env)
  assert out.split() == ["3", "3"]


@pytest.mark.parametrize("command, argv", [
    ("--devices", ["run", "--trials", "5", "--means", "1,0", "--delta", "0.1", "--devices", "0"]),
    ("$JBAI_DEVICES", ["run", "--trials", "5", "--means", "1,0", "--delta", "0.1"])])
def test_a_bad_device_count_on_the_command_line_is_one_line(capsys, monkeypatch, command, argv):
  monkeypatch.setenv(cores.ENV_DEVICES, "two")
  assert cli.main(argv) == 2
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and ("'0' must be >= 1" if command == "--devices" else
                                   "$JBAI_DEVICES must be a positive whole number, got 'two'") in err


def test_one_and_three_cpu_devices_give_the_same_trials(tmp_path, capsys):
  """`jbai run --devices N` shards the lanes over N CPU devices: every trial is the
  same for 1 and 3 devices (float64; 3 devices split 30 trials' pool unevenly; two
  devices: tests/test_engine.py's slow tier). One device is this process's."""
  argv = lambda n: ["run", "--rule", "tcb", "--means", "1,0.6,0.5,0.5", "--delta", "0.01",
                    "--trials", "30", "--devices", str(n), "--json",
                    "--out", str(tmp_path / f"run{n}.json")]
  assert cli.main(argv(1)) == 0
  summaries = {1: json.loads(capsys.readouterr().out)}
  summaries[3] = json.loads(_python(
      "import sys, jax; jax.config.update('jax_enable_x64', True)\n"
      f"from jbai import cli\nsys.exit(cli.main({argv(3)!r}))\n"))
  arrays = {}
  for n, summary in summaries.items():
    assert summary["trials"] == 30 and summary["devices"] == n
    arrays[n] = np.load(tmp_path / f"run{n}.npz")
  for field in ("tau", "answer", "counts", "steps"):
    np.testing.assert_array_equal(arrays[3][field], arrays[1][field])
