"""Beyond the paper: differentiating through the simulator.

Two experiments built on the likelihood-ratio gradients of `jbai.estimate` (see
jbai/core/estimate.py and jbai/core/estimators.py):

  gradient  the asymptotic link. Asymptotic optimality says E[tau] ~ T*(nu)
            log(1/delta) as delta -> 0; if it holds with the gradient too,
            grad_mu E[tau] / log(1/delta) -> grad_mu T*(nu). One trajectory per
            trial records every delta's stopping time and score, so one run
            gives the whole curve; grad_mu T*(nu) comes from the differentiable
            oracle (implicit differentiation of `jbai.oracle.exact_solve`).
  hardest   where is a rule least efficient? Gradient ascent (optax Adam) over
            K-armed Gaussian instances of fixed complexity T*(nu) = T0 on the
            ratio R(nu) = E[tau] / (T*(nu) log(1/delta)), against random search
            and against SPSA (the same Adam on simultaneous-perturbation
            differences with common random numbers), each given the same number
            of simulated steps; each method's instance is then evaluated again
            with a fresh key and more trials, so that the comparison is free of
            the selection bias of a noisy maximum.

Instances of `hardest`: arm 0 has mean 0 and arm i > 0 has mean -g_i, with gaps
g = s exp(u), u in [-U, U]^(K-1) (the box; u is clipped after each step), and s
chosen so that T*(nu) = T0 (for Gaussian arms T* scales as 1/s^2). R is
differentiable in u: through E[tau] by the likelihood ratio and through T*(nu)
and s by the oracle's implicit derivatives.
"""

import math
import os

import jax
import jax.numpy as jnp
import numpy as np

from jbai.host.atomic import write_csv
from jbai.host.summary import Z95
from jbai.oracle.t_star import t_star_gradient
from jbai.reproduce import reference
from jbai.reproduce.experiment import Experiment
from jbai.studies import plots
from jbai.studies.jobs import Kind, dtype_name, result_of, rule_label, run_label

Z99 = 2.576  # the standard normal's 99.5% quantile: two-sided 99% intervals


# --------------------------------------------------------------------------
# gradient: grad E[tau] / log(1/delta) against grad T*(nu).


def gradient_job(config: dict) -> dict:
  return {"kind": "gradient", "family": config["family"],
          "means": [float(m) for m in config["means"]], "rule": config["rule"],
          "rule_params": {}, "delta": [float(d) for d in config["deltas"]],
          "trials": int(config["trials"]), "threshold": config["threshold"],
          "max_steps": int(config["max_steps"]), "seed": int(config["seed"]),
          "estimator": config.get("estimator", "causal"), "dtype": dtype_name()}


def gradient_jobs(config: dict) -> list:
  return [gradient_job(config)]


def run_gradient_job(job: dict, progress) -> dict:
  """Simulates with scores and returns, per delta, E[tau] and the likelihood-ratio
  gradients of E[tau] and P(error) in the means, with standard errors."""
  from jbai.core.estimators import monte_carlo
  from jbai.host.simulate import simulate
  from jbai.rules import get as get_rule
  res = simulate(jax.random.key(job["seed"]), job["family"], job["means"],
                 get_rule(job["rule"], **job["rule_params"]), job["delta"], job["trials"],
                 threshold=job["threshold"], max_steps=job["max_steps"], scores=True,
                 progress=lambda done, total, *_: progress.update(done, total, "trials"))
  moments = monte_carlo(res, False, estimator=job.get("estimator", "causal"))
  out = []
  for d, delta in enumerate(job["delta"]):
    row = {"delta": delta, "hit_cap": int(res.hit_cap[:, d].sum())}
    for name, (mean, se, g, g_se) in moments.items():
      row.update({f"mean_{name}": float(mean[d]), f"se_{name}": float(se[d]),
                  f"grad_{name}": np.asarray(g["means"][d]).tolist(),
                  f"grad_{name}_se": np.asarray(g_se["means"][d]).tolist()})
    out.append(row)
  return {"per_delta": out, "trials": int(res.tau.shape[0]),
          "wall_seconds": res.stats["wall_seconds"],
          "compile_seconds": res.stats["compile_seconds"]}


