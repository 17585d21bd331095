"""Sampling rules, one per file, behind a flat namespace and a registry by name.

Example:
  >>> import jbai
  >>> jbai.rules.tcb(eps=1.0)
  tcb(eps=1.0)
"""

import inspect

from jbai.rules.adaptive_ucb_e import adaptive_ucb_e
from jbai.rules.always_top import always_top
from jbai.rules.apt import apt
from jbai.rules.anytime_halving import anytime_halving
from jbai.rules.base import Rule
from jbai.rules.best_challenger import best_challenger
from jbai.rules.chernoff_racing import chernoff_racing
from jbai.rules.dkm import dkm
from jbai.rules.ebtc import ebtc
from jbai.rules.ebtc_eps import ebtc_eps, ebtc_eps_ids
from jbai.rules.ebtc_top_m import ebtc_top_m
from jbai.rules.ebtci import ebtci
from jbai.rules.exp_gap import exp_gap
from jbai.rules.fws import fws
from jbai.rules.gradient_ascent import gradient_ascent
from jbai.rules.itcb import itcb
from jbai.rules.kl_lucb import kl_lucb
from jbai.rules.kl_racing import kl_racing
from jbai.rules.lil_ucb import lil_ucb
from jbai.rules.lingape import lingape
from jbai.rules.lucb1 import lucb1
from jbai.rules.lucb1_eps import lucb1_eps
from jbai.rules.lucb_top_m import lucb_top_m
from jbai.rules.optimistic_tas import optimistic_tas
from jbai.rules.sequential_halving import sequential_halving
from jbai.rules.static import static
from jbai.rules.successive_rejects import successive_rejects
from jbai.rules.t3c import t3c
from jbai.rules.t3c_tuned import t3c_tuned
from jbai.rules.tas import tas_c, tas_d
from jbai.rules.tas_above import tas_above
from jbai.rules.tas_top_m import tas_top_m
from jbai.rules.fws_top_m import fws_top_m
from jbai.rules.tas_eps import tas_c_eps, tas_d_eps
from jbai.rules.tcb import tcb
from jbai.rules.tstci import tstci
from jbai.rules.ttts import ttts
from jbai.rules.ucb_e import ucb_e
from jbai.rules.ugape import ugape
from jbai.rules.ugape_b import ugape_b
from jbai.rules.uniform import uniform
from jbai.rules.tcb_linear import tcb_linear
from jbai.rules.xy_static import xy_static

RULES = {
    "tcb": tcb,
    "itcb": itcb,
    "uniform": uniform,
    "always-top": always_top,
    "t3c": t3c,
    "ttts": ttts,
    "ebtc": ebtc,
    "ebtci": ebtci,
    "tstci": tstci,
    "t3c-tuned": t3c_tuned,
    "tas-c": tas_c,
    "tas-d": tas_d,
    "fws": fws,
    "dkm": dkm,
    "gradient-ascent": gradient_ascent,
    "best-challenger": best_challenger,
    "optimistic-tas": optimistic_tas,
    "lucb1": lucb1,
    "kl-lucb": kl_lucb,
    "ugape": ugape,
    "lil-ucb": lil_ucb,
    "kl-racing": kl_racing,
    "chernoff-racing": chernoff_racing,
    "exp-gap": exp_gap,
    "ebtc-eps": ebtc_eps,
    "ebtc-eps-ids": ebtc_eps_ids,
    "lucb1-eps": lucb1_eps,
    "tas-c-eps": tas_c_eps,
    "tas-d-eps": tas_d_eps,
    "successive-rejects": successive_rejects,
    "sequential-halving": sequential_halving,
    "ucb-e": ucb_e,
    "adaptive-ucb-e": adaptive_ucb_e,
    "ugape-b": ugape_b,
    "anytime-halving": anytime_halving,
    "xy-static": xy_static,  # the linear model's (jbai.linear.linear_family)
    "lingape": lingape,
    "tcb-linear": tcb_linear,
}

# Rules that sample for another question than the best arm (`jbai.problems`), built
# for its parameters (`get("apt", level=0.5)`).
OTHER_QUESTIONS = {
    "apt": apt,
    "tas-above": tas_above,
    "ebtc-top-m": ebtc_top_m,
    "lucb-top-m": lucb_top_m,
    "tas-top-m": tas_top_m,
    "fws-top-m": fws_top_m,
}
ALL = {**RULES, **OTHER_QUESTIONS}  # every rule by name


def get(name: str, **params) -> Rule:
  """Builds a rule by command-line name; raises ValueError naming an unknown one.

  Parameters the rule does not take are ignored, so that one set of command-line
  options (say --beta) serves every rule.
  """
  if name not in ALL:
    raise ValueError(f"unknown rule {name!r}; choose from {sorted(ALL)}")
  factory = ALL[name]
  accepted = inspect.signature(factory).parameters
  given = {k: v for k, v in params.items() if k in accepted and v is not None}
  missing = [p for p in accepted.values() if p.default is p.empty and p.name not in given]
  if missing:
    flag = {"level": "--above LEVEL", "m": "--top M"}.get(missing[0].name, missing[0].name)
    raise ValueError(f"rule {name!r} is built for its question's {missing[0].name}: give it "
                     f"(on the command line, {flag})")
  return factory(**given)


def describe() -> list:
  """(name, one-line description, parameters with defaults) for every rule."""
  rows = []
  for name, factory in ALL.items():
    doc = (inspect.getdoc(factory) or "").splitlines()
    params = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default}"
                       for p in inspect.signature(factory).parameters.values())
    rows.append((name, doc[0] if doc else "", params))
  return rows


__all__ = ["ALL", "OTHER_QUESTIONS", "RULES", "Rule", "always_top", "apt", "best_challenger", "describe", "dkm",
           "gradient_ascent", "optimistic_tas", "static", "ebtc", "ebtci", "fws", "get",
           "itcb", "t3c", "t3c_tuned", "tas_above", "tas_c", "tas_top_m", "fws_top_m", "tas_d", "tcb", "tstci", "ttts", "uniform",
           "lucb1", "kl_lucb", "lucb_top_m", "ugape", "lil_ucb", "kl_racing", "chernoff_racing", "exp_gap",
           "ebtc_eps", "ebtc_eps_ids", "ebtc_top_m", "lucb1_eps", "tas_c_eps", "tas_d_eps",
           "successive_rejects", "sequential_halving", "ucb_e", "adaptive_ucb_e", "ugape_b",
           "anytime_halving", "lingape", "tcb_linear", "xy_static"]
