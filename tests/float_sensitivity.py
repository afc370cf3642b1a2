"""Which test modules compare floats computed on this CPU, or derive a verdict from them.

conftest.py marks every test of a FLOAT_SENSITIVE module `float_sensitive` (a single test
elsewhere may carry @pytest.mark.float_sensitive itself); tests/test_tests_portable.py runs
`-m float_sensitive` again under other float arithmetic, once with ATen's default kernels
and once with its AVX2 kernels. Every test module is in one of the two tables, so a new
module is classified when it is added (test_tests_portable.py checks).

A module is float-sensitive when its assertions depend on torch arithmetic whose last bits
differ between kernel paths (matmuls, reductions, exp/softmax, a model's forward, sampling
from its logits, a training step). It is not when it checks text, files, hashes of fixed
bytes, integers, or compares two results computed the same way in one process (a resumed
run against a continuous one: equal on every path, or the resume is wrong).
"""

from __future__ import annotations

# Paths relative to tests/: a folder covers every module under it.
FLOAT_SENSITIVE = (
    "exercises",
    "part3",
    "training/test_batched.py",
    "training/test_entropy.py",
    "training/test_grpo.py",
    "training/test_kl_gradients.py",
    "training/test_lora.py",
    "training/test_losses.py",
    "training/test_mismatch.py",
    "training/test_objectives.py",
    "training/test_objectives_newer.py",
    "training/test_objectives_on_part1.py",
    "training/test_rollout.py",
    "training/test_rollout_records.py",
    "training/test_samplers.py",
    "training/test_sft.py",
    "training/test_trl_parity.py",
    "training/test_trl_parity_newer.py",
    "part1/test_advantage_scale.py",
    "core/test_model.py",
    "core/test_model_sources.py",
    "core/test_scoring.py",
    "evaluation/test_evaluate.py",
    "part1/test_demos.py",
    "part1/test_exercise.py",
    "part1/test_run_plan.py",
    "part1/test_smollm2_candidate.py",
    "part2/test_analysis.py",
    "part2/test_family_demos.py",
    "part2/test_newer_objectives.py",
    "part2/test_trl_backend.py",
    "book/test_lab_widgets.py",
    "book/test_plots.py",
    "book/test_widgets.py",
    "task/test_tinybase.py",
)

