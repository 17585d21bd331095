"""The simulation engine: determinism, lane recycling, the step cap, delta vectors,
compilation count, input validation."""

import chex
import jax
import numpy as np
import pytest

import jbai
from jbai.core import pool
from jbai.host import programs
from jbai.host import trace as trace_lib

GAUSS = [1.0, 0.5, 0.4]


def run(**kw):
  args = dict(key=jax.random.key(3), family=jbai.families.gaussian(), means=GAUSS,
              rule=jbai.rules.tcb(), delta=0.05, n_trials=40)
  args.update(kw)
  return jbai.simulate(**args)


def test_same_key_same_result_for_any_pool_and_chunk():
  a = run(lanes=7, chunk=13)
  b = run()  # the default pool (16 lanes) and chunk: one program with the tests below
  c = run(lanes=3, chunk=64)
  for other in (b, c):
    np.testing.assert_array_equal(a.tau, other.tau)
    np.testing.assert_array_equal(a.answer, other.answer)
    np.testing.assert_array_equal(a.counts, other.counts)
  assert not np.array_equal(a.tau, run(key=jax.random.key(4)).tau)


def test_counts_sum_to_tau_and_answers_are_arms():
  res = run(rule=jbai.rules.itcb())
  assert res.tau.shape == (40,)
  np.testing.assert_array_equal(res.counts.sum(-1), res.tau)
  assert np.all((res.answer >= 0) & (res.answer < 3))
  assert np.all(res.tau >= 3)  # every arm is pulled before the GLLR can be > 0


def test_step_cap_is_counted_not_dropped():
  res = run(max_steps=50, delta=1e-12, n_trials=25)
  assert res.hit_cap.all() and res.tau.shape == (25,)
  np.testing.assert_array_equal(res.tau, 50)
  s = res.summary[0]
  assert s["hit_cap"] == 25 and s["error_rate"] == 1.0 and s["wrong"] == 0


def test_delta_vector_matches_separate_runs():
  deltas = [0.2, 1e-2, 1e-4]
  multi = run(delta=deltas)
  assert multi.tau.shape == (40, 3)
  assert np.all(np.diff(multi.tau, axis=1) >= 0)  # smaller delta stops later
  for d, dlt in enumerate(deltas):
    single = run(delta=dlt)
    np.testing.assert_array_equal(multi.tau[:, d], single.tau)
    np.testing.assert_array_equal(multi.answer[:, d], single.answer)


def test_batch_of_instances():
  res = run(means=[[1.0, 0.5, 0.4], [0.2, 0.9, 0.0]], n_trials=30)
  assert res.tau.shape == (2, 30) and res.counts.shape == (2, 30, 3)
  assert res.correct[1].mean() > 0.8
  assert [s["instance"] for s in res.summary] == [0, 1]
  # the second instance's best arm is arm 1: it gets the most samples
  assert np.mean(np.argmax(res.counts[1], -1) == 1) > 0.8


def test_one_compilation_per_rule_family_k_threshold(monkeypatch):
  programs.chunk_program.cache_clear()
  build = pool.build_chunk
  monkeypatch.setattr(pool, "build_chunk",
                      lambda *a: chex.assert_max_traces(build(*a), n=1))
  run(means=GAUSS, delta=0.1, n_trials=10, lanes=8)
  # new means, delta, n_trials, max_steps and key: no new trace
  run(means=[0.3, 0.9, 0.1], delta=0.01, n_trials=23, lanes=8, max_steps=5000,
      key=jax.random.key(9))
  programs.chunk_program.cache_clear()


def test_beta_is_a_runtime_value(monkeypatch):
  """A top-two rule at two betas runs one compiled program, and each beta gives
  the results of a run compiled for it alone."""
  kw = dict(delta=0.05, n_trials=30, lanes=8)
  rule_a, rule_b = jbai.rules.ebtc(beta=0.2), jbai.rules.ebtc(beta=0.8)
  fresh = []
  for rule in (rule_a, rule_b):
    programs.chunk_program.cache_clear()
    fresh.append(run(**dict(kw, rule=rule)))
  programs.chunk_program.cache_clear()
  build = pool.build_chunk
  monkeypatch.setattr(pool, "build_chunk",
                      lambda *a: chex.assert_max_traces(build(*a), n=1))
  a, b = run(**dict(kw, rule=rule_a)), run(**dict(kw, rule=rule_b))
  assert programs.chunk_program.cache_info().misses == 1
  for shared, alone in zip((a, b), fresh):
    np.testing.assert_array_equal(shared.tau, alone.tau)
    np.testing.assert_array_equal(shared.counts, alone.counts)
  # beta is the leader's share: the best arm gets more pulls at beta = 0.8
  share = lambda r: np.mean(r.counts[:, 0] / r.counts.sum(-1))
  assert share(b) > share(a) + 0.2
  programs.chunk_program.cache_clear()


