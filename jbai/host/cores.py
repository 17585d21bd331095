"""Every core of a CPU as a JAX device: `use_cpu_cores`, called by the user.

JAX gives a CPU one device by default, and jbai runs one pool of lanes per device
(`jbai.simulate`), so by default it leaves all cores but one without a pool.
`use_cpu_cores(n)` asks JAX for n CPU devices (`jax_num_cpu_devices`), one per
usable core by default, before JAX's CPU backend starts.

It also caps XLA:CPU's own thread pool at one thread per device (PJRT_NPROC=1, so
that the pool has max(1, n) threads), unless PJRT_NPROC is already set. XLA:CPU
runs a program's independent kernels concurrently on that pool; a step of jbai's
pool is some fifty kernels of a few microseconds each, whose hand-offs between
threads cost more than the kernels, so one device on a two-core machine ran 1.6
times slower free to use both cores than pinned to one. Each device then runs its
program on one thread, and the cores run the devices side by side.

Usable cores are those the process may run on (`os.sched_getaffinity`) within its
cgroup's CPU quota (a container's `--cpus`), not `os.cpu_count()`.

Importing jbai changes none of this: the command line calls `use_cpu_cores`
(`--devices N`, or $JBAI_DEVICES), a library user calls it once, right after
importing jax and before JAX's first computation.
"""

import math
import numbers
import os
import re
from typing import Optional

import jax
import numpy as np

ENV_DEVICES = "JBAI_DEVICES"  # the command line's device count (--devices wins)
ENV_THREADS = "PJRT_NPROC"    # XLA's thread count for its CPU pools


def _cgroup_quota(root: str = "/sys/fs/cgroup") -> Optional[float]:
  """The cgroup's CPU quota in cores (cgroup v2's cpu.max, v1's cfs quota and
  period), or None when there is none or it cannot be read."""
  try:
    with open(os.path.join(root, "cpu.max")) as f:
      quota, period = f.read().split()[:2]
    return None if quota == "max" else int(quota) / int(period)
  except (OSError, ValueError):
    pass
  try:
    with open(os.path.join(root, "cpu", "cpu.cfs_quota_us")) as f:
      quota = int(f.read())
    with open(os.path.join(root, "cpu", "cpu.cfs_period_us")) as f:
      period = int(f.read())
    return None if quota <= 0 or period <= 0 else quota / period
  except (OSError, ValueError):
    return None


def usable_cores(cgroup_root: str = "/sys/fs/cgroup") -> int:
  """The cores this process may use: its CPU affinity, within its cgroup's CPU
  quota (rounded up), at least 1."""
  try:
    cores = len(os.sched_getaffinity(0))
  except (AttributeError, OSError):  # not Linux
    cores = os.cpu_count() or 1
  quota = _cgroup_quota(cgroup_root)
  if quota is not None:
    cores = min(cores, math.ceil(quota))
  return max(1, cores)


def backend_started() -> bool:
  """Whether JAX has started its backends (after which the CPU device count is fixed)."""
  from jax._src import xla_bridge
  return xla_bridge.backends_are_initialized()


def configured_devices() -> Optional[int]:
  """The CPU device count already asked of JAX (jax_num_cpu_devices, from
  JAX_NUM_CPU_DEVICES, or XLA_FLAGS's --xla_force_host_platform_device_count),
  or None."""
  if jax.config.jax_num_cpu_devices >= 0:
    return jax.config.jax_num_cpu_devices
  match = re.search(r"--xla_force_host_platform_device_count=(\d+)",
                    os.environ.get("XLA_FLAGS", ""))
  return int(match.group(1)) if match else None


def check_devices(n, name: str = "devices") -> int:
  """n as a positive whole number of devices, or ValueError naming the value."""
  if isinstance(n, str):
    try:
      n = int(n.strip())
    except ValueError:
      raise ValueError(f"{name} must be a positive whole number, got {n!r}") from None
  if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 1:
    raise ValueError(f"{name} must be a positive whole number, got {n!r}")
  return int(n)


def use_cpu_cores(n: Optional[int] = None) -> int:
  """Gives JAX one CPU device per core (n devices), before its backend starts.

  `jbai.simulate` then runs one pool of lanes per device, on every core. Call it
  once, right after importing jax and before any JAX computation (any array
  created or function run starts the backend). Trials do not depend on the
  number of devices (`jbai.simulate`).

  It sets `jax_num_cpu_devices` to n and, unless it is already set, PJRT_NPROC
  to 1, which caps XLA:CPU's thread pool at one thread per device: each device
  runs its program on one thread (see the module's docstring for why).

  Args:
    n: the number of CPU devices (default: the count already asked of JAX, by
      JAX_NUM_CPU_DEVICES or XLA_FLAGS's --xla_force_host_platform_device_count,
      else `usable_cores()`, the cores this process may run on within its
      cgroup's CPU quota).

  Returns:
    n.

  Raises:
    RuntimeError: JAX's backend has already started with another number of CPU
      devices (calling it again with the current number does nothing).
    ValueError: n is not a positive whole number.

  Example:
    >>> import jax, jbai
    >>> n = jbai.use_cpu_cores()  # before any JAX computation
  """
  n = (configured_devices() or usable_cores()) if n is None else check_devices(n)
  if backend_started():
    have = len(jax.devices("cpu"))
    if have != n:
      raise RuntimeError(
          f"jbai.use_cpu_cores({n}): JAX has already started with {have} CPU "
          f"device{'s' if have != 1 else ''}; call it right after importing jax, "
          f"before any JAX computation (or set {ENV_DEVICES}={n} for the jbai "
          "command, or JAX_NUM_CPU_DEVICES for a new process)")
    return n
  os.environ.setdefault(ENV_THREADS, "1")
  jax.config.update("jax_num_cpu_devices", n)
  return n