# Module -> why its assertions hold bit for bit on every kernel path.
NOT_FLOAT_SENSITIVE = {
    "book/test_book_map.py": "word counts and titles of the pages",
    "book/test_citations_and_notation.py": "the pages' text",
    "book/test_cost_plots.py": "the accounting's values drawn, against themselves (stacks to 1e-12)",
    "book/test_every_chapter_has_a_figure.py": "the executed notebooks' output kinds",
    "book/test_family_figures.py": "values computed once, drawn, against themselves",
    "book/test_group_size_figure.py": "recorded values and integer counts, drawn, against themselves",
    "book/test_lab_plots.py": "recorded values drawn, against themselves",
    "book/test_live_widgets.py": "float64 values against the browser's doubles at 1e-9, far above rounding",
    "book/test_prose_numbers.py": "the numbers the pages quote, as text",
    "book/test_pretrained_chapter.py": "recorded numbers against the chapter's sentences",
    "book/test_recorded_claims.py": "recorded numbers against the chapters' sentences",
    "book/test_smoothed_titles.py": "figure titles",
    "book/test_task_plots.py": "integer histograms of generated problems, drawn, against themselves",
    "core/test_bounded_input.py": "refusals of hostile files",
    "core/test_bounded_meanings.py": "refusals of out-of-range settings and damaged inputs",
    "core/test_closed_folders.py": "path containment",
    "core/test_preregistration.py": "git state and stamps",
    "core/test_refused_before_harm.py": "refusals of destructive paths; files left untouched",
    "core/test_stamp_anchors.py": "stamps, git and anchor digests; refusals",
    "core/test_input_digests.py": "file digests and refusals",
    "book/test_recorded_digests.py": "recorded files' digests",
    "part1/test_band_study.py": "splits, prompts, files and rules on given integers",
    "part1/test_band_reading.py": "the recorded answers' counts and means, float64 at 1e-12",
    "part1/test_bench_throughput.py": "rates from given seconds and GRPOConfig fields",
    "part1/test_control_study.py": "declaration refusals, 0/1 contrasts, a smoke run's shape",
    "part1/test_control_reading.py": "means of synthetic 0/1 answers, exact in binary",
    "part1/test_studies.py": "table entries, paths, recorded files checked against declarations",
    "part1/test_thinking_reading.py": "the screen's 0/1 answers: counts, numpy means, a seeded bootstrap",
    "evaluation/test_pass_at_k.py": "pass@k in float64 against exact fractions, 1e-12 or wider",
    "training/test_control_rewards.py": (
        "coins from hashes, rewards of given answers; a resumed run against a continuous "
        "one, in one process"
    ),
    "part1/test_thinking_arms.py": "counts, keys and profiles of a micro-model run",
    "part1/test_thinking_comparison.py": "a declaration's keys and a plan's Python arithmetic",
    "part1/test_thinking_screen.py": "the declared rule on given rates; counts of a cell",
    "part1/test_fixed_prompts_crash.py": "a resumed run against a continuous one, in one process",
    "part1/test_lift_crash.py": "a resumed lift candidate against a continuous one, same machine",
    "part1/test_fresh_test.py": "problem sets, row counts and recorded outcomes",
    "part1/test_reloaded_state_digests.py": "hashes and refusals",
    "part2/test_backends.py": "the backend table, the CLI's choices and the dispatch",
    "part2/test_card_defaults_lock.py": "a lock's fields",
    "part2/test_card_defaults_record.py": "recorded outcomes and their recomputed analysis",
    "part2/test_generation_lock.py": "a lock's fields and refusals",
    "part2/test_gpu_check.py": "a dry run's plan",
    "part2/test_gpu_recipes.py": "scripts' syntax and dry runs",
    "part2/test_trl_checkpoint_seals.py": "hashes and refusals",
    "part2/test_study_anchors.py": "digests and refusals of a stopped run's checkpoint",
    "part2/test_trl_data_parallel.py": "two runs on this CPU's own kernels compared at stated tolerances",
    "part2/test_trl_study.py": "concurrent runs against sequential ones on the same kernels",
    "training/test_trl_config.py": "GRPOConfig fields, compared as dicts",
    "test_cli_refusals.py": "exit codes and messages",
    "test_book.py": "the built book's text and links",
    "test_checkout_imports.py": "which package a process imports",
    "test_fast_tier.py": "the slow lists against the test files and the collection",
    "test_how_to_extend.py": "the appendix's text against the code",
    "test_how_to_extend_recipes.py": "the recipes' files and commands, exit codes and text",
    "test_layout.py": "imports between layers",
    "test_import_circles.py": "the import graph's circles, read from source",
    "test_lint.py": "ruff on the sources",
    "test_notebooks_portable.py": "runs the notebooks under other kernels itself",
    "test_parameter_counts.py": "the sources' signatures",
    "test_size_limits.py": "line counts",
    "test_tests_portable.py": "runs the float-sensitive tests under other kernels itself",
    "book/test_chapters_on_qwen_standin.py": "chapters 4-7 run to the end on a stand-in "
    "(their printed numbers have the notebooks' perturbed pass; four chapters would cost "
    "minutes more per pass)",
    "book/test_colab.py": "the Colab cells' text",
    "book/test_cell_kinds.py": "the chapters' cell kinds and comment lines",
    "book/test_chapter_refs.py": "chapter references against _toc.yml, as text",
    "book/test_hidden_solutions.py": "solution cells' markup and tags",
    "book/test_reader_words.py": "the pages' text",
    "book/test_rerunnable_cells.py": "the chapters' code cells, parsed",
    "book/test_row_claims.py": "recorded tables against the sentences that single out rows",
    "book/test_sections.py": "the pages' headings and text",
    "book/test_diagrams.py": "diagram source text",
    "book/test_figure_layout.py": "font sizes and text boxes of matplotlib's layout, and "
    "markdown rewriting; no computed tensor decides them",
    "book/test_hide_test_markers.py": "cell tags",
    "book/test_learning_headline.py": "recorded numbers against the quoted sentence",
    "book/test_notebook_helpers.py": "formatting of given numbers",
    "core/test_checkpoint.py": "byte-exact round trips of saved states",
    "core/test_code_identity.py": "hashes of source files",
    "core/test_config.py": "configuration values and their hashes",
    "core/test_profiles.py": "profile files",
    "core/test_profile_object.py": "profile mappings, their hashes and read-only containers",
    "core/test_progress.py": "progress lines",
    "core/test_quoted_budgets.py": "counts quoted in the prose",
    "core/test_record_names.py": "field names of recorded files",
    "core/test_refused_before_compute.py": "errors before any compute",
    "core/test_resumable_run.py": "a resumed toy run against a continuous one, in one process",
    "core/test_schedule.py": "learning rates in Python floats",
    "core/test_settings_schema.py": "settings classes as flags and YAML keys, and their refusals",
    "evaluation/test_paired.py": "differences of given 0/1 outcomes",
    "evaluation/test_responses.py": "response records",
    "evaluation/test_statistics.py": "intervals and tests in Python floats",
    "part1/test_crash_recovery.py": "a resumed run against a continuous one, in one process",
    "part1/test_evidence_integrity.py": "hashes and refusals",
    "part1/test_fixed_prompt_objectives.py": "recorded files' contents",
    "part1/test_fixed_prompts.py": "prompt selection and recorded files",
    "part1/test_keep_states.py": "hashes of kept states",
    "part1/test_pipeline.py": "stage markers and refusals; the smoke run end to end",
    "part1/test_pipeline_compare.py": "a run folder against itself, recorded comparisons",
    "part1/test_recorded_sweep.py": "recorded files' contents",
    "part1/test_side_by_side.py": "a run split across workers against the continuous one",
    "part1/test_sweep.py": "the sweep's plan and folders",
    "part2/test_card_cost.py": "arithmetic on published counts",
    "part2/test_card_cost_lock.py": "the locked configuration",
    "part2/test_card_cost_power.py": "a seeded simulation in Python and NumPy",
    "part2/test_commands.py": "command lines",
    "part2/test_gsm8k.py": "parsing of GSM8K answers",
    "part2/test_lock_pin.py": "hashes of the lock",
    "part2/test_record.py": "hashes of recorded traces",
    "part2/test_recorded_study.py": "recorded files' contents",
    "part2/test_run_folders.py": "run folders and their refusals",
    "part2/test_study.py": "a resumed study against a continuous one, in one process",
    "part2/test_trl_backend_runs.py": "TRL runs resumed against continuous ones, in one process",
    "task/test_data.py": "the dataset's integers and hashes",
    "task/test_prompts.py": "token ids",
    "task/test_working_families.py": "integers, strings and the verifier's 0/1",
    "training/test_hack_detectors.py": "text detectors and shares of given lists",
    "training/test_reward_terms.py": "0/1 terms of given texts and their declared weights",
    "training/test_reward_terms_in_grpo.py": "keys, and relations true for any sampled tokens",
    "task/test_verifier.py": "the verifier's exact rules",
    "training/test_objective_sources.py": "the registry's source citations",
    "training/test_registry.py": "the registry's classification, hashes and refusals",
}


