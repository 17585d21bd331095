"""What the commands print: JSON, the single-run layout, the comparison table, the
gradient report, the oracle's table, and the notes after an interrupted run.

95% intervals: normal for the mean tau and for the gradients (mean +- Z95 se),
Wilson for the error rate (computed in `jbai.host.summary`).
"""

import json
import math
import sys

from jbai.host.summary import Z95

INTERRUPTED_NOTE = (
    "interrupted: this summary covers only the trials that finished, and is "
    "biased towards short trials (the longest had not stopped yet)")
# A run to a budget: every trial takes the whole budget, so no bias; the table
# holds the runs that completed.
INTERRUPTED_BUDGET_NOTE = "interrupted: the table covers only the runs that completed"



def show_delta(delta) -> str:
  """A confidence level as printed: a float with %g, a level typed below
  float64's range as its text."""
  return f"{delta:g}" if isinstance(delta, (int, float)) else str(delta)

def print_json(payload) -> None:
  """One line of JSON on stdout."""
  print(json.dumps(payload))


def _fmt(x, spec: str, missing: str = "-") -> str:
  return missing if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def print_run(records: list, labels: list, single: bool, means, args) -> None:
  """The text report of `jbai run`: the single-run layout or the comparison
  table, then a warning when trials reached the cap."""
  if single:
    print_single(records[0], means, records[0]["max_steps"])
  else:
    print_table(records, labels, means, args)
  eps = {r.get("eps_good", 0.0) for r in records} - {0.0}
  if eps:
    print(f"eps-good answers (eps = {', '.join(f'{e:g}' for e in sorted(eps))}): the error "
          "rate counts answers that are not eps-good, mu_answer < max mu - eps")
  capped = sum(r["hit_cap"] for r in records)
  if capped:
    print(f"warning: {capped} trial(s) reached max_steps without stopping; "
          "they count as errors and enter mean tau at the cap (a larger --max-steps "
          "lets them finish)")


def _t(rec: dict) -> str:
  """T*, or T*_eps for a record of eps-good answers (its T* is the eps oracle's)."""
  return "T*_eps" if rec.get("eps_good", 0.0) else "T*"


def _w(rec: dict) -> str:
  return "w*_eps" if rec.get("eps_good", 0.0) else "w"


def print_single(rec: dict, means, max_steps: int):
  """The vertical table of one rule at one delta."""
  lo, hi = rec["tau_ci95"]
  elo, ehi = rec["error_ci95"]
  rows = [("rule", rec["rule"]), ("family", rec["family"]), ("means", means),
          ("threshold", rec["threshold"]), ("delta", show_delta(rec['delta'])),
          ("trials", rec["trials"] if rec["complete"] else
           f"{rec['trials']} finished of {rec['trials_requested']}"),
          ("mean tau", f"{rec['mean_tau']:.1f}  (95% CI {lo:.1f} .. {hi:.1f})"),
          ("median / max tau", f"{rec['median_tau']:.0f} / {rec['max_tau']}"),
          ("error rate", f"{rec['error_rate']:.4f}  (Wilson 95% CI {elo:.4f} .. {ehi:.4f})"),
          ("trials at the cap", f"{rec['hit_cap']}  (max_steps = {max_steps})"),
          (f"{_t(rec)}(nu)", f"{rec['t_star']:.2f}"),
          (f"{_t(rec)}(nu) log(1/delta)", f"{rec['t_star_log']:.1f}"),
          (f"E[tau] / {_t(rec)} log(1/delta)", f"{rec['ratio']:.3f}"),
          (f"{_w(rec)}(nu)", "[" + ", ".join(f"{x:.4f}" for x in rec["w_star"]) + "]")]
  if rec["complete"]:
    rows += [("compile / run seconds",
              f"{rec['compile_seconds']:.2f} / {rec['wall_seconds']:.2f}"),
             ("trial-steps per second", _fmt(rec["steps_per_second"], ".3g")),
             ("lane utilisation", f"{rec['utilisation']:.3f}")]
  for k, v in rows:
    print(f"{k:<26} {v}")


def _caps(records: list) -> str:
  """The runs' caps: one number, or each rule's where they differ (a block
  rule's own default, `jbai.core.inputs.default_max_steps`)."""
  caps = {r["rule"]: r["max_steps"] for r in records}
  if len(set(caps.values())) == 1:
    return str(next(iter(caps.values())))
  return ", ".join(f"{rule} {cap}" for rule, cap in caps.items())