def gradient_report(config: dict, records: dict, out: str) -> list:
  """gradient.csv (per delta and arm: grad E[tau] / log(1/delta), its standard
  error and grad T*(nu)), gradient.png, and the claim at the smallest delta."""
  res = result_of(records, gradient_job(config))
  if res is None:
    return []
  fam, means = config["family"], config["means"]
  t_star = reference.t_star(fam, means)
  _, ref = t_star_gradient(fam, means)
  k = len(means)
  rows = []
  for r in res["per_delta"]:
    log_inv = math.log(1 / r["delta"])
    g = np.asarray(r["grad_tau"]) / log_inv
    se = np.asarray(r["grad_tau_se"]) / log_inv
    rows.append([r["delta"], log_inv, r["mean_tau"], r["mean_tau"] / (t_star * log_inv)]
                + [x for i in range(k) for x in (g[i], se[i], ref[i])]
                + [float(np.sum(r["grad_tau"])) / log_inv, r["mean_error"], r["hit_cap"]])
  header = ["delta", "log_inv_delta", "mean_tau", "ratio"]
  header += [f"{c}_{i}" for i in range(k) for c in ("grad_tau_over_log", "se", "grad_t_star")]
  header += ["sum_grad_over_log", "error_rate", "hit_cap"]
  write_csv(os.path.join(out, "gradient.csv"), header, rows)
  _draw_gradient(config, res, rows, ref, out)
  return [_gradient_claim(config, res, ref)]