# Tests that fail inside a perturbed pass today (measured on an AMD EPYC, OMP_NUM_THREADS=1,
# MKL_CBWR=COMPATIBLE): they demand bitwise equality, or float64 agreement, between a
# prefix's forward pass and the same positions inside a longer one, which transformers'
# float32 softmax and RMSNorm (even in a float64 model) and MKL's blocking do not give on
# every path. conftest.py marks them xfail inside the perturbed passes only, so the normal
# pass still holds them; each needs a tolerance measured on all paths (issue 33 follow-up).
KNOWN_FRAGILE = {
    "training/test_rollout.py::test_captured_logprobs_match_full_sequence_rescoring[False]": (
        "sampled vs re-scored log-probs 4.8e-7 apart under avx2 and default, asserted == 0"
    ),
    "training/test_grpo.py::test_ratio_is_one_on_the_first_update_and_clipping_acts_on_the_second": (
        "the same check on the update's rows: 4.8e-7, asserted == 0"
    ),
    "training/test_grpo.py::test_accumulated_gradient_equals_the_batched_objective": (
        "one gradient entry 4.3e-9 apart under avx2 (atol 1e-9, rtol 1e-4)"
    ),
    "training/test_batched.py::test_batched_gradient_equals_the_one_at_a_time_gradient_in_float64": (
        "up to 2.1e-9 apart under default kernels (atol 1e-10, rtol 1e-5): float32 inside"
    ),
}