def _table_header(records: list, means, args, thresholds: list, deltas: list) -> None:
  """The lines above the comparison table: what every row shares."""
  first = records[0]
  print(f"family      {first['family']}")
  print(f"means       {means}")
  if len(thresholds) == 1:
    print(f"threshold   {thresholds[0]}")
  if len(deltas) == 1:
    print(f"delta       {show_delta(deltas[0])}")
  print(f"trials      {args.trials} per rule, seed {args.seed}, the same key for every "
        f"rule (common random numbers), max_steps {_caps(records)}")
  print(f"{_t(first) + '(nu)':<12}{first['t_star']:.4g}   {_w(first)}(nu) = ["
        + ", ".join(f"{x:.4f}" for x in first["w_star"]) + "]")
  print(f"ratio       E[tau] / ({_t(first)}(nu) log(1/delta)); 95% CIs: normal for the "
        "mean tau, Wilson for the error rate")
  print()


def print_table(records: list, labels: list, means, args):
  """One row per (rule, threshold, delta); constant columns go to the header."""
  thresholds = list(dict.fromkeys(r["threshold"] for r in records))
  deltas = list(dict.fromkeys(r["delta"] for r in records))
  _table_header(records, means, args, thresholds, deltas)
  head = ["rule"] + (["threshold"] if len(thresholds) > 1 else []) + \
         (["delta"] if len(deltas) > 1 else []) + \
         ["mean tau (95% CI)", "error rate (95% CI)", "at cap", "ratio", "steps/s"]
  rows = []
  for label, r in zip(labels, records):
    lo, hi = r["tau_ci95"]
    elo, ehi = r["error_ci95"]
    row = [label + ("" if r["complete"] else "*")]
    if len(thresholds) > 1:
      row.append(r["threshold"])
    if len(deltas) > 1:
      row.append(show_delta(r['delta']))
    row += [f"{r['mean_tau']:.1f} ({_fmt(lo, '.1f')} .. {_fmt(hi, '.1f')})",
            f"{r['error_rate']:.4f} ({elo:.4f} .. {ehi:.4f})",
            str(r["hit_cap"]), f"{r['ratio']:.3f}", _fmt(r["steps_per_second"], ".3g")]
    rows.append(row)
  widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
  left = 1 + (len(thresholds) > 1) + (len(deltas) > 1)
  for row in [head] + rows:
    cells = [str(x).ljust(w) if i < left else str(x).rjust(w)
             for i, (x, w) in enumerate(zip(row, widths))]
    print("  ".join(cells).rstrip())
  for label, r in dict(zip(labels, records)).items():
    if not r["complete"]:
      print(f"* {label}: interrupted, {r['trials']} of {r['trials_requested']} trials "
            "finished")


def print_budget(rows: list, family, means, args) -> None:
  """The table of `jbai run --budget`: one row per (rule, budget), the error rate
  and the simple regret with their 95% intervals."""
  print(f"family      {family!r}")
  print(f"means       {means}")
  print(f"trials      {args.trials} per rule and budget, seed {args.seed}, the same key for "
        "every rule (common random numbers); no stop: each trial takes the whole budget")
  if getattr(args, "top", None) is not None:
    answer = (f"the empirical top {args.top} at the budget, an error when it is not the "
              f"{args.top} best arms; the regret is the {args.top} best means' sum minus "
              "the answer's")
  elif getattr(args, "above", None) is not None:
    eps = (getattr(args, "eps", None) or [None])[0]
    wrong = ("one arm is on the wrong side" if eps is None else
             f"an arm more than {eps} from the level is on the wrong side")
    answer = (f"the arms whose sample mean is at or above {args.above} at the budget, an "
              f"error when {wrong}; the regret is the largest |mu - {args.above}| of "
              "such an arm")
  else:
    eps = getattr(args, "eps_good", None)
    wrong = ("not the best arm" if eps is None else
             f"not eps-good: its mean below the largest by more than {eps}")
    answer = ("each rule's recommendation at the budget (the empirical best arm, or the "
              f"best surviving arm), an error when it is {wrong}; the regret is "
              "mu* - mu_answer")
  print(f"answer      {answer}; 95% CIs: Wilson for the error rate, normal for the "
        "simple regret")
  print()
  head = ["rule", "budget", "error rate (95% CI)", "simple regret (95% CI)", "steps/s"]
  table = []
  for r in rows:
    elo, ehi = r["error_ci95"]
    rlo, rhi = r["regret_ci95"]
    table.append([r["label"], str(r["budget"]),
                  f"{r['error_rate']:.4f} ({elo:.4f} .. {ehi:.4f})",
                  f"{r['simple_regret']:.4g} ({_fmt(rlo, '.4g')} .. {_fmt(rhi, '.4g')})",
                  _fmt(r["steps_per_second"], ".3g")])
  widths = [max(len(str(x)) for x in col) for col in zip(head, *table)]
  for row in [head] + table:
    print("  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w)
                    for i, (x, w) in enumerate(zip(row, widths))).rstrip())


