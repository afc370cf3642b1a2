"""Which tests the fast tier leaves to CI: `pytest -m "not slow"` before a commit.

conftest.py marks a test `slow` when it is a notebook (nbval executes a whole chapter),
uses a fixture of SLOW_FIXTURES (a run in another process, a built book, a training run
shared by a module), lives in a module of SLOW_MODULES, or is named in SLOW_TESTS. CI
runs everything, slow or not; the fast tier keeps every module's quick unit tests
(tests/test_fast_tier.py checks that no module loses all of them without a reason here).

Entries were chosen from `--durations` of a niced run on a shared 2-core machine: a test
(setup included) that took about 4 s or more there is slow, and so is a test that reads
what a slow test leaves behind. Give a new entry its reason.
"""

from __future__ import annotations

# fixture -> why every test that uses it is slow (a module-scoped fixture is paid by the
# first test that asks for it: list the fixture, not that test). A name counts in every
# module: a fixture whose name another module reuses for a quick one goes in SLOW_TESTS.
SLOW_FIXTURES = {
    "smoke_reference": "a whole `run --config smoke` in its own process",
    "built_book": "builds the Jupyter Book",
    "digest_run": "a smoke run keeping state digests only, in its own process",
    "smollm2": "dequantises SmolLM2-135M from its GGUF file",
    "node": "a TRL study over worker processes, one killed and restarted",
    "study": "a TRL study of every arm, in other processes",
    "lab5": "reruns Lab 5 (expert iteration against GRPO)",
    "sft_run": "SFT runs, interrupted and resumed against continuous ones",
}

# module (relative to tests/) -> why every test in it is slow
SLOW_MODULES = {
    "test_notebooks_portable.py": "executes every chapter again under other float arithmetic",
    "book/test_chapters_on_qwen_standin.py": "executes four chapters on a qwen-shaped stand-in",
    "test_how_to_extend_recipes.py": "performs the recipes in copies of the repository",
    "part1/test_crash_recovery.py": "every test reads runs killed and resumed in other processes",
    "part1/test_fixed_prompts_crash.py": "its one test kills a fixed-prompt run and continues it",
    "part2/test_trl_backend_runs.py": "every test reads a TRL study run in other processes",
    "part2/test_study_anchors.py": "every test copies a family smoke run stopped after a step",
}

# module::test (without parameters: every case) -> why it is slow
SLOW_TESTS = {
    "part1/test_studies.py::test_study_check_passes_on_the_record_and_refuses_a_tampered_copy": (
        "three CLI processes, two of them loading torch for the band study's check"
    ),
    "core/test_refused_before_harm.py::test_device_names_are_checked": (
        "imports the TRL backend (trl, peft) to reach its slot parser"
    ),
    "test_fast_tier.py::test_every_module_keeps_its_quick_tests_in_the_fast_tier": (
        "collects the whole suite in another process"
    ),
    "book/test_colab.py::test_chapter_one_runs_on_a_simulated_colab": (
        "a fresh virtual environment, then chapter 1 in it"
    ),
    "book/test_colab.py::test_every_import_the_chapters_need_ships_with_colab": (
        "imports every chapter's modules in a fresh process"
    ),
    "test_tests_portable.py::test_float_sensitive_tests_pass_with_other_float_arithmetic": (
        "runs every float-sensitive test again in a subprocess"
    ),
    "part1/test_keep_states.py::test_the_one_sequence_no_cache_path_end_to_end": (
        "a smoke run on the one-sequence path"
    ),
    "training/test_control_rewards.py::test_a_random_reward_run_resumes_bit_for_bit": (
        "three short GRPO runs (continuous, interrupted, resumed) under the random reward"
    ),
    "part1/test_control_study.py::test_both_halves_run_at_smoke_scale_and_continue": (
        "three short GRPO runs of the tiny model, each scored, then pass@k draws"
    ),
    "part1/test_control_study.py::test_two_halves_combine_into_the_declared_analysis": (
        "three short GRPO runs of the tiny model in two folders, each scored, then pass@k"
    ),
    "part3/test_lab_runs.py::test_a_killed_model_lab_continues_to_the_uninterrupted_result": (
        "a model lab killed and continued"
    ),
    "part3/test_lab_runs.py::test_lab1_then_the_suite": "Lab 1 trained, then the suite run",
    "part1/test_thinking_arms.py::test_both_arms_run_and_pair_at_smoke_scale": (
        "both arms of the thinking comparison trained and scored on the micro model"
    ),
    "training/test_reward_terms_in_grpo.py::test_a_thinking_branch_logs_its_reward_terms_apart": (
        "a GRPO branch of the micro model on the thinking prompt"
    ),
    "part3/test_reward_model.py::test_lab3_figures": "trains Lab 3's reward models",
    "part3/test_dpo.py::test_digit_dpo_reproduces_the_module_log": "reruns the digit DPO lab",
    "training/test_sft.py::test_a_signal_stops_a_single_stage_cleanly_and_the_same_command_continues": (
        "an SFT stage stopped by a signal in another process"
    ),
    "part2/test_run_folders.py::test_killing_the_study_parent_leaves_no_worker": (
        "a study's worker processes, killed"
    ),
    "part2/test_gpu_recipes.py::test_slurm_script_dry_runs_each_nodes_share": (
        "dry runs of the Slurm script in other processes"
    ),
    "part2/test_trl_data_parallel.py::test_two_processes_make_the_one_process_step": (
        "TRL runs on one and on two processes (the module's `runs` fixture)"
    ),
    "part2/test_trl_data_parallel.py::test_evaluation_over_two_processes_equals_one_item_for_item": (
        "the same TRL runs (the module's `runs` fixture)"
    ),
    "part2/test_trl_checkpoint_seals.py::test_prompts_data_edited_between_stop_after_and_resume_is_refused": (
        "a TRL smoke run stopped after a step, then resumed on edited prompts"
    ),
    "part2/test_study.py::test_interrupt_and_resume_equal_a_continuous_run": (
        "three training runs per arm: interrupted, resumed and continuous"
    ),
    "part2/test_study.py::test_study_status_and_analyse_from_the_command_line": (
        "counts the runs the interrupt-and-resume tests leave in the module's study folder"
    ),
    "part2/test_study.py::test_a_killed_study_worker_is_continued_to_the_same_run": (
        "a study worker process killed, then continued"
    ),
    "part2/test_study.py::test_the_study_splits_its_seeds_over_worker_processes": (
        "a tiny study over worker processes"
    ),
}
