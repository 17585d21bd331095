"""The functional core: pure functions that run under the caller's jit, vmap and grad.

  lane.py               one trial's state and its step (stopping rule, rule, reward)
  pool.py               the lane pool: many trials in one lax.while_loop, lanes recycled
  rollout.py            a whole simulation as one compiled function
  estimate.py           E[tau], P(error) and their likelihood-ratio gradients
  estimators.py         the likelihood-ratio estimators (score, causal) from per-trial records
  finite_differences.py central finite differences with common random numbers
  records.py            per-trial outputs from the records the lanes write
  budget.py             the budget T and its checkpoints, for runs to a budget
  inputs/               names resolved and values checked, for every entry point
"""
