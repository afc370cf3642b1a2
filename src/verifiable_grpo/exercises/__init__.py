"""Exercises with checkers: each check_* runs hidden cases against a learner's function."""

from verifiable_grpo.exercises.advantages import check_group_advantages
from verifiable_grpo.exercises.checking import CheckResult
from verifiable_grpo.exercises.clipping import check_clipped_surrogate
from verifiable_grpo.exercises.exact_kl import check_exact_kl
from verifiable_grpo.exercises.fault_tree_probability import check_top_event_probability
from verifiable_grpo.exercises.group_size import check_constant_group_probability
from verifiable_grpo.exercises.grpo_loop import check_grpo_loop
from verifiable_grpo.exercises.grpo_loss import check_grpo_loss
from verifiable_grpo.exercises.lora_forward import check_lora_forward
from verifiable_grpo.exercises.mcnemar import check_exact_mcnemar
from verifiable_grpo.exercises.pass_at_k import check_pass_at_k
from verifiable_grpo.exercises.preference_losses import check_bradley_terry_loss, check_dpo_loss
from verifiable_grpo.exercises.resume import check_resume
from verifiable_grpo.exercises.reward import check_reward
from verifiable_grpo.exercises.selection import check_reported_difference
from verifiable_grpo.exercises.sft_loss import check_sft_loss
from verifiable_grpo.exercises.silent_groups import check_silent_fraction
from verifiable_grpo.exercises.suite_statistics import check_benjamini_hochberg, check_wilson
from verifiable_grpo.exercises.trained_fraction import check_trained_fraction

__all__ = [
    "CheckResult",
    "check_benjamini_hochberg",
    "check_bradley_terry_loss",
    "check_dpo_loss",
    "check_lora_forward",
    "check_silent_fraction",
    "check_top_event_probability",
    "check_trained_fraction",
    "check_wilson",
    "check_clipped_surrogate",
    "check_constant_group_probability",
    "check_exact_kl",
    "check_exact_mcnemar",
    "check_group_advantages",
    "check_grpo_loop",
    "check_grpo_loss",
    "check_pass_at_k",
    "check_reported_difference",
    "check_resume",
    "check_reward",
    "check_sft_loss",
]
