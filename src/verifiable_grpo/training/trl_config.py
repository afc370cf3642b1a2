"""Every TRL GRPOConfig this project builds comes from `grpo_config`.

A GRPOConfig mixes two kinds of settings, and each has one source:
- the objective: loss_type, scale_rewards, the ratio level, the clip interval, beta, ...
  `trl_parity.trl_arm` derives them from a registry entry; no caller writes them by hand;
- the run: the step layout (rows per step, micro-batches, generations per prompt,
  updates per rollout set), sampling, rates, budgets, seed, logging, device.
`grpo_config` refuses a field the run sets that belongs to the objective, or one both set,
so an option is declared once. The helpers below are the run settings the in-process
comparisons share (Part I's bench and fixed-prompt runs); Part II's backend builds its
own from a run configuration (part2/trl/backend.py), Part II's loss check from the study's
micro-batching (trl_loss._stand_in).
"""

from __future__ import annotations

import dataclasses

from verifiable_grpo.training import objectives, trl_parity

# Fields only an objective sets (what trl_parity.trl_arm can emit, plus the k3 weighting).
OBJECTIVE_ONLY = frozenset(
    {
        "loss_type",
        "scale_rewards",
        "importance_sampling_level",
        "epsilon",
        "epsilon_high",
        "beta",
        "use_bias_correction_kl",
        "sapo_temperature_pos",
        "sapo_temperature_neg",
    }
)
# Fields an objective may set, else the run: a constant-length aggregation fixes the
# completion length; a behaviour correction fixes what a generation lock also names.
OBJECTIVE_OR_RUN = frozenset(
    {
        "max_completion_length",
        "vllm_importance_sampling_correction",
        "vllm_importance_sampling_mode",
        "vllm_importance_sampling_clip_min",
        "vllm_importance_sampling_clip_max",
    }
)
# Plain sampling: the policy's own distribution, nothing truncated.
PLAIN_SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": 0}


def _refusals(objective: dict, run: dict) -> list[str]:
    unknown = sorted(set(objective) - OBJECTIVE_ONLY - OBJECTIVE_OR_RUN)
    if unknown:
        return [f"{unknown[0]!r} is not an objective's field: pass it with the run's settings"]
    if "loss_type" not in objective:
        return ["the objective's fields have no loss_type: derive them with trl_parity.trl_arm"]
    both = sorted(set(objective) & set(run))
    if both:
        return [f"{both[0]!r} is set by the objective and by the run: declare it once"]
    owned = sorted(set(run) & OBJECTIVE_ONLY)
    if owned:
        return [f"{owned[0]!r} belongs to the objective (trl_parity.trl_arm), not to the run"]
    return []


def grpo_config(objective: dict, run: dict):
    """TRL's GRPOConfig from an objective's fields (trl_parity.trl_arm's `config`) and the
    run's settings; ValueError naming the field when a field is declared twice or by the
    wrong side."""
    refused = _refusals(objective, run)
    if refused:
        raise ValueError(f"GRPOConfig: {refused[0]}")
    from trl import GRPOConfig

    return GRPOConfig(**objective, **run)


def one_set_per_step(prompts: int, group_size: int, updates: int) -> dict:
    """The layout of an in-process comparison: one rollout set of prompts x G rows per
    optimizer step, in one micro-batch, reused for `updates` updates (num_iterations)."""
    return {
        "per_device_train_batch_size": prompts * group_size,
        "gradient_accumulation_steps": 1,
        "steps_per_generation": 1,
        "num_generations": group_size,
        "num_iterations": updates,
    }


def in_process(device_type: str, seed: int) -> dict:
    """A TRL run inside another command: FP32 on the policy's device, no checkpoints, no
    logging service, prompts in order, no data-loading workers, no progress bar."""
    return {
        "use_cpu": device_type == "cpu",
        "bf16": False,
        "fp16": False,
        "report_to": "none",
        "save_strategy": "no",
        "shuffle_dataset": False,
        "seed": seed,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }


def part1_fields(clip_epsilon: float, kl_coefficient: float) -> dict:
    """The objective fields of Part I's TRL comparisons: the registry's grpo arm (TRL's
    advantages, sample std + 1e-4) with Part I's clip and KL weight, the KL as TRL's k3
    estimate. They ran TRL's default use_bias_correction_kl=True, which multiplies k3 by
    the importance ratio (the registry's k3 does not, so trl_arm sets it False)."""
    entry = dataclasses.replace(
        objectives.get_objective("grpo"),
        name="part1_on_trl",
        description="Part I's clip and KL weight on TRL's grpo loss, k3 on the sampled token",
        clip=objectives.ClipInterval(clip_epsilon, clip_epsilon),
        kl=objectives.KLTerm("k3", kl_coefficient),
    )
    return {**trl_parity.trl_arm(entry).config, "use_bias_correction_kl": True}
