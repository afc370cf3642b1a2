"""TRL 1.16's own loss on given tensors, for comparison with the registry's.

`trl_loss` feeds the same tensors to TRL's `GRPOTrainer._compute_loss` through a minimal
stand-in for the trainer (no model, no dataset: the per-token log-probs it would compute
are handed over directly), so a test can compare loss and gradients with
`objectives.objective_loss` on identical inputs. The stand-in's GRPOConfig comes from the
one builder, trl_config.grpo_config, fed by trl_parity.trl_arm. trl is an optional peer
dependency, imported only when a comparison runs.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from verifiable_grpo.training import objectives, surrogates, trl_config
from verifiable_grpo.training.trl_parity import STUDY_FIELDS, TRLArm, trl_arm


def _stand_in(arm: TRLArm, max_completion_length: int, micro_batches: int):
    """The attributes `_compute_loss` reads, set the way GRPOTrainer.__init__ sets them
    from a real GRPOConfig (so the config's own defaults and checks apply)."""
    run = {
        **STUDY_FIELDS,
        "gradient_accumulation_steps": micro_batches,
        "generation_batch_size": None,
        "steps_per_generation": micro_batches,
        "max_completion_length": max_completion_length,
        "output_dir": "unused",
        "report_to": [],
        "use_cpu": True,
    }
    if "max_completion_length" in arm.config:  # a constant-length aggregation fixes it
        del run["max_completion_length"]
    args = trl_config.grpo_config(arm.config, run)
    metrics = {"train": _Metrics(), "eval": _Metrics()}
    corrected = bool(arm.config.get("vllm_importance_sampling_correction", False))
    accelerator = SimpleNamespace(
        num_processes=1,
        sync_gradients=True,
        reduce=lambda t, reduction="sum": t,
        gather=lambda t: t,
        gather_for_metrics=lambda t: t,
    )
    return SimpleNamespace(
        args=args,
        loss_type=args.loss_type,
        beta=args.beta,
        epsilon_low=args.epsilon,
        epsilon_high=args.epsilon_high if args.epsilon_high is not None else args.epsilon,
        importance_sampling_level=args.importance_sampling_level,
        max_completion_length=args.max_completion_length,
        top_entropy_quantile=args.top_entropy_quantile,
        off_policy_mask_threshold=args.off_policy_mask_threshold,
        # GRPOConfig turns the correction on by default; TRL applies it only with vLLM.
        use_vllm=corrected,
        vllm_importance_sampling_correction=corrected,
        aux_loss_enabled=False,
        _entropy_bonus_enabled=False,
        current_gradient_accumulation_steps=micro_batches,
        model=SimpleNamespace(training=True),
        accelerator=accelerator,
        _metrics=metrics,
    )


class _Metrics(dict):
    def __missing__(self, key):
        self[key] = []
        return self[key]


def trl_loss(
    objective: objectives.Objective,
    batch: objectives.TokenLogProbs,
    advantages,
    max_completion_length: int = 8,
    micro_batches=None,
):
    """TRL 1.16's loss of one optimizer step on these tensors, summed over micro-batches.

    batch: current, old [B, T] per-token log-probs (current requires grad; padding must
    hold finite values), mask [B, T] and, for a k3 term, the reference [B, T];
    advantages [B].
    micro_batches: list of row-index lists (default: one micro-batch of all rows); dapo's
    normaliser is the token count of all of them, as TRL's num_items_in_batch.
    With a behaviour correction, `old` is the sampler's log-probs: TRL's old log-probs are
    the trainer's at the rollout's parameters (here `current` detached, the first update)
    and its importance_sampling_ratio is built from the two as _generate_and_score_
    completions builds it (surrogates.behaviour_weights, unit-tested by hand).
    """
    from trl.trainer.grpo_trainer import GRPOTrainer

    current, old, ref_logprobs = batch.current, batch.old, batch.reference
    arm = trl_arm(objective)
    rows = current.shape[0]
    micro_batches = [list(range(rows))] if micro_batches is None else micro_batches
    trainer = _stand_in(arm, max_completion_length, len(micro_batches))
    mask = torch.as_tensor(batch.mask).to(current.dtype)
    correction = objective.correction
    sampler_logprobs = None
    if correction.kind != "none":
        sampler_logprobs, old = old, current.detach()
        weights = surrogates.behaviour_weights(
            old,
            sampler_logprobs,
            mask.bool(),
            correction.kind,
            correction.clip_min,
            correction.clip_max,
        )
    total = None
    for indices in micro_batches:
        index = torch.tensor(indices)
        logp = current[index]
        trainer._get_per_token_logps_and_entropies = lambda *a, _logp=logp, **k: (
            _logp,
            torch.zeros_like(_logp),
            None,
        )
        inputs = {
            "prompt_ids": torch.zeros(len(indices), 1, dtype=torch.long),
            "prompt_mask": torch.ones(len(indices), 1, dtype=torch.long),
            "completion_ids": torch.zeros_like(logp, dtype=torch.long),
            "completion_mask": mask[index],
            "advantages": advantages[index],
            "old_per_token_logps": old[index],
            "num_items_in_batch": mask.sum(),
        }
        if ref_logprobs is not None:
            inputs["ref_per_token_logps"] = ref_logprobs[index]
        if sampler_logprobs is not None:
            inputs["importance_sampling_ratio"] = weights[index]
        loss = GRPOTrainer._compute_loss(trainer, None, inputs)
        total = loss if total is None else total + loss
    return total
