"""Choosing a maximum: ties up to rounding (`maxima`), an index always in range
(`lowest`), and the rules' tie-breaking helpers built on them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jbai
from jbai import ties
from jbai.core.inputs import raw_key
from jbai.core.lane import rule_key
from jbai.random import prng
from jbai.rules.top_two import tci_challenger
from jbai.state import arm_stats
from jbai.ties import (TIE_ULPS, argmax_random, argmax_ties, first_index, first_max,
                             maxima, or_argmax, running_count)


def test_first_index_and_its_fallback_to_an_argmax():
  assert int(first_index(jnp.array([False, True, True]))) == 1
  assert int(first_index(jnp.array([False, False, False]))) == 3
  values = jnp.array([0.2, 0.9, 0.5])
  assert int(or_argmax(jnp.int32(0), values)) == 0
  assert int(or_argmax(jnp.int32(3), values)) == 1  # nowhere: the arg-max, not K - 1


@pytest.mark.parametrize("num", [5, ties.SPLIT_AT - 1, ties.SPLIT_AT, ties.SPLIT_AT + 1,
                                 ties.BLOCK * 13, 1001])
def test_argmax_and_argmin_are_jnp_s(num):
  """The two-stage arg-max (from SPLIT_AT arms on) gives jnp.argmax's index: the
  lowest among equal maxima, a NaN first, ties of -inf and of integers; under
  jit and vmap too."""
  rng = np.random.default_rng(num)
  rows = [rng.normal(size=num), rng.integers(0, 3, size=num).astype(float),
          np.full(num, -np.inf), np.where(rng.random(num) < 0.5, np.inf, -np.inf),
          np.where(rng.random(num) < 0.02, np.nan, rng.normal(size=num)),
          np.full(num, np.nan)]
  rows[2][rng.integers(num)] = 0.0
  # One program per dtype: the two helpers and jnp's, side by side.
  both = jax.jit(lambda v: (ties.argmax(v), jnp.argmax(v), ties.argmin(v), jnp.argmin(v)))
  for values in [jnp.asarray(r, dtype) for r in rows for dtype in (jnp.float32, jnp.float16)] + [
      jnp.asarray(rng.integers(-3, 3, size=num), jnp.int32),
      jnp.asarray(np.full(num, np.iinfo(np.int32).max), jnp.int32),
      jnp.asarray(rng.random(num) < 0.1)]:
    top, top_jnp, bottom, bottom_jnp = map(int, both(values))
    assert top == top_jnp, values
    assert bottom == bottom_jnp, values
  batch = jnp.asarray(np.stack([rows[0], rows[1], rows[4]]), jnp.float32)
  np.testing.assert_array_equal(jax.jit(jax.vmap(ties.argmax))(batch), jnp.argmax(batch, -1))
  np.testing.assert_array_equal(jax.jit(jax.vmap(ties.argmin))(batch), jnp.argmin(batch, -1))


@pytest.mark.parametrize("shape", [(1,), (5,), (33,), (3, 7)])
def test_running_count_is_the_cumulative_count(shape):
  mask = np.random.default_rng(sum(shape)).random(shape) < 0.5
  count = running_count(jnp.asarray(mask))
  assert count.dtype == jnp.int32
  np.testing.assert_array_equal(count, np.cumsum(mask, axis=-1))
  batched = jax.jit(jax.vmap(running_count))(jnp.asarray(mask).reshape(1, *shape))
  np.testing.assert_array_equal(batched[0], np.cumsum(mask, axis=-1))


def test_when_no_maximum_is_found_the_helpers_pick_an_argmax(monkeypatch):
  """Where XLA's copies of the values differ by more than the tolerance (float32
  Bernoulli costs under cancellation), `maxima` holds nowhere: the helpers then
  pick an arg-max of the values, not the last arm (which made TCB pull arm K - 1
  at every such step)."""
  monkeypatch.setattr(ties, "maxima", lambda values: jnp.zeros(values.shape, bool))
  values = jnp.array([0.2, 0.9, 0.5, 0.1])
  key = jax.random.key(0)
  assert int(argmax_ties(jnp.float32(0.7), values)) == 1
  assert int(argmax_random(key, values)) == 1
  assert int(ties.argmax_random_ties(key, values)) == 1
  assert int(ties.argmin_random_ties(key, values)) == 3


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_maxima_tie_values_equal_up_to_rounding(dtype):
  top = jnp.asarray(-3.114605745656632, dtype)
  eps = jnp.finfo(dtype).eps
  below = lambda k: top - k * eps * jnp.abs(top)
  values = jnp.stack([below(TIE_ULPS // 2), top, below(2), below(4 * TIE_ULPS), jnp.asarray(-jnp.inf, dtype)])
  np.testing.assert_array_equal(maxima(values), [True, True, True, False, False])
  np.testing.assert_array_equal(maxima(jnp.full(3, -jnp.inf, dtype)), [True] * 3)
  np.testing.assert_array_equal(maxima(jnp.array([0.0, 0.0, -1e-30], dtype)), [True, True, False])
  np.testing.assert_array_equal(maxima(jnp.array([1.0, jnp.inf, jnp.inf], dtype)), [False, True, True])
  np.testing.assert_array_equal(maxima(jnp.array([3, 7, 7], jnp.int32)), [False, True, True])


def test_tie_breaking_is_uniform_over_the_maxima():
  """Three tied maxima of five values: each helper picks each of them with
  probability 1/3 (chi-square goodness of fit over 6,000 keys, rejected at
  p < 1e-4), and never another arm."""
  values = jnp.array([1.0, 2.0, 0.5, 2.0, 2.0])
  keys = jax.random.split(jax.random.key(0), 6000)
  picks = {
      "argmax_random": jax.vmap(lambda k: argmax_random(k, values))(keys),
      "argmax_ties": jax.vmap(lambda k: argmax_ties(jax.random.uniform(k), values))(keys),
  }
  for name, arms in picks.items():
    counts = np.bincount(np.asarray(arms), minlength=5)
    assert counts[[0, 2]].sum() == 0, name
    assert stats.chisquare(counts[[1, 3, 4]]).pvalue > 1e-4, (name, counts)


def test_the_common_path_gives_every_lane_its_own_answer():
  """Under vmap, `argmax`, `argmin` and the tie-breaks take their common path (one
  maximum, plain reductions, no draw) where every lane allows it, else every lane
  runs the full helper: either way each lane's answer is the unbatched call's.
  Pools with one maximum per lane, then with a tie, a NaN or infinities in one
  lane; under jit, vmap of vmap, scan, and grad of a value the index selects."""
  rng = np.random.default_rng(7)
  plain = rng.normal(size=(7, 5))
  odd = [[1.0, 3.0, 3.0, 0.0, 3.0], [np.nan, 1.0, 2.0, 0.0, 1.0], [-np.inf] * 5,
         [0.0, np.inf, 1.0, np.inf, 2.0]]
  pools = [plain] + [np.concatenate([plain[:-1], [row]]) for row in odd]
  pools = jnp.asarray(np.stack(pools), jnp.float32)  # [pool, lane, arm]
  u = jnp.asarray(rng.random(7), jnp.float32)
  keys = jax.random.split(jax.random.key(2), 7)
  helpers = {"argmax": lambda u, v: ties.argmax(v), "argmin": lambda u, v: ties.argmin(v),
             "argmax_ties": argmax_ties, "argmax_random": argmax_random,
             "argmax_random_ties": ties.argmax_random_ties,
             "argmin_random_ties": ties.argmin_random_ties}
  for name, helper in helpers.items():
    draws = keys if "random" in name else u
    one = jax.jit(helper)  # a lane alone: the full helper
    expected = [[int(one(d, v)) for d, v in zip(draws, pool)] for pool in pools]
    twice = jax.jit(jax.vmap(jax.vmap(helper), in_axes=(None, 0)))  # pools of pools
    scanned = jax.jit(lambda d, p: jax.lax.scan(lambda c, x: (c, jax.vmap(helper)(d, x)), 0, p)[1])
    np.testing.assert_array_equal(scanned(draws, pools), expected, name)
    np.testing.assert_array_equal(twice(draws, pools), expected, name)
  # The ties of the odd lane are broken by its own uniform, whatever the pool.
  draw = lambda k: jax.vmap(argmax_ties)(jnp.full(7, jax.random.uniform(k)), pools[1])[-1]
  draws = jax.jit(jax.vmap(draw))(jax.random.split(jax.random.key(1), 300))
  assert set(np.unique(draws).tolist()) == {1, 2, 4}
  select = lambda x: jnp.sum(jax.vmap(lambda v: v[ties.argmax(v)])(x))
  grad = jax.grad(select)(pools[0])
  np.testing.assert_array_equal(grad, np.eye(5)[plain.argmax(-1)])
  # On a GPU the pool runs the full helper: the common path's branch is the CPU's.
  traced = jax.jit(jax.vmap(argmax_ties)).trace(u, pools[0])
  branches = {p: traced.lower(lowering_platforms=(p,)).as_text().count("stablehlo.case")
              for p in ("cpu", "cuda")}
  assert branches["cuda"] < branches["cpu"], branches


def test_first_max_is_the_lowest_index_of_the_maximum():
  assert int(first_max(jnp.array([0.5, 2.0, 2.0, -1.0]))) == 1
  assert int(first_max(jnp.array([0.5, 2.0, 2.0 + 1e-6, -1.0]))) == 2
  one_ulp = jnp.nextafter(jnp.float32(2.0), jnp.float32(3.0))
  assert int(first_max(jnp.array([2.0, one_ulp], jnp.float32))) == 1  # exact, not up to rounding
  assert int(first_max(jnp.array([False, False, True]))) == 2
  assert int(first_max(-jnp.array([3, 1, 1], jnp.int32))) == 1


def test_tci_challenger_compiled_is_the_eager_one():
  """A state where XLA:CPU (AVX-512) computed the TCI values of the maximum
  differently in two kernels, so that no arm compared >= their maximum and the
  challenger came out as the leader (arm 0), in jit but not eagerly."""
  with jax.enable_x64(True):
    family = jbai.families.BUILTIN["bernoulli"]()
    st = arm_stats(family, jnp.array([14, 12, 5], jnp.int32),
                   jnp.array([[10.0], [6.0], [1.0]]), jnp.asarray(31, jnp.int32))
    raw = raw_key(jax.random.key(3))
    lane_key = jax.random.key_data(jax.random.fold_in(prng.wrap(raw), 0))

    def challenger(lane_key, st):
      k_rule = rule_key(lane_key, st.t)
      k_chal = jax.random.split(k_rule, 3)[2]
      return tci_challenger(k_chal, family, st, jnp.asarray(0), True)

    assert int(challenger(lane_key, st)) == 1
    assert int(jax.jit(challenger)(lane_key, st)) == 1


@pytest.mark.slow  # compiles for several seconds: the fast tier stays within 5 min cold
def test_order_random_ties_sorts_and_shuffles_each_tie_uniformly():
  """Distinct values come in decreasing order; the three tied at 2.0 come first
  in each of their 3! orders about equally often (chi-square over 6,000 keys,
  rejected at p < 1e-4), then 1.0, then the two tied at 0.5 either way."""
  values = jnp.array([1.0, 2.0, 0.5, 2.0, 2.0, 0.5])
  keys = jax.random.split(jax.random.key(1), 6000)
  orders = np.asarray(jax.vmap(lambda k: ties.order_random_ties(k, values))(keys))
  assert (np.sort(orders[:, :3], axis=1) == [1, 3, 4]).all() and (orders[:, 3] == 0).all()
  assert (np.sort(orders[:, 4:], axis=1) == [2, 5]).all()
  _, counts = np.unique(orders[:, :3], axis=0, return_counts=True)
  assert len(counts) == 6 and stats.chisquare(counts).pvalue > 1e-4, counts
  np.testing.assert_array_equal(ties.order_random_ties(keys[0], jnp.arange(5.0)),
                                [4, 3, 2, 1, 0])


def test_tie_keys_depend_on_the_purpose_and_the_round_alone():
  """tie_key is a function of (key, purpose, more): the same arguments the same
  key, another purpose or round another."""
  key = rule_key(raw_key(jax.random.key(2)), jnp.asarray(7))
  data = lambda *a: tuple(np.asarray(jax.random.key_data(ties.tie_key(key, *a))).ravel())
  assert data(ties.RECOMMEND) == data(ties.RECOMMEND)
  assert len({data(ties.RECOMMEND), data(ties.ELIMINATE), data(ties.ELIMINATE, 1),
              data(ties.ELIMINATE, 2)}) == 4


@pytest.mark.slow  # compiles for several seconds: the fast tier stays within 5 min cold
def test_a_top_m_answer_at_a_budget_breaks_its_edge_at_random():
  """top_m.answer_random_ties: the top m where the means are distinct at the edge
  (the `answer` of the problem), and, with three means tied across the edge of the
  top 2, the first arm plus each of the tied arms about equally often (chi-square,
  p < 1e-4)."""
  from jbai.problems.top_m import answer_random_ties
  keys = jax.random.split(jax.random.key(3), 3000)
  distinct = jnp.array([0.1, 0.7, 0.3, 0.9])
  np.testing.assert_array_equal(answer_random_ties(keys[0], distinct, 2),
                                jbai.problems.top_m(2).answer(distinct))
  tied = jnp.array([0.9, 0.5, 0.1, 0.5, 0.5])
  sets = np.asarray(jax.vmap(lambda k: answer_random_ties(k, tied, 2))(keys))
  assert sets[:, 0].all() and (sets.sum(1) == 2).all() and not sets[:, 2].any()
  assert stats.chisquare(sets[:, [1, 3, 4]].sum(0)).pvalue > 1e-4
