"""Numbers the prose quotes that are not results: settings, constants, worked arithmetic.

The scanner in claims.py finds every decimal, percentage and power of ten in the book's
prose. Each must be a claim (tied to a record key) or be declared here once, with why it
is not a measurement. "*" applies to every page; a page's own table only to that page.
UNREVIEWED holds the numbers nobody has classified yet: each should become a claim or a
setting, and the list may only shrink (a number not found on its page fails the test).
"""

from __future__ import annotations

SETTINGS: dict[str, dict[str, str]] = {
    "*": {
        "95": "the level of every interval the book reports (95 %)",
        "2.5": "the 2.5 % quantile of a 95 % bootstrap interval",
        "97.5": "the 97.5 % quantile of a 95 % bootstrap interval",
        "0.05": "the significance level of a test",
        "5": "the 5 % significance level of a test",
        "0.02": "Part I's KL coefficient beta (seed 000)",
        "0.04": "Part III Lab 5's KL coefficient beta",
        "0.2": "the clip epsilon",
        "0.8": "the lower clip bound 1 - 0.2",
        "1.2": "the upper clip bound 1 + 0.2",
        "1.28": "clip-higher's upper bound 1 + 0.28 (DAPO)",
        "0.28": "clip-higher's upper epsilon (DAPO)",
        "1.16": "the TRL release this book runs (1.16)",
        "1.8": "the TRL release the Part II card ran (1.8.0)",
        "1e-5": "Part I's GRPO learning rate on the tiny base",
        "1e-6": "the seed's GRPO learning rate (0.5B, full fine-tuning)",
        "2e-4": "the warm start's learning rate on the tiny base; the rescoring tolerance",
        "2e-5": "seed 000's warm-start learning rate",
        "2.7": "the tiny base's size, 2.7M parameters (2,670,720)",
        "2.67": "the tiny base's size, 2.67 million parameters",
        "1.0": "a reward of 1 (right) or a clip norm of 1.0",
        "0.0": "a reward of 0 (wrong)",
        "10": "a 10 % share of the training prompts' warm-start success (selection band)",
        "50": "a 50 % share of the training prompts' warm-start success (selection band)",
    },
}

