"""Test configuration.

float64 everywhere, so that the oracle's accuracy checks mean what they say (the
engine runs in float32 by default outside the tests).

Two tiers. `python -m pytest` runs the fast tier (pyproject's addopts deselect
`slow`): every module, with small statistical checks, in about 4 to 6 minutes on a
2-core CPU from an empty compilation cache (docs/testing.md; the target is five). `python -m pytest -m slow` runs the rest: delta-PAC checks over
thousands of trials, convergence of allocations, every parameter of the
heavier parametrised tests, subprocesses (Ctrl-C and resume, two devices, two
hosts) and the smoke reproduction. Tests below marked slow by node id keep a cheap
sibling (one family, one rule, one parameter) in the fast tier.
"""

import os

import jax
import pytest

jax.config.update("jax_enable_x64", True)

import jbai  # noqa: E402 (jbai is imported once float64 is on)
from jbai.host import cores, memory_maps  # noqa: E402

from helpers import suite_cache_dir  # noqa: E402

# One CPU device per xdist worker, one thread each (`jbai.use_cpu_cores`), so that
# workers x devices <= cores: `-n auto` starts one worker per core. The command
# lines that tests run in subprocesses take one device too ($JBAI_DEVICES); a test
# of several devices asks for them.
jbai.use_cpu_cores(1)
os.environ[cores.ENV_DEVICES] = "1"

# JAX's persistent compilation cache, as the command line has it, in a directory of the
# suite's own and without a cap: JAX's size cap scans the directory at every write,
# which costs the suite's few thousand programs about 25 s.
jbai.enable_compilation_cache(suite_cache_dir(), max_bytes=-1)


# A worker frees JAX's compiled programs after a test where it has grown by more than
# this since it last did (or started): the tiers' workers reach 4 GB and more resident
# otherwise, and four of them on a CI machine of 16 GB swap. A program needed again is
# loaded from the persistent compilation cache. $JBAI_TEST_RSS_GROWTH (bytes) overrides
# it; 0 frees them after every test (a check that no test leans on another's programs).
RSS_GROWTH = int(os.environ.get("JBAI_TEST_RSS_GROWTH", 3 << 29))  # 1.5 GiB
_rss_after_clear = [0]


def _resident_bytes() -> int:
  """This process's resident memory (0 where /proc is missing)."""
  try:
    with open("/proc/self/statm") as f:
      return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
  except (OSError, ValueError, IndexError):
    return 0


@pytest.fixture(autouse=True)
def _bounded_memory():
  """One process runs every test of a tier and compiles a few thousand programs:
  after each test, free them where they near the kernel's limit on mappings
  (see `jbai.host.memory_maps`; past the limit XLA crashes with a segmentation fault)
  or where the worker's resident memory grew by RSS_GROWTH since it last freed them."""
  yield
  if memory_maps.relieve() or _resident_bytes() > _rss_after_clear[0] + RSS_GROWTH:
    jax.clear_caches()
    _rss_after_clear[0] = _resident_bytes()


