"""Maxima up to rounding, and the arg-max helpers that break ties among them.

Arms with equal statistics tie. Values within TIE_ULPS units of roundoff of the
maximum count as maxima (`maxima`), never only those equal to it: XLA may round
two copies of one expression differently, and an exact comparison would then make
a trial depend on the program it runs in (docs/design/ties.md).

  maxima(values)                  [K] bool, the maxima up to rounding
  first_index(mask)               the lowest index where a mask holds (K: nowhere)
  running_count(mask)             the cumulative count of a mask (log2 K shifted sums)
  argmax(values), argmin(values)  jnp.argmax / argmin over one copy, in two stages at large K
  or_argmax(index, values)        index, or an arg-max where no maximum was found
  first_max(values)               the lowest index of a maximum
  argmax_ties(u, values)          a maximum chosen by one uniform u (floor(u n)-th of n)
  argmax_random_ties(key, values) the same with u drawn from key
  argmin_random_ties(key, values) a minimum, ties at random
  argmax_random(key, values)      a maximum, ties by the largest of K uniforms
  common_path(fast)               a decorator: under vmap, `fast` where every lane allows it
  tie_key(key, purpose, *more)    the key of one tie-break, from the key of step t
  order_random_ties(key, values)  [K] the arms in decreasing order, equal values at random

Every helper is written with plain max / min reductions where it can: on CPU they
are cheaper under vmap than jnp.argmax and cumsum; the arg-max that remains is
`argmax`, vectorised at large K (docs/design/ties.md).

On a CPU, under `jax.vmap` (a pool of lanes), `argmax`, `argmin` and the
tie-breaks (`argmax_ties`, `argmax_random`, `argmax_random_ties`,
`argmin_random_ties`) first take the common path: one maximum, found by plain
reductions. Where every lane of the batch has it, the variadic arg-max, the
tie-break's ranking and its uniforms do not run (`common_path`); the answers are
the same either way.
"""

import functools

import jax
import jax.numpy as jnp

RECOMMEND = 0x5245434D  # `tie_key` purposes: the recommendation at t (the answer),
ELIMINATE = 0x454C494D  # an elimination at t (SR's rejection, SH's halving, a race's arms)
PULL = 0x50554C4C       # the next arm of a phase among those that have the fewest rewards
TIE_ULPS = 64  # values within this many units of roundoff of the maximum tie with it
SPLIT_AT = 32   # arms from which `argmax` reduces in two stages
BLOCK = 8       # rows of its first stage


def maxima(values: jax.Array) -> jax.Array:
  """[K] bool: the maxima of `values` [K] up to rounding, those within TIE_ULPS
  units of roundoff (relative) of the maximum (exactly the maxima for integer
  and boolean values, and where the maximum is infinite).

  The tolerance is far above the differences between XLA's copies of one
  expression and far below any that a rule's statistics resolve
  (docs/design/ties.md).
  """
  top = jnp.max(values)
  if not jnp.issubdtype(values.dtype, jnp.inexact):  # exact values: exact ties
    return values >= top
  slack = TIE_ULPS * jnp.finfo(values.dtype).eps * jnp.abs(top)
  return values >= top - jnp.where(jnp.isinf(top), 0, slack)


def first_index(mask: jax.Array) -> jax.Array:
  """[] int32 lowest index where `mask` [K] holds, K where it holds nowhere
  (one plain min-reduction)."""
  num = mask.shape[-1]
  return jnp.min(jnp.where(mask, jnp.arange(num, dtype=jnp.int32), num))


def running_count(mask: jax.Array) -> jax.Array:
  """[..., K] int32 number of entries of `mask` [..., K] that hold up to and
  including each index (a cumulative sum over the last axis), as ceil(log2 K)
  shifted sums (Hillis and Steele's scan): XLA:CPU runs cumsum as a
  reduce-window, several times slower for any K (docs/design/ties.md), and
  `lax.associative_scan`'s work-efficient form compiles to more kernels
  (`benchmarks/compile_time.py`)."""
  count = mask.astype(jnp.int32)
  num, shift = count.shape[-1], 1
  while shift < num:
    pad = [(0, 0)] * (count.ndim - 1) + [(shift, 0)]
    count = count + jnp.pad(count[..., :num - shift], pad)
    shift *= 2
  return count


def _pick(a, b):
  """The reducer of an arg-max: of two (value, index) pairs, the larger value (a
  NaN above all), the lower index among equal values (two NaNs are equal), so
  that the order of the reduction does not matter (jnp.argmax's answer)."""
  (av, ai), (bv, bi) = a, b
  a_nan, b_nan = av != av, bv != bv
  larger = (av > bv) | (a_nan & ~b_nan)
  equal = (av == bv) | (a_nan & b_nan)
  return (jnp.where(larger, av, bv),
          jnp.where(larger | (equal & (ai < bi)), ai, bi))