SETTINGS |= {
    "notebooks/part1/06_grpo.py": {
        "3e-4": "the size of the nudge the cell gives one captured value (a setting)",
    },
    "notebooks/part1/10_beyond_the_budget.py": {
        "0.01": "exercise's threshold for a reported gain (a setting)",
    },
    "notebooks/part2/01_the_arms.py": {
        "0.01": "worked arithmetic: a token's probability before one clipped update",
        "0.012": "worked arithmetic: 0.01 x 1.2, the most one clipped update allows",
        "0.25": "worked arithmetic: the mean of the exercise's group",
        "0.577": "worked arithmetic: the exercise's group's std",
    },
    "notebooks/part2/03_study_design.py": {
        "0.64": "the exercise's given reward rate (the card's run rounded)",
        "64": "worked arithmetic: a mixture in the exercise's solution",
        "36": "worked arithmetic: a mixture in the exercise's solution",
        "0.63": "worked arithmetic: the mixture's mean reward",
    },
    "notebooks/part2/06_training_inference_mismatch.py": {
        "3.0": "TRL's default cap C on the importance weight (a setting)",
        "15": "the single-gradient demo's bound on the ratio, read off its printed table",
    },
    "notebooks/part2/07_newer_objectives.py": {
        "1.5": "worked example: a response's summed log-ratio gap (given)",
        "4.48": "worked arithmetic: exp(1.5)",
    },
    "notebooks/part3/01_masked_sft.py": {
        "1e-4": "the lab's SFT learning rate",
        "0.5": "worked arithmetic: the token mean of exercise 3",
        "0.875": "worked arithmetic: exercise 3's token mean with 1.0 and 6.0 nats",
        "0.75": "worked arithmetic: exercise 3's mean of means with 1.0 and 6.0 nats",
        "3.0": "exercise 3's given summed loss",
        "6.0": "exercise 3's given summed loss",
    },
    "notebooks/part3/02_lora.py": {
        "2.8": "9,216 / 576² at rank 8: the structure of one 576x576 matrix",
        "1e-3": "the lab's LoRA learning rate",
        "0.5": "the scale s = α/r = 16/32, a setting",
    },
    "notebooks/part3/03_reward_model.py": {
        "0.3751": "the loss the published lab printed (quoted, not ours)",
        "0.374": "the spread of reruns across CPUs seen while building the lab (not recorded)",
        "0.378": "the spread of reruns across CPUs seen while building the lab (not recorded)",
        "0.3": "exercise 1's given pass probability",
    },
    "notebooks/part3/04_dpo.py": {
        "45": "the share of correct answers in the reference GRU's training data (a setting)",
        "2.0": "response 7's reward in the bandit (a constant of the toy problem)",
    },
    "notebooks/part3/05_expert_iteration_vs_grpo.py": {
        "79.6": "one rerun on another CPU, quoted to show the spread (not recorded)",
        "0.935": "sqrt(7/8), the sample-to-population std factor at G = 8 (a formula)",
        "0.5": "worked arithmetic: the mean of a group of given rewards",
    },
    "notebooks/part3/06_behaviour_suite.py": {
        "0.250": "the published run's overall score for the base model (quoted, not ours)",
        "0.375": "the published run's score (quoted); our fine-tune's, claimed where ours",
        "+0.125": "the published run's paired difference (quoted, not ours)",
        "0.025": "the published run's interval (quoted, not ours)",
        "0.225": "the published run's interval (quoted, not ours)",
        "0.0625": "the published McNemar p; also 2 x (1/2)^5 in exercise 3 (a formula)",
        "100": "text inside quoted replies and items",
        "14.2": "text inside a quoted SFT item",
        "17.9": "text inside a quoted SFT item",
        "0.7": "the sampling temperature of the try-this run (a setting)",
        "0.237": "worked arithmetic: exercise 2's normal-approximation interval",
        "0.763": "worked arithmetic: exercise 2's normal-approximation interval",
    },
    "notebooks/part3/07_simulated_judge.py": {
        "0.466": "the published lab's printed figure (quoted, not ours)",
        "0.125": "the published run's interval for its base model, reproduced by the cell below",
        "0.400": "the published run's interval for its base model, reproduced by the cell below",
    },
    "notebooks/part3/12_model_merging.py": {
        "0.9": "a DARE drop rate (a setting)",
        "0.5": "a soup weight (a setting)",
        "0.3": "a soup weight (a setting)",
        "0.4": "a soup weight (a setting)",
        "0.6": "a soup weight (a setting)",
        "0.7": "a soup weight (a setting)",
    },
    "notebooks/part3/13_troubleshooting.py": {
        "1.000": "the fault-tree reward of a useless reply, scored live in chapter III.8",
        "0.031": "one group of 32, 1/32 (arithmetic)",
        "0.4": "an invented log in exercise 1",
        "0.9": "an invented log in exercise 1",
    },
    "notebooks/part1/02_group_advantages.py": {
        "0.5": "worked arithmetic: mean and population std of the rewards (1, 1, 0, 0)",
        "0.1": "the exercise's constant reward",
    },
    "notebooks/part1/04_exact_kl.py": {
        "0.29": "the live two-token example's exact KL, printed by the cell above it",
        "0.24": "the live two-token example's exact KL, printed by the cell above it",
    },
    "notebooks/part1/07_resume.py": {
        "-0.0": "the float value minus zero (a constant)",
    },
    "notebooks/part1/11_quiz.py": {
        "0.5": "worked arithmetic: a quiz answer's mean and std",
        "0.866": "worked arithmetic: sqrt(3/4)",
    },
    "notebooks/part2/08_before_gpu_hours.py": {
        "8.19": "the card's model size in billions (Qwen3-8B, a constant)",
        "42.9": "40 GiB in decimal GB (arithmetic)",
        "16.4": "the model's bf16 weights in GB (arithmetic on a constant)",
        "16.1": "a T4's memory as the driver reports it (a hardware constant)",
        "5e-5": "TRL's LoRA example's learning rate (quoted)",
        "3e-4": "the LoRA rate on the tiny base (a setting)",
        "3e-5": "Part II's learning rate on the tiny base (a setting)",
        "2.8": "the card's batch's logits in GB (arithmetic on its settings)",
    },
    "notebooks/part2/09_quiz.py": {
        "0.125": "worked arithmetic: 2 x 0.5^4",
    },
    "notebooks/part3/08_fault_tree_reward.py": {
        "40": "the coverage weight of the reward (a setting)",
        "1.000": "the reward the chapter's cells score live for the trees it names",
        "0.857": "worked arithmetic: 6/7",
    },
    "notebooks/part3/09_memory_and_compute.py": {
        "4.127": "QLoRA's bits per weight, computed from its block layout (a formula)",
        "152.812": "the published memory figure (quoted; the calculator reproduces it)",
        "142.317": "152.812 GB in GiB (arithmetic)",
        "7": "the GB-to-GiB difference (arithmetic)",
        "19.54": "the published LoRA moments (quoted; chapter III.2 ties ours)",
        "1076.12": "the published full-model moments (quoted; chapter III.2 ties ours)",
        "29": "the calculator's FLOP saving for the case-study model (computed from its config)",
        "2": "the case-study adapter's share of parameters (computed from its config)",
        "3.61": "a published subtotal (quoted)",
        "4.983": "the published logits figure (quoted)",
        "0.031": "the published round-trip example's largest magnitude (quoted)",
        "2.15": "SmolLM2's FP32 AdamW states, 16 bytes x 134.5M (arithmetic)",
        "79.6": "exercise 2's given free memory",
        "12.6": "worked solution 2, printed by the calculator's cell",
        "17.2": "worked solution 2, printed by the calculator's cell",
        "6.8": "worked solution 2, printed by the calculator's cell",
        "0.4": "worked solution 2, printed by the calculator's cell",
        "18.5": "worked solution 2, printed by the calculator's cell",
    },
    "notebooks/part3/10_case_study_bill.py": {
        "7.50": "the published case study's SFT cost (quoted)",
        "5.53": "the published serving size (quoted; reproduced as 4.28 + 1.246)",
        "3": "the published recipe's warmup share (a setting)",
        "0.5": "our composite reward's structure weight (a setting)",
        "0.3": "our composite reward's coverage and penalty weights (settings)",
        "4.28": "the 4-bit blocks' size (arithmetic on the model's shape)",
        "1.246": "the 8-bit tables' size (arithmetic on the model's shape)",
        "4.78": "the flat 4-bit size (arithmetic on the model's shape)",
        "3.3": "worked solution 1: half of 6.6 GPU-hours (arithmetic)",
        "6.6": "the bill's generation stage in GPU-hours (computed by the chapter's cell)",
        "14": "worked solution 1's saving (arithmetic)",
        "0.9": "exercise 2's given success rate",
    },
    "notebooks/part3/11_rlhf_background.py": {
        "0.93": "worked example: the chapter's five-token GAE arithmetic",
        "0.98": "worked example: the chapter's five-token GAE arithmetic",
        "0.36": "worked example: the chapter's five-token GAE arithmetic",
        "0.58": "worked example: the chapter's five-token GAE arithmetic",
        "0.26": "worked example: the chapter's five-token GAE arithmetic",
    },
    "notebooks/part3/14_sft_data_and_tools.py": {
        "1.7": "2,500 / 1,500 (arithmetic)",
        "11": "1 - 3,072 / 3,440 (arithmetic)",
        "0.9": "the overconfident model's stated confidence (a setting)",
    },
    "notebooks/part3/15_quiz_and_summary.py": {
        "29": "chapter III.9's computed saving (see there)",
        "0.337": "worked arithmetic: 1 - 0.95^8 - 0.05^8",
        "0.5": "worked arithmetic: the merged product's scale",
        "0.25": "worked arithmetic: the averaged factors",
        "3.175": "worked arithmetic: a quiz answer",
        "4.125": "the 4-bit format's bits per block weight (a constant)",
    },
    "book/intro.md": {
        "4.5": "reading time, computed from word counts by book_map",
    },
    "book/part3.md": {
        "4.5": "reading time, computed from word counts by book_map",
        "2": "LoRA's share of parameters, rounded (chapter III.2 ties it)",
    },
    "book/references.md": {
        "5e-5": "TRL's LoRA example's learning rate (quoted)",
    },
    "book/how-to-extend.md": {
        "1e-15": "float64's relative precision (a constant)",
        "1e-7": "float32's relative precision (a constant)",
        "1": "a 1 % tolerance margin (a rule)",
    },
}