# Node-id prefixes of tests in the slow tier besides those decorated
# @pytest.mark.slow.
SLOW = (
    # 2026-12-07, the fast tier at 521 s cold on 2 vCPUs: five of its longest, each
    # with a sibling there (a rollout to a budget, Bernoulli trials across pools in
    # test_engine, a long trial's counts in test_defects, a top-m rollout, the pair
    # costs by mask).
    "tests/test_rollout.py::test_a_traced_budget_reuses_the_program_and_gives_the_trials",
    "tests/test_float32_invariance.py::test_the_issues_bernoulli_trials_do_not_depend_on_the_pool",
    "tests/test_defects.py::test_a_trial_runs_past_2_31_pulls",
    "tests/test_problems.py::test_a_rollout_of_the_top_m_runs_under_a_users_jit_and_vmap_as_alone",
    "tests/test_transport.py::test_pair_costs_read_the_leader_alike_by_mask_and_by_gather",
    "tests/test_linear_family.py::test_rules_stop_and_answer_the_best_arm[lingape",
    "tests/test_linear_family.py::test_rules_stop_and_answer_the_best_arm[xy-static",
    "tests/test_linear_family.py::test_cli_grad_gives_the_gradients_in_theta",
    "tests/test_tcb.py::test_allocation_converges_to_w_star",
    "tests/test_oracle.py::test_values_and_gradients_are_finite_at_the_edges_of_theta[means1",
    "tests/test_oracle.py::test_values_and_gradients_are_finite_at_the_edges_of_theta[means2",
    "tests/test_oracle.py::test_values_and_gradients_are_finite_at_the_edges_of_theta[means5",
    "tests/test_oracle.py::test_values_and_gradients_are_finite_at_the_edges_of_theta[means6",
    "tests/test_estimate.py::test_cli_grad_in_beta_and_eps_with_each_estimator",
    "tests/test_estimate.py::test_the_causal_estimator_agrees_with_the_score_estimator_with_less_variance[bernoulli",
    "tests/test_estimate.py::test_gradient_of_the_error_after_a_fixed_budget_is_exact",
    "tests/test_memory_maps.py::test_relieve_frees_compiled_programs_above_the_fraction",
    "tests/test_tcb.py::test_delta_pac_with_the_kk_threshold[family0-means0-itcb]",
    "tests/test_tcb.py::test_delta_pac_with_the_kk_threshold[family1",
    "tests/test_reproduce.py::test_smoke_writes_every_file",
    "tests/test_reproduce.py::test_rerun_resumes_without_recomputing",
    "tests/test_reproduce.py::test_interrupted_job_is_rerun_alone",
    "tests/test_reproduce.py::test_table1_matches_the_paper",
    "tests/test_reproduce.py::test_smoke_numbers_are_sane",
    "tests/test_oracle_warm.py::test_cold_start_reaches_the_exact_solution",
    "tests/test_oracle_warm.py::test_warm_starts_track_the_exact_solver_along_a_trajectory[bernoulli",
    "tests/test_oracle_warm.py::test_warm_starts_track_the_exact_solver_along_a_trajectory[poisson",
    "tests/test_oracle_warm.py::test_float32_warm_is_as_accurate_as_float32_exact",
    "tests/test_rollout.py::test_rollout_gives_the_trials_of_simulate[bernoulli",
    "tests/test_rollout.py::test_rollout_vmaps_over_instances_and_deltas",
    "tests/test_oracle.py::test_optax_solver_agrees_with_the_exact_solver[",
    "tests/test_oracle.py::test_raw_solvers_handle_ties_without_nan",
    "tests/test_oracle.py::test_derivatives_for_a_family_without_closed_form_transport",
    "tests/test_oracle.py::test_beta_optimal_matches_brute_force",
    "tests/test_top_two.py::test_ttts_runs_and_repeats[bernoulli]",
    "tests/test_top_two.py::test_exact_challenger_law_against_rejection[bernoulli",
    "tests/test_top_two.py::test_exact_challenger_law_against_rejection[gaussian-wide]",
    "tests/test_top_two.py::test_curvature_bound_and_pair_centre",
    "tests/test_top_two.py::test_concentrated",
    "tests/test_top_two.py::test_union_sampler_acceptance",
    "tests/test_cli_resume.py::test_ctrl_c_then_resume_gives_the_uninterrupted_result",
    "tests/test_rules_baselines.py::test_leader_pulled_with_probability_beta[0.3",
    "tests/test_rules_baselines.py::test_leader_pulled_with_probability_beta[0.5-ttts]",
    "tests/test_rules_baselines.py::test_jit_vmap_state_and_determinism",
    "tests/test_rules_baselines.py::test_tracked_allocation_is_the_exact_one_along_a_trajectory",
    "tests/test_rules_baselines.py::test_ttts_resampling_challenger_distribution",
    "tests/test_rules_baselines.py::test_tci_penalty_changes_the_challenger",
    "tests/test_rules_baselines.py::test_tas_c_tracks_the_cumulative_projected_allocation",
    "tests/test_engine.py::test_two_devices_give_the_same_results",
    "tests/test_engine.py::test_two_hosts_with_jax_distributed_give_the_same_results",
    "tests/test_general_families.py::test_delta_pac_paper_threshold[logcosh]",
    "tests/test_general_families.py::test_oracle_against_independent_search",
    "tests/test_general_families.py::test_readme_snippet_runs",
    "tests/test_families.py::test_posterior_sample_concentrates_on_the_mean",
    "tests/test_thresholds.py::test_paper_default_eps_is_no_worse_than_fixed",
    "tests/test_samplers.py::test_loop_gives_the_rounds_it_replaces",
    "tests/test_transport.py::test_gamma_is_batched_over_leading_axes",
    "tests/test_estimate.py::test_cli_grad_prints_gradients_next_to_the_oracle",
    "tests/test_oracle.py::test_gradient_and_jacobian_match_finite_differences[bernoulli",
    "tests/test_oracle.py::test_gradient_and_jacobian_match_finite_differences[exponential",
    "tests/test_oracle.py::test_gamma_bounds_bracket_gamma_for_any_allocation",
    "tests/test_general_families.py::test_delta_pac_paper_threshold[weibull]",
    "tests/test_general_families.py::test_weibull_closed_forms[0.7]",
    "tests/test_general_families.py::test_weibull_closed_forms[3.5]",
    "tests/test_rules_baselines.py::test_tuned_beta_is_the_plug_in_top_weight",
    "tests/test_rules_baselines.py::test_leader_pulled_with_probability_beta[0.5-ebtc",
    "tests/test_rules_baselines.py::test_leader_pulled_with_probability_beta[0.5-tstci]",
    "tests/test_rules_baselines.py::test_ttts_falls_back_to_tc_at_the_cap",
    "tests/test_rules_baselines.py::test_tas_lazy_recomputes_on_a_geometric_grid",
    "tests/test_engine.py::test_lane_recycling_keeps_lanes_busy",
    "tests/test_engine.py::test_shrinking_the_pool_for_the_tail_changes_no_result",
    "tests/test_engine.py::test_beta_is_a_runtime_value",
    "tests/test_top_two.py::test_law_density_is_normalised_and_matches_scipy[beta]",
    "tests/test_top_two.py::test_law_density_is_normalised_and_matches_scipy[gamma]",
    "tests/test_top_two.py::test_ttts_runs_and_repeats",
    "tests/test_top_two.py::test_ttts_without_a_law_uses_the_capped_resampling",
    "tests/test_top_two.py::test_inactive_lanes_return_at_once",
    "tests/test_tcb.py::test_forced_exploration_pulls_the_least_sampled_arm",
    "tests/test_cli.py::test_beta_sweep_compiles_one_program_and_prints_one_table",
    "tests/test_oracle_warm.py::test_the_best_arm_changes",
    "tests/test_oracle_warm.py::test_capped_iterations_resume_at_the_next_call",
    "tests/test_oracle_warm.py::test_no_update_keeps_the_start",
    "tests/test_oracle.py::test_table_1_of_the_paper[bernoulli-means2-expected2-optax]",
    "tests/test_oracle.py::test_table_1_of_the_paper[bernoulli-means3-expected3-optax]",
    "tests/test_oracle.py::test_beta_optimal_is_optimal_at_the_optimal_beta",
    "tests/test_oracle_warm.py::test_batched_matches_one_by_one",
    "tests/test_rules_baselines.py::test_tas_d_pulls_the_most_under_tracked_arm",
    "tests/test_top_two.py::test_law_samples_follow_the_posterior",
    "tests/test_cli.py::test_run_prints_a_table",
    "tests/test_transport.py::test_gradient_of_the_transport_cost[golden",
    "tests/test_transport.py::test_auto_method_uses_the_closed_form_and_falls_back_to_golden",
    "tests/test_prng.py::test_same_numbers_as_default_threefry[0-gamma]",
    "tests/test_prng.py::test_same_numbers_as_default_threefry[0-randint]",
    "tests/test_prng.py::test_same_numbers_as_default_threefry[0-poisson]",
    "tests/test_prng.py::test_same_numbers_as_default_threefry[0-bits8]",
    "tests/test_prng.py::test_same_numbers_as_default_threefry[0-bits64]",
    "tests/test_samplers.py::test_truncated_normal_inverse_cdf_is_accurate",
    "tests/test_samplers.py::test_log1p_remainder_accuracy",
    "tests/test_samplers.py::test_normal_law",
    "tests/test_thresholds.py::test_paper_finite_on_applicable_families",
    "tests/test_general_families.py::test_general_family_quadrature_and_grid_paths",
    "tests/test_rules_baselines.py::test_fws_game_matches_linear_programming_with_many_arms_and_ties",
    "tests/test_estimate.py::test_finite_difference_in_a_runtime_parameter",
    "tests/test_families.py::test_fisher_information_is_the_curvature_of_kl",
    "tests/test_tcb.py::test_pulls_the_leader_when_it_is_under_sampled_and_the_challenger_otherwise[rule1]",
    # Moved to keep the fast tier within 5 minutes from an empty compilation cache
    # (docs/testing.md); each keeps a cheaper sibling in the fast tier.
    "tests/test_tcb.py::test_delta_pac_with_the_kk_threshold[family0-means0-tcb]",
    "tests/test_rollout.py::test_scores_are_the_derivative_of_the_log_likelihood",
    "tests/test_oracle.py::test_values_and_gradients_are_finite_at_the_edges_of_theta[means4",
    "tests/test_oracle.py::test_values_and_gradients_are_finite_at_the_edges_of_theta[means7",
    "tests/test_estimate.py::test_jax_grad_is_the_likelihood_ratio_estimate_and_nan_where_undefined",
    "tests/test_estimate.py::test_the_causal_estimator_agrees_with_the_score_estimator_with_less_variance",
    "tests/test_samplers.py::test_same_key_same_draw_and_no_dependence_on_the_batch",
    "tests/test_rules_baselines.py::test_runs_a_short_trial[ttts]",
    "tests/test_rules_baselines.py::test_fws_game_matches_linear_programming",
    "tests/test_oracle_warm.py::test_fixed_cost_in_float32_is_as_accurate_as_float32_exact",
    "tests/test_oracle_warm.py::test_float32_near_ties_give_a_finite_allocation_and_start",
    "tests/test_oracle_warm.py::test_fixed_cost_tracks_the_exact_solver_along_a_trajectory[bernoulli-means2]",
    "tests/test_oracle_warm.py::test_fixed_cost_tracks_the_exact_solver_along_a_trajectory[bernoulli-means4]",
    "tests/test_oracle_warm.py::test_fixed_cost_tracks_the_exact_solver_along_a_trajectory[poisson",
    "tests/test_oracle_warm.py::test_fixed_cost_tracks_the_exact_solver_along_a_trajectory[gaussian-means1]",
    "tests/test_oracle_warm.py::test_warm_starts_track_the_exact_solver_along_a_trajectory[gaussian",
    "tests/test_oracle_warm.py::test_fixed_cost_converges_from_a_cold_start[logcosh",
    "tests/test_oracle_warm.py::test_fixed_cost_converges_from_a_cold_start[bernoulli-means2]",
    "tests/test_faults.py::test_estimate_and_simulate_take_a_tiny_delta_in_float32",
    "tests/test_faults.py::test_tiny_delta_in_float32_stops_trials_as_float64_does",
    "tests/test_steps_per_iteration.py::test_unrolled_pools_run_the_trials_of_one_step_per_iteration[8-5]",
    "tests/test_properties.py::test_api_runs_or_raises_one_line[False]",
    "tests/test_general_families.py::test_weibull_closed_forms[2.0]",
    "tests/test_oracle_warm.py::test_fixed_cost_tracks_the_exact_solver_along_a_trajectory[bernoulli-means0]",
    "tests/test_eps_good.py::test_eps_zero_reproduces_the_exact_gllr_bit_for_bit",
    "tests/test_stops.py::test_rule_runs_the_same_trials_in_simulate_and_rollout[kl-racing]",
    "tests/test_oracle.py::test_values_and_gradients_are_finite_at_the_edges_of_theta",
    "tests/test_game_rules.py::test_simulate_and_rollout_give_the_same_trials[dkm]",
    "tests/test_samplers.py::test_at_least_one_gives_the_same_draws",
    "tests/test_rollout.py::test_rollout_inside_jit_and_vmap_over_beta_compiles_once",
    "tests/test_combinations.py::test_every_refusal_suggests_a_combination_that_is_accepted",
    "tests/test_general_families.py::test_logcosh_sampler_exact_and_flag",
    "tests/test_rules_baselines.py::test_fws_near_tie_in_float32_keeps_a_finite_iterate",
    "tests/test_identity.py::test_simulate_does_not_reuse_the_program_of_a_lookalike",
    "tests/test_transport.py::test_gradient_of_the_transport_cost[closed-bernoulli]",
    # Moved from the fast tier (627 s from an empty cache, issue 47) to the slow one; each
    # keeps a sibling in the fast tier that runs the same modules.
    "tests/test_docs.py::test_examples_run[README.md]",
    "tests/test_static_design.py::test_the_gradient_in_the_logits_has_their_shape_and_is_what_jax_grad_returns",
    "tests/test_checks.py::test_estimate_and_finite_difference_check_runtime_parameters",
    "tests/test_beta_tuning.py::test_beta_tuning_rows_on_a_small_config",
    "tests/test_oracle_float32.py::test_float32_derivatives_under_jit_and_vmap_and_of_every_solver",
    "tests/test_oracle_float32.py::test_float32_derivatives_near_ties_are_those_of_float64[means2]",
    "tests/test_tas_eps.py::test_warm_oracle_tracks_the_nested_bisection[bernoulli-means1-0.1]",
    "tests/test_eps_oracle.py::test_gradient_matches_finite_differences[bernoulli-1]",
    "tests/test_design_experiment.py::test_design_rows_on_a_small_config",
    "tests/test_design_experiment.py::test_budget_design_rows_on_a_small_config",
    "tests/test_estimate.py::test_causal_records_follow_the_summation_by_parts_identities",
    "tests/test_docs.py::test_examples_run[docs/guide/study.md]",
    "tests/test_docs.py::test_examples_run[docs/guide/budget.md]",
    "tests/test_docs.py::test_examples_run[docs/guide/beyond.md]",
    "tests/test_docs.py::test_examples_run[docs/guide/oracle.md]",
    # Moved from the fast tier at 568 s from an empty cache (issue 47): the
    # exhaustive and statistical checks of modules that keep cheaper fast tests.
    "tests/test_estimate.py::test_gradients_at_a_fixed_budget_are_exact",
    "tests/test_oracle_float32.py::test_float32_derivatives_near_ties_are_those_of_float64[means1]",
    "tests/test_checks.py::test_a_users_arm_out_of_range_is_caught_on_every_step_eagerly_and_under_jit",
    "tests/test_study_budget.py::test_a_budget_study_has_the_rows_of_jbai_budget_and_plot_redraws_them",
    "tests/test_tas_eps.py::test_same_key_same_result_through_run_simulate_and_rollout",
    "tests/test_oracle_budget.py::test_rate_is_differentiable_and_batched",
    "tests/test_eps_oracle.py::test_eps_zero_is_the_exact_oracle[bernoulli]",
    "tests/test_eps_oracle.py::test_agrees_with_garivier_kaufmann_in_scipy[poisson]",
    "tests/test_eps_rules.py::test_ebtc_eps_takes_eps_at_run_time_as_beta",
    "tests/test_oracle_warm.py::test_fixed_cost_converges_from_a_cold_start[bernoulli-means3]",
    "tests/test_game_rules.py::test_tas_c_without_projection_tracks_w_itself",
    "tests/test_top_two.py::test_exact_challenger_law_against_rejection[gaussian-1e-3]",
    "tests/test_transport.py::test_gradient_of_the_transport_cost[closed-exponential]",
    "tests/test_cli.py::test_rules_and_deltas_side_by_side_with_common_random_numbers",
    "tests/test_boundary.py::test_a_users_block_rule_takes_its_blocks_in_one_step",
    "tests/test_eps_good.py::test_bisection_cost_gradients[bernoulli",
    "tests/test_gk16.py::test_tiny_run_writes_the_table_and_resumes",
    "tests/test_general_families.py::test_exponential_family_oracle_with_golden_transport",
    "tests/test_budget.py::test_fixed_budget_rules_spend_the_budget_on_their_phases",
    "tests/test_eps_rules.py::test_cli_threshold_and_default_eps",
    "tests/test_eps_oracle.py::test_agrees_with_garivier_kaufmann_in_scipy[bernoulli]",
    "tests/test_oracle_warm.py::test_fixed_cost_converges_from_a_cold_start[bernoulli-means4]",
    "tests/test_ties.py::test_the_common_path_gives_every_lane_its_own_answer",
    "tests/test_tas_eps.py::test_warm_oracle_tracks_the_nested_bisection",
    "tests/test_boundary.py::test_result_is_a_pytree_of_arrays_with_its_summary_apart",
    "tests/test_eps_oracle.py::test_the_pair_costs_are_equal_at_the_optimum[bernoulli]",
    "tests/test_eps_oracle.py::test_eps_good_runs_report_t_star_eps",
    "tests/test_study.py::test_the_gk16_study_is_the_reproduce_item",
    "tests/test_defects.py::test_the_command_line_reports_the_cap_it_ran_with",
    "tests/test_stops.py::test_delta_is_a_runtime_value_of_the_rule",
    "tests/test_budget.py::test_uniform_on_gaussian_arms_has_the_exact_error",
    "tests/test_engine.py::test_delta_vector_matches_separate_runs",
    "tests/test_oracle.py::test_table_1_of_the_paper[bernoulli-means2-expected2-exact]",
    "tests/test_thresholds.py::test_jit_and_vmap[paper]",
    "tests/test_problems.py::test_a_top_m_run_resumes_from_its_finished_trials",
    "tests/test_problems.py::test_lucb_for_the_top_1_is_kl_lucb_with_the_gllr_stop",
    "tests/test_budget.py::test_run_budget_prints_one_table_and_resumes",
    "tests/test_eps_good.py::test_bisection_cost_gradients",
    "tests/test_study.py::test_an_interrupted_job_resumes_from_its_checkpoint",
    "tests/test_estimate.py::test_no_silent_zero_through_rollout",
    "tests/test_checks.py::test_without_checks_the_trials_are_the_same_and_nothing_is_raised",
    "tests/test_estimate.py::test_future_noise_control_variates_have_their_structure",
    "tests/test_eps_rules.py::test_eps_rules_in_float32_and_float64[False]",
    "tests/test_checks.py::test_checks_of_traced_instances_name_the_bad_row",
    "tests/test_study.py::test_the_ratio_study_is_the_reproduce_item",
    "tests/test_eps_rules.py::test_same_key_same_result_through_run_simulate_and_rollout[ebtc-eps-ids]",
    "tests/test_eps_rules.py::test_same_key_same_result_through_run_simulate_and_rollout[lucb1-eps]",
    "tests/test_tas_eps.py::test_same_key_same_result_through_run_simulate_and_rollout[tas-c-eps]",
    "tests/test_eps_good.py::test_eps_good_run_answers_in_the_eps_good_set_and_agrees_with_rollout",
    "tests/test_faults.py::test_traced_runtime_parameters_pass_through",
    "tests/test_boundary.py::test_a_users_block_rule_stops_at_the_cap",
    "tests/test_static_design.py::test_logits_in_the_factory_and_as_a_runtime_parameter_give_the_same_trials",
    "tests/test_checks.py::test_rollout_checks_traced_means_and_delta[means0-0.1-means contain NaN]",
    "tests/test_game_rules.py::test_forced_sqrt_t_k2_pulls_at_the_edge_and_strict_does_not",
    "tests/test_stops.py::test_exp_gap_takes_a_phase_in_one_block_with_the_same_trial_as_pull_by_pull",
    "tests/test_study.py::test_an_instance_entry_sets_its_own_trials_and_cap",
    "tests/test_stops.py::test_rule_runs_the_same_trials_in_simulate_and_rollout[lucb1]",
    "tests/test_study.py::test_a_study_of_eps_good_answers_reports_t_star_eps",
    "tests/test_defects.py::test_exp_gap_finishes_on_its_defaults",
    "tests/test_tas_eps.py::test_degenerate_instances_follow_the_nested_bisection",
    "tests/test_estimate.py::test_richardson_corrects_every_trial_by_the_first_quarter",
    "tests/test_tas_eps.py::test_float32_bernoulli_run",
    "tests/test_checks.py::test_rollout_checks_traced_means_and_delta[means1",
    "tests/test_eps_oracle.py::test_float32",
    "tests/test_rollout.py::test_rollout_gives_the_trials_of_simulate[gaussian-means0-tcb]",
    "tests/test_eps_rules.py::test_eps_rules_in_float32_and_float64[True]",
    "tests/test_eps_rules.py::test_same_key_same_result_through_run_simulate_and_rollout[ebtc-eps]",
    "tests/test_checks.py::test_a_batch_names_its_bad_instance",
    "tests/test_checks.py::test_rollout_checks_traced_means_and_delta[means2",
    "tests/test_study.py::test_a_block_rule_finishes_on_its_own_default_cap",
    "tests/test_study.py::test_the_docs_example_runs_and_pandas_reads_its_tables",
    "tests/test_oracle_float32.py::test_float32_derivatives_near_ties_are_those_of_float64[means0]",
    # Moved at 321 to 355 s (issue 47): a third and fourth family of checks whose
    # Gaussian, Bernoulli and Weibull cases stay fast, and one more width of the arg-max.
    "tests/test_oracle_warm.py::test_fixed_cost_converges_from_a_cold_start[poisson-",
    "tests/test_oracle_warm.py::test_fixed_cost_converges_from_a_cold_start[exponential-",
    "tests/test_families.py::test_stat_mean_and_mle_are_consistent[poisson]",
    "tests/test_eps_good.py::test_bisection_in_float32_agrees_with_float64[poisson]",
    "tests/test_ties.py::test_argmax_and_argmin_are_jnp_s[104]",
    # Moved at 332 to 356 s (issue 47), each with a fast sibling: the library's
    # second process loading the cache (the command line's: here), rules of a
    # user's under jit in simulate and rollout (inside the caller's jit: here), the
    # top-m oracle against SciPy (top 1 = the best arm's: here), Table 1 (its further
    # digits: here).
    "tests/test_compilation_cache.py::test_the_command_lines_second_run_loads_its_programs",
    "tests/test_checks.py::test_a_users_rule_runs_inside_the_callers_jit_over_the_key_or_delta",
    "tests/test_problems.py::test_top_1_is_the_best_arm_and_its_exact_oracle[gaussian]",
    "tests/test_oracle.py::test_exact_solver_digits_beyond_table_1",
    # and at 328 s: a run to a budget under jit against jbai.budget (the fast tier's:
    # thresholding at a budget, rollout against jbai.budget), a listed instance's study
    # against simulate (the fast tier's: the top-m study against simulate).
    "tests/test_estimate.py::test_a_run_to_a_budget_is_that_of_jbai_budget_as_a_pure_function",
    "tests/test_study.py::test_a_listed_instance_has_the_trials_of_simulate_with_the_same_seed",
)


def pytest_collection_modifyitems(config, items):
  for item in items:
    if item.nodeid.startswith(SLOW):
      item.add_marker(pytest.mark.slow)


def pytest_xdist_auto_num_workers(config):
  """`-n auto` (the README's commands): one worker per core, at most 4. Each worker
  compiles its own programs (JAX's persistent cache, shared on disk, serves the
  others) and holds up to about 4 GB at the slow tier's peak."""
  return max(1, min(os.cpu_count() or 1, 4))