def print_interrupted(any_records: bool, later: list, log, args,
                      note: str = INTERRUPTED_NOTE) -> None:
  """The note after Ctrl-C: what the summary covers (`note`: a stopped run's bias,
  or INTERRUPTED_BUDGET_NOTE), the runs not started, and where the finished trials
  are kept (on stderr with --json, else stdout)."""
  if note is INTERRUPTED_BUDGET_NOTE:
    head = note if any_records else "interrupted before any run completed"
  else:
    head = ("" if any_records else "interrupted before any trial finished; ") + note
  print(head
        + (f"; not started: {', '.join(later)}" if later else "")
        + (f"; {log.count()} finished trial(s) are saved in {log.path}: rerun the same "
           "command to resume" if args.out else
           "; with --out FILE the finished trials are saved and the same command resumes"),
        file=sys.stderr if args.json else sys.stdout)


def print_grad(rec: dict, means):
  """The text report of one (rule, threshold, delta) of `jbai grad`."""
  print(f"rule {rec['rule']}, threshold {rec['threshold']}, delta {show_delta(rec['delta'])}, "
        f"{rec['trials']} trials, {rec['hit_cap']} at the cap; +- is a 95% CI")
  print(f"  E[tau]    {rec['mean_tau']:.6g} +- {Z95 * rec['mean_tau_se']:.3g}"
        f"      T*(nu) log(1/delta) {rec['t_star_log']:.6g}")
  print(f"  P(error)  {rec['error_rate']:.4g} +- {Z95 * rec['error_rate_se']:.2g}")
  print(f"  {'arm':>4} {'mean':>10} {'dE[tau]/dmu':>24} {'d(T* log 1/delta)/dmu':>22} "
        f"{'dP(error)/dmu':>22}")
  for i, m in enumerate(means):
    g = f"{rec['grad_mean_tau'][i]:.5g} +- {Z95 * rec['grad_mean_tau_se'][i]:.2g}"
    e = f"{rec['grad_error_rate'][i]:.4g} +- {Z95 * rec['grad_error_rate_se'][i]:.2g}"
    print(f"  {i:>4} {m:>10.6g} {g:>24} {rec['grad_t_star_log'][i]:>22.5g} {e:>22}")
  for param, g in rec.get("grad_params", {}).items():
    print(f"  d/d{param}: E[tau] {g['mean_tau']:.5g} +- {Z95 * g['mean_tau_se']:.2g}, "
          f"P(error) {g['error_rate']:.4g} +- {Z95 * g['error_rate_se']:.2g}")


def print_oracle(out: dict, logs: list) -> None:
  """The text report of `jbai oracle`: w(nu) per arm, Gamma(nu), T*(nu) and
  T*(nu) log(1/delta) per delta (their eps versions, and the answer, with
  "eps_good")."""
  deltas = out["delta"] if isinstance(out["delta"], list) else [out["delta"]]
  eps = "eps_good" in out
  sub = "_eps" if eps else ""
  print(f"family  {out['family']}")
  if "problem" in out:
    print(f"problem {out['problem']}")
  answer = out.get("answer")
  answers = answer if isinstance(answer, list) else [answer]
  if eps:
    print(f"eps     {out['eps_good']:g} (eps-good answers, mu_answer >= max mu - eps; "
          f"Garivier & Kaufmann 2021)")
  col, label = (12, 27) if eps else (10, 23)
  budget = "w_budget" in out
  print(f"{'arm':>4} {'mean':>12} {('w*' if eps else 'w') + sub + '(nu)':>{col}}" +
        (f" {'w_FB(nu)':>{col}}" if budget else ""))
  for i, (m, x) in enumerate(zip(out["means"], out["w"])):
    print(f"{i:>4} {m:>12.6g} {x:>{col}.6f}" +
          (f" {out['w_budget'][i]:>{col}.6f}" if budget else "") +
          ("   answer" if i in answers else ""))
  print(f"{'Gamma' + sub + '(nu)':<{label}}{out['gamma']:.6g}")
  print(f"{'T*' + sub + '(nu) = 1/Gamma' + sub:<{label}}{1 / out['gamma']:.6g}")
  for d, v in zip(deltas, logs):
    print(f"{'T*' + sub + '(nu) log(1/delta)':<{label}}{v:.6g}   (delta = {show_delta(d)})")
  if budget:
    print(f"{'Gamma_FB(nu)':<{label}}{out['gamma_budget']:.6g}   (w_FB's rate: "
          f"P(error at T) ~ exp(-T Gamma_FB))")
    print(f"{'Gamma_FB(w(nu), nu)':<{label}}{out['gamma_budget_of_w']:.6g}   "
          f"(w(nu)'s rate at a fixed budget)")