def common_path(fast):
  """Decorates `slow`, a function of one lane's arrays, so that under `jax.vmap` it
  first runs `fast(*args) -> (result, ok)` on every lane, where result equals
  slow(*args) wherever ok holds. Where ok holds on every lane of the batch (one
  predicate over the batch, tested by `lax.cond` outside the per-lane arithmetic),
  the lanes take fast's results and slow does not run; else every lane runs slow.
  A rare case (ties, a NaN, copies of the values that round apart) then costs only
  the steps where some lane meets it. Unbatched it is slow; batched again (vmap of
  a vmap), both paths run. On a CPU only (`lax.platform_dependent`, settled when
  the program is lowered): on an accelerator a branch costs a synchronisation with
  the host and running every lane is cheap, so there the batch runs slow, as a
  plain vmap does. The arguments are cut from differentiation (the results are
  indices)."""
  def decorate(slow):
    pooled = jax.custom_batching.custom_vmap(slow)

    @pooled.def_vmap
    def _batched(axis_size, in_batched, *args):
      args = [a if batched else jnp.broadcast_to(a, (axis_size,) + jnp.shape(a))
              for a, batched in zip(args, in_batched)]

      def on_cpu(*args):
        result, ok = jax.vmap(fast)(*args)
        return jax.lax.cond(jnp.all(ok), lambda: result, lambda: jax.vmap(slow)(*args))

      return jax.lax.platform_dependent(*args, cpu=on_cpu, default=jax.vmap(slow)), True

    @functools.wraps(slow)
    def wrapped(*args):
      return pooled(*map(jax.lax.stop_gradient, args))

    return wrapped

  return decorate


def _argmax_common(values: jax.Array):
  """(the lowest index where values reach their maximum, whether one does): the
  arg-max from two plain reductions, not found for a NaN, or where the copy of the
  values that took the maximum and the copy compared with it differ."""
  index = first_index(values >= jnp.max(values))
  return index, index < values.shape[-1]


