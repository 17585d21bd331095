"""A block of pulls in a lane: its identity, its total, and the sum of any prefix.

A rule with `pulls` (`jbai.rules.base`) asks for L rewards of one arm in a row.
On a family that draws a block's summed statistics in one go and splits them by
their conditional law (`Family.sample_block`, `Family.split_block`), the lane
keeps the block (`Block`): its arm, its first reward's number in the arm's stream,
its uncut length L, its total drawn from that first reward's key, and the arm's
statistics before it. A step may take any part of it (up to a checkpoint, or one
reward with scores): the arm's statistics are then its statistics before the
block plus `prefix(q)`, the sum of the block's first q rewards, read off the
total by halving splits. `prefix` is a function of the trial's key, the block and
q alone, so where the block is cut changes nothing (issue 79).

Why exact. Given that the L rewards of a block sum to s, the first m of them sum,
for Bernoulli rewards, to Hypergeometric(L, s, m), and for Gaussian rewards of
variance sigma^2 to N(s m / L, sigma^2 m (L - m) / L), whatever the mean: splitting
each half again by the same law given its own sum builds the rewards' joint law,
iid with the arm's law, one level at a time.

Shares. A rule with a `schedule` (its counts fixed in advance: uniform) takes, in
a run that stops at checkpoints (a run to a budget T), each arm's share of T as
one block from its first reward (`share`), kept nowhere: a step draws the block's
total again from that reward's key and reads it up to the arm's share of the next
checkpoint. The rewards are then a function of the trial's key, T and the arm
alone, so that checkpoints, lanes, resumes and scores change nothing; they are
not the rewards drawn one by one (`jbai.simulate`'s), which have the same law.
"""

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from jbai.families.base import Family
from jbai.state import count_dtype


class Block(NamedTuple):
  """The block of pulls a lane is taking (`takes_blocks`; all zeros before the first).

  The block holds the `length` rewards of arm `arm` numbered first, ...,
  first + length - 1 in its stream; `total` is their summed statistics and `base`
  the arm's statistics before them. It is pending while the arm's count is below
  first + length.
  """

  arm: jax.Array      # [] int32
  first: jax.Array    # [] count_dtype(), the arm's count when the block began
  length: jax.Array   # [] count_dtype(), its rewards (0: no block yet)
  total: jax.Array    # [S] float, their summed sufficient statistics
  base: jax.Array     # [S] float, the arm's summed statistics before them


def takes_blocks(family: Family, rule) -> bool:
  """Whether a lane takes the rule's blocks of pulls (`Rule.pulls`) through its
  `Block`: the family draws a block's statistics in one go and splits them."""
  return (rule.pulls is not None and family.sample_block is not None
          and family.split_block is not None)


def empty_block(family: Family, dtype) -> Block:
  """The block of a lane before its first (length 0: never pending)."""
  zero = jnp.zeros((), count_dtype())
  stat = jnp.zeros((family.stat_dim,), dtype)
  return Block(arm=jnp.zeros((), jnp.int32), first=zero, length=zero, total=stat, base=stat)


def pending(block: Block, count: jax.Array) -> jax.Array:
  """[] bool, whether a lane is inside `block`, its arm having `count` rewards."""
  return count - block.first < block.length


def prefix(family: Family, key_at: Callable[[jax.Array], jax.Array], block: Block,
           q: jax.Array) -> jax.Array:
  """[S] the summed statistics of the block's first q rewards, 0 <= q <= length.

  The block [0, L) is split in halves top-down: a part [lo, hi) whose rewards sum
  to s splits at mid = lo + (hi - lo) // 2, its left half's sum drawn from its
  conditional law given s (`Family.split_block`) under key_at(first + mid), the
  key of the reward that the right half begins with (inside the block, and the
  middle of one part only), and the descent goes on in the half that holds q
  until q is an end of the part. So the sum of the first q rewards is a function
  of the trial, the block and q alone, whatever other prefixes were read, and
  q = L gives the block's total itself, with no split.

  Args:
    family: the reward family (with `split_block`).
    key_at: n -> the key of the arm's n-th reward (`jbai.core.lane.reward_key`).
    block: the block.
    q: [] count_dtype(), the rewards read.
  """
  def inside(carry):
    lo, hi, _, _ = carry
    return (q > lo) & (q < hi)

  def halve(carry):
    lo, hi, s, acc = carry
    mid = lo + (hi - lo) // 2
    left = family.split_block(key_at(block.first + mid), hi - lo, s, mid - lo)
    right = q >= mid
    return (jnp.where(right, mid, lo), jnp.where(right, hi, mid),
            jnp.where(right, s - left, left), jnp.where(right, acc + left, acc))

  _, hi, s, acc = jax.lax.while_loop(
      inside, halve, (jnp.zeros_like(block.length), block.length, block.total,
                      jnp.zeros_like(block.total)))
  return jnp.where(q >= hi, acc + s, acc)


def takes_shares(family: Family, rule, until) -> bool:
  """Whether a lane takes the rule's shares of the budget as blocks (`share`): a
  run that stops at checkpoints (`until`, a run to a budget), a rule with a
  `schedule` and no `pulls`, and a family that draws and splits blocks."""
  return (until is not None and rule.schedule is not None and rule.pulls is None
          and family.sample_block is not None and family.split_block is not None)


def share(family: Family, rule, key_at: Callable[[jax.Array], jax.Array], mean: jax.Array,
          arm: jax.Array, counts: jax.Array, t_next: jax.Array, horizon: jax.Array,
          one: bool, dtype) -> tuple:
  """(m, row): the m rewards that `arm` takes now, up to its share of the next
  checkpoint t_next (with `one`, a run with scores: one reward), and [S] its
  summed statistics after them.

  The block is the arm's share of the budget, L = schedule(arm, T, K) rewards
  from its first, its total drawn under key_at(0) (`Family.sample_block`); the
  row is the sum of its first q = schedule(arm, t_next, K) rewards (`prefix`),
  the same for every run to T. It departs from drawing reward by reward in the
  bits only: the block's law is the rewards' joint law.

  Args:
    family: the reward family (with `sample_block` and `split_block`).
    rule: the rule (with `schedule`).
    key_at: n -> the key of the arm's n-th reward (`jbai.core.lane.reward_key`).
    mean: [] float, the arm's mean.
    arm: [] int32, the arm (the rule's choice: one below its share of t_next).
    counts: [K] count_dtype(), every arm's rewards so far.
    t_next: [] count_dtype(), the next checkpoint.
    horizon: [] count_dtype(), the budget T.
    one: take one reward (a run with scores).
    dtype: the statistics' float dtype.
  """
  num_arms = counts.shape[-1]
  count = jnp.sum(jnp.where(jnp.arange(num_arms) == arm, counts, 0))
  horizon = jnp.asarray(horizon, counts.dtype)
  length = rule.schedule(arm, horizon, num_arms)
  zero = jnp.zeros((), counts.dtype)
  block = Block(arm=arm, first=zero, length=length,
                total=family.sample_block(key_at(zero), mean, length).astype(dtype),
                base=jnp.zeros((family.stat_dim,), dtype))
  q = count + 1 if one else rule.schedule(arm, jnp.asarray(t_next, counts.dtype), num_arms)
  q = jnp.clip(q, count + 1, length)
  return q - count, prefix(family, key_at, block, q)
