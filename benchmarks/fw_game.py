"""fws-top-m's Frank-Wolfe direction, part by part, against the dense matrix game.

On lanes near the optimal allocation of a Gaussian instance with K arms (means
1.2 to 0 in equal steps; --arms), top --top, each lane's means and iterate
perturbed (seed 0: means by 0.02, the iterate by 20% of w*), r = --r, times under
`jax.jit(jax.vmap(...))` over --lanes lanes (best of 5 calls of a
`lax.fori_loop` of 64 iterations, ns a lane) and prints:

  - the pairs' costs, gradient entries and arms (`fws_top_m.pairs`);
  - the game by `pair_game.solve_pair_game` (under vmap on a CPU: the closed
    form on every lane, the simplex on the lanes with three active rows or more,
    GROUP at a time), and the baseline, the same game as a dense [P, K] matrix
    game (`matrix_game.solve_matrix_game`: the best response where one row is
    active, the simplex on the others), with their ratio;
  - the whole direction (`fws_top_m.fw_direction`);

and how many lanes have one, two and more active rows. Run it on one core for
figures that compare with the others of docs/performance.md:

  PJRT_NPROC=1 taskset -c 0 python benchmarks/fw_game.py [--arms 20] [--top 2]
                                                        [--lanes 256] [--r 2e-5]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jbai
from jbai.rules.fws_top_m import fw_direction, pairs
from jbai.rules.matrix_game import solve_matrix_game
from jbai.rules.pair_game import payoff, solve_pair_game
from jbai.ties import maxima

ITERS = 64


def ns_per_lane(fn, args, lanes: int) -> float:
  """Best of 5 calls of fn under vmap, ITERS times in a loop, in ns a lane."""
  def body(i, acc):
    nudged = [a * (1 + 1e-7 * i.astype(a.dtype)) if jnp.issubdtype(a.dtype, jnp.floating) else a
              for a in args]
    return acc + sum(jnp.sum(o.astype(jnp.float32)) for o in jax.tree.leaves(jax.vmap(fn)(*nudged)))

  loop = jax.jit(lambda: jax.lax.fori_loop(0, ITERS, body, jnp.float32(0)))
  loop().block_until_ready()  # compiles
  best = np.inf
  for _ in range(5):
    t0 = time.perf_counter()
    loop().block_until_ready()
    best = min(best, time.perf_counter() - t0)
  return 1e9 * best / (ITERS * lanes)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--arms", type=int, default=20)
  parser.add_argument("--top", type=int, default=2)
  parser.add_argument("--lanes", type=int, default=256)
  parser.add_argument("--r", type=float, default=2e-5)
  args = parser.parse_args()
  k, m, lanes = args.arms, args.top, args.lanes
  family = jbai.families.get("gaussian")
  mu = np.linspace(1.2, 0.0, k)
  w = np.asarray(jbai.problems.oracle(jbai.problems.top_m(m), "gaussian", mu).w)
  rng = np.random.default_rng(0)
  means = jnp.asarray(mu + 0.02 * rng.standard_normal((lanes, k)), jnp.float32)
  x = np.abs(w * (1 + 0.2 * rng.standard_normal((lanes, k))))
  x = jnp.asarray(x / x.sum(1, keepdims=True), jnp.float32)
  r = jnp.float32(args.r)
  game = jax.vmap(lambda x, mean: pairs(family, x, mean, m))(x, means)
  f = game[0]
  active = (f < jnp.min(f, axis=1, keepdims=True) + r) | jax.vmap(maxima)(-f)
  dense = jax.vmap(lambda *g: payoff(*g, k))(*game[1:3], f, *game[3:])
  sizes = np.asarray(jnp.sum(active, axis=1))
  print(f"gaussian, K = {k}, top {m}, {lanes} lanes, float32, {jax.devices()[0].device_kind}; "
        f"active rows a lane: one on {np.mean(sizes == 1):.0%} of the lanes, two on "
        f"{np.mean(sizes == 2):.0%}, at most {sizes.max()}")
  solve = ns_per_lane(lambda f, a, b, h, t, act: solve_pair_game(a, b, f, h, t, act, k),
                      game + (active,), lanes)
  baseline = ns_per_lane(solve_matrix_game, (dense, active), lanes)
  rows = [
      ("pairs' costs, gradients and arms",
       ns_per_lane(lambda x, mean: pairs(family, x, mean, m), (x, means), lanes)),
      ("game: solve_pair_game", solve),
      ("game: dense, solve_matrix_game", baseline),
      ("whole direction", ns_per_lane(lambda x, mean: fw_direction(family, x, mean, m, r),
                                      (x, means), lanes)),
  ]
  for name, ns in rows:
    print(f"{name:>34}: {ns:8.0f} ns a lane")
  print(f"{'dense / pair game':>34}: {baseline / solve:8.2f}")


if __name__ == "__main__":
  main()