@common_path(_argmax_common)
def argmax(values: jax.Array) -> jax.Array:
  """[] int32 the lowest index of the maximum of `values` [K] (a NaN first):
  jnp.argmax, over one copy of the values.

  From SPLIT_AT arms on it reduces in two stages, each a reduction of (value,
  index) pairs with jnp.argmax's reducer: the first K - K mod BLOCK values laid
  out as [BLOCK, K // BLOCK], over the rows, then the columns' maxima and the
  last K mod BLOCK values. The first stage runs along the columns, which
  XLA:CPU vectorises, where jnp.argmax's single reduction runs one element at a
  time (docs/performance.md).
  The answer is jnp.argmax's: each stage's pairs come from one reduction.
  """
  num = values.shape[-1]
  if num < SPLIT_AT:
    return jnp.argmax(values).astype(jnp.int32)
  if values.dtype == jnp.bool_:
    values = values.astype(jnp.int32)
  low = (-jnp.inf if jnp.issubdtype(values.dtype, jnp.inexact)
         else jnp.iinfo(values.dtype).min)
  start = (jnp.asarray(low, values.dtype), jnp.asarray(num, jnp.int32))
  index = jnp.arange(num, dtype=jnp.int32)
  split = BLOCK * (num // BLOCK)
  rows = (values[:split].reshape(BLOCK, -1), index[:split].reshape(BLOCK, -1))
  best = jax.lax.reduce(rows, start, _pick, (0,))
  last = (jnp.concatenate([best[0], values[split:]]), jnp.concatenate([best[1], index[split:]]))
  return jax.lax.reduce(last, start, _pick, (0,))[1]


def argmin(values: jax.Array) -> jax.Array:
  """[] int32 the lowest index of the minimum of `values` [K] (a NaN first):
  jnp.argmin, as `argmax` of the values in reverse order (negated; integers
  complemented, which cannot overflow)."""
  return argmax(-values if jnp.issubdtype(values.dtype, jnp.inexact) else ~values)


def or_argmax(index: jax.Array, values: jax.Array) -> jax.Array:
  """[] int32 `index`, or, where it is K (no arm was found among the maxima: the
  copy of `values` that took the maximum and the copy compared with it differ by
  more than `maxima`'s tolerance, which catastrophic cancellation can cause), the
  arg-max of one copy of `values`: a maximum of the values, never a fixed arm."""
  return jnp.where(index < values.shape[-1], index, argmax(values))


def first_max(values: jax.Array) -> jax.Array:
  """[] int32 lowest index of a maximum of `values` [K], with plain reductions
  (cheaper on CPU than jnp.argmax).

  For values without structural ties (posterior draws, Gumbel-perturbed
  masses) the comparison is exact. Where XLA:CPU's copies of the values
  disagree so that none reaches the maximum (see `maxima`), it is the lowest
  index of the maxima up to rounding instead.
  """
  exact, found = _argmax_common(values)  # not found where no copy reaches the max
  return jnp.where(found, exact, or_argmax(first_index(maxima(values)), values))


def _single_maximum(_, values: jax.Array):
  """(the maximum's index, whether it is the only one, up to rounding): the common
  path of the tie-breaks, whose random draw (the first argument) only matters
  among several maxima."""
  is_max = maxima(values)
  index = first_index(is_max)
  return index, (jnp.sum(is_max) == 1) & (index < values.shape[-1])


@common_path(_single_maximum)
def argmax_ties(u: jax.Array, values: jax.Array) -> jax.Array:
  """Index of a maximum of `values` (up to rounding: `maxima`), ties broken
  uniformly by one uniform u in [0, 1).

  Among the n maxima (in index order) it returns the floor(u * n)-th, so a single
  random number serves any number of ties (without a tie the rank floor(u * 1) is
  0: the single maximum, whatever u).
  """
  is_max = maxima(values)
  rank = jnp.floor(u * jnp.sum(is_max)).astype(jnp.int32)
  return or_argmax(first_index(is_max & (running_count(is_max) > rank)), values)


@common_path(_single_maximum)
def argmax_random_ties(key: jax.Array, values: jax.Array) -> jax.Array:
  """Index of a maximum of `values`, ties broken uniformly at random (on a CPU under
  vmap, the uniform is drawn only at steps where some lane has a tie: `common_path`)."""
  return argmax_ties(jax.random.uniform(key), values)


@common_path(lambda key, values: _single_maximum(key, -values))
def argmin_random_ties(key: jax.Array, values: jax.Array) -> jax.Array:
  """Index of a minimum of `values`, ties broken uniformly at random."""
  return argmax_ties(jax.random.uniform(key), -values)


@common_path(_single_maximum)
def argmax_random(key: jax.Array, values: jax.Array) -> jax.Array:
  """[] int32 index of a maximum of `values` [K] (up to rounding: `maxima`),
  ties broken uniformly at random.

  Among the maxima it takes the one with the largest of K uniforms: plain max /
  min reductions, with no cumsum (docs/design/ties.md). The top-two rules use it.
  """
  u = jax.random.uniform(key, values.shape, jnp.result_type(float))
  is_max = maxima(values)
  w = jnp.where(is_max, u, -1)
  return or_argmax(first_index(is_max & (w >= jnp.max(w))), values)


def tie_key(key: jax.Array, purpose: int, *more) -> jax.Array:
  """The key of one tie-break at step t: fold_in(key, purpose), then each of
  `more` (a phase or a round: several eliminations at one t) folded in.

  `key` is the key of step t that the rule's `select` gets (`jbai.core.lane.rule_key`);
  `purpose` (RECOMMEND, ELIMINATE) keeps the tie-breaks apart from each other and
  from the rule's own draws, which split or fold small integers into that key.
  A tie-break so depends on the trial, t and its purpose alone: `select` and
  `recommend` at the same t, with the same statistics, reach the same elimination,
  and a recommendation at a checkpoint does not depend on the other checkpoints.
  """
  key = jax.random.fold_in(key, purpose)
  for n in more:
    key = jax.random.fold_in(key, jnp.asarray(n).astype(jnp.uint32))
  return key


def order_random_ties(key: jax.Array, values: jax.Array) -> jax.Array:
  """[K] int32 the indices of `values` [K] in decreasing order, equal values in a
  uniformly random order (one uniform per arm, drawn from `key`, as the second sort
  key; the index third). Ties are exact here, not `maxima`'s: a sort needs a
  transitive order, and the averages it ranks (Sequential Halving's, a round's
  rewards over equal counts) tie exactly where they tie at all."""
  u = jax.random.uniform(key, values.shape)
  index = jnp.arange(values.shape[-1], dtype=jnp.int32)
  return jax.lax.sort((-values, u, index), num_keys=2)[2]


def select(rows: jax.Array, values: jax.Array) -> jax.Array:
  """[R] the values that one-hot rows [R, K] pick: a masked sum, exact on every
  platform (a matrix product may round float32 on an accelerator), and no gather
  (slow under vmap on a CPU)."""
  return jnp.sum(jnp.where(rows, values[None, :], 0), axis=-1)