# PAGE SETTINGS END
UNREVIEWED: dict[str, str] = {
    "notebooks/part1/10_beyond_the_budget.py": ("20 "),
    "notebooks/part2/04_results.py": ("0.35 0.38 0.17 0.19 2.2 0.15 0.27 0.90 1.09 "),
    "notebooks/part3/01_masked_sft.py": ("1.6 0.013 "),
    "book/how-to-run.md": ("5.5 "),
    "book/provenance.md": (
        "3.5e-6 2.3e-3 0.55 4.45 2.10 4.90 3.60 24.6 1.5 49.6 0.01 176.5 190.9 "
        "118.1 188.2 139.5 425.9 421.8 "
    ),
    "book/tiny-base.md": (
        "2 98 80 20 1e4 0.9 0.95 0.01 2e-3 10.7 0.23 13.2 0.160 1.428 1e-4 "
        "0.240 0.325 0.126 0.746 0.605 0.212 0.360 0.189 0.991 0.510 3e-4 "
        "0.220 0.265 0.181 0.995 0.515 5e-4 0.237 0.158 0.996 0.560 1e-3 0.270 "
        "0.175 0.118 1.000 0.660 0.19 10.8 0.17 0.092 0.54 0.214 0.188 0.231 "
        "0.45 0.50 0.33 2.2e-3 0.156 0.206 0.47 0.60 0.42 8.2e-2 0.003 0.03 "
    ),
}
