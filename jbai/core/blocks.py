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