def test_trace_beta_is_a_runtime_value(monkeypatch):
  """`trace` of a top-two rule at two betas traces its program once."""
  traced = []
  gamma = trace_lib.gamma
  monkeypatch.setattr(trace_lib, "gamma", lambda *a: traced.append(1) or gamma(*a))
  trace_lib._advance_program.cache_clear()
  fam = jbai.families.gaussian()
  tr = [jbai.trace(jax.random.key(3), fam, GAUSS, jbai.rules.ebtc(beta=beta),
                   horizon=200, n_trials=8, n_points=3) for beta in (0.2, 0.8)]
  assert len(traced) == 1
  assert tr[1].top_share[:, -1].mean() > tr[0].top_share[:, -1].mean() + 0.2
  trace_lib._advance_program.cache_clear()


@pytest.mark.parametrize("kwargs, match", [
    ({"delta": 1.0}, "delta must be in"),
    ({"delta": 0.0}, "delta must be in"),
    ({"means": [1.0, 1.0, 0.2]}, "tie for the best arm"),
    ({"means": [1.0]}, "at least two arms"),
    ({"means": [float("nan"), 0.0]}, "NaN"),
    ({"family": jbai.families.bernoulli(), "means": [1.5, 0.2]}, "outside Theta"),
    ({"rule": "nope"}, "unknown rule 'nope'"),
    ({"threshold": "nope"}, "unknown threshold 'nope'"),
    ({"family": "nope"}, "unknown family 'nope'"),
])
def test_bad_input_names_the_value(kwargs, match):
  with pytest.raises(ValueError, match=match):
    run(**kwargs)


def test_lane_recycling_keeps_lanes_busy():
  res = run(n_trials=200, lanes=16, chunk=256)
  assert res.stats["utilisation"] > 0.85
  plain = run(n_trials=200, lanes=200, chunk=256)
  assert plain.stats["utilisation"] < res.stats["utilisation"]