def _draw_gradient(config: dict, res: dict, rows: list, ref: np.ndarray, out: str) -> None:
  """gradient.png: per arm, grad E[tau] / log(1/delta) with its 95% band against
  log(1/delta), and grad T*(nu) dashed; the best arm and the others apart."""
  plt = plots.pyplot()
  if not plt:
    return
  k = len(config["means"])
  fig, axes = plots.grid(plt, 2, 5.5, 4.0)
  x = [row[1] for row in rows]
  for ax, arms, title in ((axes[0], [0], "best arm"),
                          (axes[1], list(range(1, k)), "the other arms")):
    for i in arms:
      g = np.array([row[4 + 3 * i] for row in rows])
      se = np.array([row[5 + 3 * i] for row in rows])
      ax.plot(x, g, marker=".", color=f"C{i}",
              label=rf"arm {i}: $\partial E[\tau]/\partial\mu_{i}$ / log(1/$\delta$)")
      ax.fill_between(x, g - Z95 * se, g + Z95 * se, color=f"C{i}", alpha=0.15)
      ax.axhline(ref[i], color=f"C{i}", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(r"$\log(1/\delta)$")
    ax.set_title(f"{title} (dashed: " + r"$\partial T^*(\nu)/\partial\mu_i$)", fontsize=9)
    ax.legend(fontsize=7)
  fig.suptitle(f"{config['rule'].upper()} on {config['family']} {config['means']}: gradient "
               f"of E[tau] / log(1/delta) against the gradient of T*, {res['trials']} trials",
               fontsize=9)
  plots.save(plt, fig, os.path.join(out, "gradient.png"))


def _gradient_claim(config: dict, res: dict, ref: np.ndarray) -> dict:
  """At the smallest delta: is every arm's grad E[tau] / log(1/delta) within its
  99% interval of grad T*(nu)?"""
  last = res["per_delta"][-1]
  log_inv = math.log(1 / last["delta"])
  g = np.asarray(last["grad_tau"]) / log_inv
  se = np.asarray(last["grad_tau_se"]) / log_inv
  within = bool(np.all(np.abs(g - ref) <= Z99 * se))
  return {"experiment": "gradient",
          "claim": "grad_mu E[tau] / log(1/delta) -> grad_mu T*(nu) as delta -> 0 "
                   f"({config['rule']}, {config['family']} {config['means']})",
          "paper": "(beyond the paper) asymptotic optimality of the gradient",
          "jbai": (f"at log(1/delta) = {log_inv:.1f}, {res['trials']} trials: "
                   + ", ".join(f"{a:.0f} +- {Z95 * b:.0f} (T*: {c:.0f})"
                               for a, b, c in zip(g, se, ref))),
          "verdict": ("consistent: every arm within its 99% interval" if within else
                      "not within 99% at this delta: see gradient.csv")}


# --------------------------------------------------------------------------
# hardest: gradient ascent on R(nu) against random search.


def _instance_fn(k: int, t0: float, box: float):
  """u [K-1] -> Gaussian means [K] with T*(nu) = t0 (see the module docstring)."""
  from jbai.families import gaussian
  from jbai.oracle import exact_solve
  fam = gaussian()

  def means_of(u):
    gaps = jnp.exp(jnp.clip(u, -box, box))
    raw = jnp.concatenate([jnp.zeros(1, gaps.dtype), -gaps])
    scale = jnp.sqrt(1.0 / exact_solve(fam, raw)[1] / t0)
    return raw * scale

  return fam, means_of


def _ratio_fn(rule_name: str, rule_params: dict, config: dict):
  """(u, key) -> (R(nu(u)) with likelihood-ratio derivatives, simulated steps)."""
  from jbai.core.estimate import estimate
  from jbai.rules import get as get_rule
  k, t0, delta = config["arms"], float(config["t_star"]), float(config["delta"])
  fam, means_of = _instance_fn(k, t0, float(config["box"]))
  rule = get_rule(rule_name, **rule_params)
  log_inv = math.log(1 / delta)

  def ratio(u, key, n_trials):
    est = estimate(key, fam, means_of(u), rule, delta, n_trials, config["threshold"],
                   config["max_steps"])
    return est.mean_tau / (t0 * log_inv), (jnp.sum(est.trials.steps), est.mean_tau_se /
                                           (t0 * log_inv))

  return means_of, ratio


def hardest_job(config: dict, rule: str, params: dict) -> dict:
  keys = ("arms", "t_star", "box", "delta", "threshold", "max_steps", "trials", "steps",
          "learning_rate", "final_trials", "seed")
  extra = {k: config[k] for k in ("spsa_c",) if k in config}
  return {"kind": "search", "rule": rule, "rule_params": dict(params),
          **{k: config[k] for k in keys}, **extra, "dtype": dtype_name()}


def hardest_jobs(config: dict) -> list:
  return [hardest_job(config, rule, params) for rule, params in config["rules"]]


def _adam_ascent(job, value_grad, key, progress, total):
  """`steps` Adam steps up R from equal gaps on the likelihood-ratio gradient:
  (trace, last iterate, simulated steps)."""
  import optax
  opt = optax.adam(job["learning_rate"])
  u = jnp.zeros(job["arms"] - 1)  # equal gaps
  state = opt.init(u)
  trace, spent = [], 0
  for i in range(job["steps"]):
    (value, (steps, se)), grad = value_grad(u, jax.random.fold_in(key, i))
    spent += int(steps)
    trace.append({"iteration": i, "ratio": float(value), "se": float(se), "steps": spent,
                  "u": np.asarray(u).tolist()})
    updates, state = opt.update(-grad, state, u)  # ascent
    u = jnp.clip(optax.apply_updates(u, updates), -job["box"], job["box"])
    progress.update(i + 1, total, "evaluations")
  return trace, u, spent


def _random_search(job, evaluate, key, budget):
  """Uniform samples in the box until `budget` simulated steps: (trace, best sample)."""
  k, box = job["arms"], job["box"]
  trace, used, i = [], 0, 0
  while used < budget:
    cand = jax.random.uniform(jax.random.fold_in(key, i), (k - 1,), minval=-box, maxval=box)
    value, (steps, se) = evaluate(cand, jax.random.fold_in(key, 10**6 + i))
    used += int(steps)
    trace.append({"sample": i, "ratio": float(value), "se": float(se), "steps": used,
                  "u": np.asarray(cand).tolist()})
    i += 1
  return trace, jnp.asarray(max(trace, key=lambda r: r["ratio"])["u"])


def _spsa(job, evaluate, key, budget):
  """SPSA (simultaneous perturbation) with the same Adam, until `budget` simulated
  steps: each iteration evaluates R at u +- c Delta (Delta uniform on {-1, 1}^(K-1))
  with common random numbers, g = (R+ - R-) / (2c) Delta. (trace, last iterate)."""
  import optax
  k, box, c = job["arms"], job["box"], float(job.get("spsa_c", 0.3))
  opt = optax.adam(job["learning_rate"])
  u = jnp.zeros(k - 1)
  state = opt.init(u)
  trace, used, i = [], 0, 0
  while used < budget:
    delta = jax.random.rademacher(jax.random.fold_in(key, i), (k - 1,)).astype(u.dtype)
    crn = jax.random.fold_in(key, 10**6 + i)
    (plus, (s1, se)), (minus, (s2, _)) = (evaluate(u + c * delta, crn),
                                          evaluate(u - c * delta, crn))
    used += int(s1) + int(s2)
    trace.append({"iteration": i, "ratio": float(plus + minus) / 2, "se": float(se),
                  "steps": used, "u": np.asarray(u).tolist()})
    updates, state = opt.update(-(plus - minus) / (2 * c) * delta, state, u)
    u = jnp.clip(optax.apply_updates(u, updates), -box, box)
    i += 1
  return trace, u


def run_search_job(job: dict, progress) -> dict:
  """Adam ascent on R by the likelihood-ratio gradient, then random search and SPSA
  with the same simulated steps, then each method's instance (Adam's and SPSA's
  last iterate, random search's best sample) evaluated again with a fresh key and
  `final_trials` trials."""
  means_of, ratio = _ratio_fn(job["rule"], job["rule_params"], job)
  n, k = job["trials"], job["arms"]
  value_grad = jax.jit(jax.value_and_grad(lambda u, key: ratio(u, key, n), has_aux=True))
  evaluate = jax.jit(lambda u, key: ratio(u, key, n))
  final = jax.jit(lambda u, key: ratio(u, key, job["final_trials"]))
  key = jax.random.key(job["seed"])
  total = 4 * job["steps"]
  ascent, best_ascent, spent = _adam_ascent(job, value_grad, key, progress, total)
  search, best_random = _random_search(job, evaluate, jax.random.fold_in(key, 10**6), spent)
  progress.update(2 * job["steps"], total, "evaluations")
  spsa, best_spsa = _spsa(job, evaluate, jax.random.fold_in(key, 3 * 10**6), spent)
  progress.update(3 * job["steps"], total, "evaluations")
  fresh = jax.random.fold_in(key, 2 * 10**6)
  finals = {}
  for name, u_star in (("start", jnp.zeros(k - 1)), ("ascent", best_ascent),
                       ("random", best_random), ("spsa", best_spsa)):
    value, (_, se) = final(u_star, fresh)
    finals[name] = {"ratio": float(value), "se": float(se), "u": np.asarray(u_star).tolist(),
                    "means": np.asarray(means_of(u_star)).tolist()}
  progress.update(total, total, "evaluations")
  return {"ascent": ascent, "random": search, "spsa": spsa, "final": finals, "steps": spent}


def hardest_report(config: dict, records: dict, out: str) -> list:
  """hardest.csv (the fresh evaluations), hardest_trace.csv (every evaluation of
  the ascent and of the random search), hardest.png, and a claim per rule."""
  rows, trace_rows, claims = [], [], []
  plt = plots.pyplot()
  fig, ax = (plt.subplots(figsize=(6.5, 4.2)) if plt else (None, None))
  for j, (rule, params) in enumerate(config["rules"]):
    res = result_of(records, hardest_job(config, rule, params))
    if res is None:
      continue
    label = rule_label(rule, params)
    for r in res["ascent"]:
      trace_rows.append([label, "ascent", r["iteration"], r["steps"], r["ratio"], r["se"]])
    for r in res["random"]:
      trace_rows.append([label, "random", r["sample"], r["steps"], r["ratio"], r["se"]])
    for r in res.get("spsa", []):
      trace_rows.append([label, "spsa", r["iteration"], r["steps"], r["ratio"], r["se"]])
    f = res["final"]
    for name in ("start", "ascent", "random", "spsa"):
      if name not in f:
        continue
      rows.append([label, name, f[name]["ratio"], f[name]["se"],
                   " ".join(f"{m:.4f}" for m in f[name]["means"])])
    if plt:
      _draw_search(ax, f"C{j}", label, res)
    claims.append(_hardest_claim(label, res))
  write_csv(os.path.join(out, "hardest.csv"),
            ["rule", "instance", "ratio", "se", "means"], rows)
  write_csv(os.path.join(out, "hardest_trace.csv"),
            ["rule", "method", "iteration", "simulated_steps", "ratio", "se"], trace_rows)
  if plt:
    ax.set_xlabel("simulated steps")
    ax.set_ylabel(r"$R(\nu) = E[\tau] / (T^*(\nu)\log(1/\delta))$")
    ax.set_title(f"Gaussian K={config['arms']}, T*(nu) = {config['t_star']}, "
                 f"delta = {config['delta']:g}; markers: fresh evaluation, "
                 f"{config['final_trials']} trials", fontsize=8)
    ax.legend(fontsize=6)
    plots.save(plt, fig, os.path.join(out, "hardest.png"))
  return claims


def _draw_search(ax, color: str, label: str, res: dict) -> None:
  """One rule's search: R along the ascent, the running maximum of the random
  search, both against simulated steps, and the fresh evaluations of the two
  best instances with 95% intervals."""
  a, rs, f = res["ascent"], res["random"], res["final"]
  ax.plot([r["steps"] for r in a], [r["ratio"] for r in a], color=color, lw=1,
          label=f"{label}: Adam ascent")
  if res.get("spsa"):
    ax.plot([r["steps"] for r in res["spsa"]], [r["ratio"] for r in res["spsa"]],
            color=color, lw=1, ls="--", label=f"{label}: SPSA")
  ax.plot([r["steps"] for r in rs], np.maximum.accumulate([r["ratio"] for r in rs]),
          color=color, lw=1, ls=":", label=f"{label}: random search (running max)")
  end = res["steps"]
  for name, marker, shift in (("ascent", "o", 1.0), ("random", "s", 1.03), ("spsa", "^", 1.06)):
    if name not in f:
      continue
    ax.errorbar([end * shift], [f[name]["ratio"]],
                yerr=[Z95 * f[name]["se"]], color=color, marker=marker, ms=5, capsize=3)


def _hardest_claim(label: str, res: dict) -> dict:
  """Does the ascent find a harder instance than random search and SPSA (fresh
  evaluations)? Against the better of the two gradient-free methods."""
  f = res["final"]
  rival = max((n for n in ("random", "spsa") if n in f), key=lambda n: f[n]["ratio"])
  gap = f["ascent"]["ratio"] - f[rival]["ratio"]
  se = math.hypot(f["ascent"]["se"], f[rival]["se"])
  verdict = ("ascent finds a harder instance (difference > 1.96 se)" if gap > Z95 * se
             else f"{rival} as good or better" if gap < -Z95 * se
             else "no significant difference")
  return {
      "experiment": "hardest",
      "claim": f"where {label} is least efficient: max R(nu) = E[tau] / (T* log(1/delta))",
      "paper": "(beyond the paper) worst-case instance search by gradient ascent",
      "jbai": (f"equal gaps R = {f['start']['ratio']:.3f}; ascent R = "
               f"{f['ascent']['ratio']:.3f} +- {Z95 * f['ascent']['se']:.3f} at "
               f"{[round(m, 3) for m in f['ascent']['means']]}; random search R = "
               f"{f['random']['ratio']:.3f} +- {Z95 * f['random']['se']:.3f}"
               + (f"; SPSA R = {f['spsa']['ratio']:.3f} +- {Z95 * f['spsa']['se']:.3f}"
                  if "spsa" in f else "")
               + f" ({res['steps']:.3g} simulated steps each)"),
      "verdict": verdict}


EXPERIMENTS = [
    Experiment("gradient", "Gradient of E[tau] against the gradient of T* (beyond the paper)",
               gradient_jobs, gradient_report),
    Experiment("hardest", "Where a rule is least efficient: gradient ascent against random "
               "search (beyond the paper)", hardest_jobs, hardest_report),
]

def _search_label(job: dict) -> str:
  return (f"{rule_label(job['rule'], job['rule_params'])} instance search, K={job['arms']}, "
          f"{job['steps']} steps of {job['trials']} trials")


# The kinds of job of these items, beside the study engine's (`jbai.studies.jobs`).
KINDS = {"gradient": Kind(run_gradient_job,
                          lambda job: run_label(job, f"{job['trials']} trials, scores")),
         "search": Kind(run_search_job, _search_label)}