def test_shrinking_the_pool_for_the_tail_changes_no_result():
  shrunk = run(n_trials=100, lanes=32, chunk=16, shrink=0.0)
  assert shrunk.stats["pool_sizes"] == [32, 32 // pool.SHRINK]
  fixed = run(n_trials=100, lanes=32, chunk=16, shrink=None)
  assert fixed.stats["pool_sizes"] == [32]
  for field in ("tau", "answer", "counts", "steps"):
    np.testing.assert_array_equal(getattr(shrunk, field), getattr(fixed, field))
  assert shrunk.stats["utilisation"] > fixed.stats["utilisation"]


def test_default_pools_are_powers_of_two_and_pools_of_a_few_lanes_stay():
  """Runs of nearby sizes share one compiled program (4 trials a lane on a CPU, 2
  on an accelerator, rounded up to a power of two), and a tail's pools are those
  of smaller runs; a pool of at most SHRINK lanes does not shrink."""
  cpu = {1: 8, 32: 8, 33: 8, 60: 16, 100: 32, 1000: 256, 10**6: 256}
  assert {n: pool.default_lanes(n, platform="cpu") for n in cpu} == cpu
  assert pool.default_lanes(1000, 2, platform="cpu") == 128
  assert pool.default_lanes(60, platform="gpu") == 32
  assert pool.default_lanes(10**6, platform="gpu") == 16384
  sizes = {8: [8], 16: [16, 4], 36: [36, 4], 64: [64, 8], 256: [256, 32, 4]}
  assert {n: pool.pool_sizes(n) for n in sizes} == sizes


def test_moving_the_tail_to_a_smaller_pool_compiles_nothing():
  # The tail's pool is compacted on the host (numpy). With both pools' programs
  # compiled, a run that moves its tail from one to the other compiles nothing
  # (eager JAX ops there compiled some thirty programs per new pool shape).
  lanes, small = 36, pool.smaller_pool(36)  # 4: the last pool
  for n in (lanes, small):
    run(n_trials=100, lanes=n, chunk=16, shrink=None)
  compiles = []

  def listen(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
      compiles.append(duration)

  jax.monitoring.register_event_duration_secs_listener(listen)
  try:
    moved = run(n_trials=100, lanes=lanes, chunk=16, shrink=0.0)
  finally:
    jax.monitoring.unregister_event_duration_listener(listen)
  assert moved.stats["pool_sizes"] == [lanes, small]
  assert compiles == []


def test_trace_matches_simulate_trajectories():
  # Without stopping, the counts at time t are those of the same trial in simulate
  # (same key), as long as it has not stopped: compare at a time before any stop.
  res = run(n_trials=8, delta=1e-30, max_steps=64)
  tr = jbai.trace(jax.random.key(3), jbai.families.gaussian(), GAUSS, jbai.rules.tcb(),
                  horizon=64, n_trials=8, n_points=3)
  assert tr.times[-1] == 64
  np.testing.assert_allclose(tr.proportions[:, -1] * 64, res.counts)
  np.testing.assert_allclose(tr.proportions.sum(-1), 1.0, rtol=1e-6)


def test_two_devices_give_the_same_results(tmp_path):
  """Sharding the lanes over 2 (forced host) devices changes no result."""
  import subprocess
  import sys
  code = (
      "import jax, numpy as np, jbai\n"
      "assert jax.local_device_count() == 2, jax.devices()\n"
      "res = jbai.simulate(jax.random.key(3), jbai.families.gaussian(), [1.0, 0.5, 0.4],"
      " jbai.rules.tcb(), 0.05, 40, lanes=5)\n"
      "assert res.stats['devices'] == 2\n"
      "small = jbai.simulate(jax.random.key(3), jbai.families.gaussian(), [1.0, 0.5, 0.4],"
      " jbai.rules.tcb(), 0.05, 40, lanes=32, chunk=16, shrink=0.0)\n"
      "assert small.stats['pool_sizes'] == [32, 4], small.stats['pool_sizes']\n"
      "np.testing.assert_array_equal(small.tau, res.tau)\n"
      f"np.savez({str(tmp_path / 'two.npz')!r}, tau=res.tau, counts=res.counts)\n")
  env = dict(__import__("os").environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
             JAX_ENABLE_X64="1")
  subprocess.run([sys.executable, "-c", code], check=True, env=env)
  two = np.load(tmp_path / "two.npz")
  one = run(lanes=11)
  np.testing.assert_array_equal(two["tau"], one.tau)
  np.testing.assert_array_equal(two["counts"], one.counts)


def test_two_hosts_with_jax_distributed_give_the_same_results(tmp_path):
  """Two processes joined by jax.distributed (one CPU device each, on loopback)
  shard the lanes over both hosts' devices; each receives every result."""
  import socket
  import subprocess
  import sys
  with socket.socket() as sock:
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
  code = (
      "import sys, jax, numpy as np\n"
      f"jax.distributed.initialize(coordinator_address='127.0.0.1:{port}',"
      " num_processes=2, process_id=int(sys.argv[1]))\n"
      "import jbai\n"
      "res = jbai.simulate(jax.random.key(3), jbai.families.gaussian(), [1.0, 0.5, 0.4],"
      " jbai.rules.tcb(), 0.05, 40, lanes=5, devices=jax.devices())\n"
      "assert res.stats['devices'] == 2\n"
      f"np.save({str(tmp_path)!r} + f'/host{{sys.argv[1]}}.npy', res.tau)\n")
  env = dict(__import__("os").environ, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
  procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], env=env)
           for i in range(2)]
  assert [p.wait(timeout=300) for p in procs] == [0, 0]
  one = run(lanes=11)
  for i in range(2):
    np.testing.assert_array_equal(np.load(tmp_path / f"host{i}.npy"), one.tau)


@pytest.mark.parametrize("platform", ["cpu", "gpu"])
def test_an_observation_adds_to_its_arm_alone_on_every_platform(monkeypatch, platform):
  """`add_to_arm` is a scatter on a CPU and a one-hot update elsewhere: the same
  values, batched or not, for counts and for statistics."""
  import jax.numpy as jnp
  from jbai.state import add_to_arm
  monkeypatch.setattr(jax, "default_backend", lambda: platform)
  x = jnp.arange(15.0).reshape(5, 3)
  want = np.asarray(x).copy()
  want[2] += [0.5, -1.0, 2.0]
  np.testing.assert_array_equal(add_to_arm(x, jnp.int32(2), jnp.array([0.5, -1.0, 2.0])), want)
  counts = jnp.zeros((4, 5), jnp.int32)
  arms = jnp.array([0, 4, 4, 1])
  got = jax.jit(jax.vmap(lambda c, a: add_to_arm(c, a, jnp.int32(3))))(counts, arms)
  np.testing.assert_array_equal(got, 3 * np.eye(5, dtype=np.int32)[np.asarray(arms)])
  for bad in (-1, 5):  # an arm out of range changes nothing, on either path
    np.testing.assert_array_equal(add_to_arm(x, jnp.int32(bad), jnp.ones(3)), x)
