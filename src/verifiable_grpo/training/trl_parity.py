"""Each registry entry as TRL 1.16 would run it.

`trl_arm(objective)` says which GRPOConfig fields reproduce an entry and which part TRL's
trainer cannot do without a subclass (dynamic sampling, AERO's rollouts and posterior
advantages). TRL's own loss on the same tensors is `trl_loss.trl_loss`.

What TRL cannot express is refused by name before anything runs: the exact prefix KL
(TRL only has the sampled k3 estimate), Part I's population-std advantages, baselines
other than the group mean (leave-one-out, batch-normalised, none), the GMPO and REINFORCE
surrogates, a CISPO or SAPO entry reduced otherwise than TRL reduces that loss type, and
any field of a part that this mapping does not know (a later axis set away from its
default): refusing is safer than running an ordinary clipped loss in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifiable_grpo.training import objective_refusals, objectives

TRL_VERSION = "1.16.0"
# TRL's per-group advantages: sample std (Bessel), plus 1e-4 outside the square root.
TRL_STD_EPSILON = 1e-4
# The study's micro-batching (E1): 4 prompts x 4 completions = 16 rows per optimizer step.
STUDY_FIELDS = {
    "num_generations": 4,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 4,
    "generation_batch_size": 16,
    "num_iterations": 1,
    "temperature": 1.0,  # beta, as every field of the objective, is the arm's (trl_arm)
    "top_p": 1.0,
    "top_k": 0,
    "mask_truncated_completions": False,
}


class NotExpressibleInTRL(ValueError):
    """An objective (or part of one) TRL 1.16's GRPOTrainer has no setting for."""


@dataclass(frozen=True)
class TRLArm:
    name: str
    config: dict  # GRPOConfig fields (beyond STUDY_FIELDS)
    subclass: str | None = None  # what a GRPOTrainer subclass must add, if anything
    notes: list[str] = field(default_factory=list)


_LOSS_TYPES = {
    ("response_mean", None): "grpo",
    ("token_sum", "micro_batch"): "bnpo",
    ("token_sum", "generation_batch"): "dapo",
    ("constant_length", None): "dr_grpo",
}


# Per part, the fields this mapping translates; anything else set on an entry is refused,
# and so is an axis this mapping does not know (a top-level field added to Objective later,
# hashed once an entry sets it away from its default).
MAPPED_FIELDS = {axis: set(names) for axis, names in objectives.V1_FIELDS.items()}
MAPPED_AXES = {"schema", *objectives.V1_AXES, *MAPPED_FIELDS}
# The surrogates TRL 1.16 has a loss_type for, and the reduction that loss_type applies.
SURROGATE_LOSS_TYPES = {
    "cispo": ("cispo", ("token_sum", "generation_batch")),
    "sapo": ("sapo", ("response_mean", None)),
}
KNOWN_ADVANTAGES = ("group_std", "centred", "posterior")
# TRL 1.16's vllm_importance_sampling_mode values.
TRL_CORRECTION_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


def _refuse_unmapped(objective: objectives.Objective) -> None:
    """NotExpressibleInTRL for every part of `objective` no GRPOConfig field reproduces."""

    def refuse(why: str):
        raise NotExpressibleInTRL(
            f"objective {objective.name}: TRL {TRL_VERSION}'s GRPOTrainer {why}"
        )

    for axis, spec in objective.mechanics().items():
        if axis not in MAPPED_AXES:
            refuse(f"has no mapping here for {axis}")
        unknown = sorted(set(spec) - MAPPED_FIELDS[axis]) if isinstance(spec, dict) else []
        if unknown:
            refuse(f"has no mapping here for {axis}.{unknown[0]}")
    rule, surrogate = objective.advantages, objective.surrogate
    if rule.kind in ("leave_one_out", "batch_normalised", "none"):
        refuse(
            f"has no {rule.kind} advantage rule (its scale_rewards='batch' divides r - "
            "the group mean by the std of the raw rewards)"
            if rule.kind == "batch_normalised"
            else f"has no {rule.kind} advantage rule ({rule.describe()})"
        )
    if surrogate.kind in ("gmpo", "reinforce"):
        refuse(f"has no {surrogate.kind} loss_type")
    # Every kind below is known by name: a kind added to the registry later is refused
    # here until someone maps it, never run as an ordinary clipped loss.
    for part, kind, mapped in (
        ("advantage rule", rule.kind, KNOWN_ADVANTAGES),
        ("surrogate", surrogate.kind, ("clipped_ratio",) + tuple(SURROGATE_LOSS_TYPES)),
        ("aggregation", (objective.aggregation.kind, objective.aggregation.tokens), _LOSS_TYPES),
        ("KL term", objective.kl.kind, ("exact_prefix", "k3", "none")),
        ("sampler", objective.sampler.kind, ("plain", "dynamic", "aero")),
        ("behaviour correction", objective.correction.kind, ("none",) + TRL_CORRECTION_MODES),
    ):
        if kind not in mapped:
            refuse(f"has no mapping here for the {part} {kind!r}")
    if surrogate.kind in SURROGATE_LOSS_TYPES:
        loss_type, reduction = SURROGATE_LOSS_TYPES[surrogate.kind]
        aggregation = objective.aggregation
        if (aggregation.kind, aggregation.tokens) != reduction:
            refuse(
                f"reduces loss_type {loss_type!r} as {reduction[0]}"
                f"{'' if reduction[1] is None else ' / ' + reduction[1] + ' tokens'}, "
                f"not as {aggregation.describe()}"
            )


def trl_arm(objective: objectives.Objective) -> TRLArm:
    """The GRPOConfig fields (and subclass, if needed) that run `objective` in TRL 1.16."""
    _refuse_unmapped(objective)
    rule, kl = objective.advantages, objective.kl
    if kl.kind == "exact_prefix":
        raise NotExpressibleInTRL(
            f"objective {objective.name}: TRL {TRL_VERSION} has no exact prefix KL (only the "
            "sampled k3 estimate); compare an entry with KL 'none' or 'k3' instead"
        )
    if rule.kind != "centred" and (rule.correction, rule.epsilon) != (1, TRL_STD_EPSILON):
        raise NotExpressibleInTRL(
            f"objective {objective.name}: TRL {TRL_VERSION} divides by the sample std + 1e-4; "
            f"this entry uses {rule.describe()}, which no GRPOConfig field selects"
        )
    aggregation = objective.aggregation
    config = {
        "loss_type": _LOSS_TYPES[(aggregation.kind, aggregation.tokens)],
        "scale_rewards": "none" if rule.kind == "centred" else "group",
        "importance_sampling_level": objective.ratio,
        "epsilon": objective.clip.low,
        "epsilon_high": objective.clip.high,
        "beta": kl.coefficient,
    }
    notes = []
    surrogate = objective.surrogate
    if surrogate.kind == "cispo":
        config.update(loss_type="cispo", epsilon_high=surrogate.cap)  # TRL's cap on the ratio
    elif surrogate.kind == "sapo":
        config.update(
            loss_type="sapo",
            sapo_temperature_pos=surrogate.temperature_positive,
            sapo_temperature_neg=surrogate.temperature_negative,
        )
    correction = objective.correction
    if correction.kind != "none":
        config.update(
            vllm_importance_sampling_correction=True,
            vllm_importance_sampling_mode=correction.kind,
            vllm_importance_sampling_clip_min=correction.clip_min,
            vllm_importance_sampling_clip_max=correction.clip_max,
        )
        notes.append("TRL applies the correction only to vLLM samples (use_vllm=True)")
    if kl.kind == "k3":
        config["use_bias_correction_kl"] = False  # TRL's default multiplies k3 by the ratio
    if aggregation.kind == "constant_length" and aggregation.length is not None:
        config["max_completion_length"] = aggregation.length
    elif aggregation.kind == "constant_length":
        notes.append("max_completion_length = the run's tokens.max_response (the constant)")
    subclass = None
    if objective.sampler.kind == "dynamic":
        subclass = (
            f"dynamic sampling: keep groups whose rewards vary, refill with fresh "
            f"prompts, at most {objective.sampler.max_generation_batches} generation "
            "batches, else fail closed (override _generate_and_score_completions)"
        )
    elif objective.sampler.kind == "aero":
        s = objective.sampler
        subclass = (
            f"AERO rollout_func: {s.exploration_rollouts} exploration rollouts, rescue "
            f"budget {s.rescue_budget}, rejection k={s.rejection_k}, padded to "
            f"{s.max_rollouts} slots; Beta{rule.prior} posterior advantages for "
            "one-rollout groups (override the advantage computation)"
        )
    if objective.ratio == "sequence" or objective.clip.high != objective.clip.low:
        notes.append(
            "with num_iterations=1 and steps_per_generation == "
            "gradient_accumulation_steps the ratio is exactly 1: inert on-policy"
        )
    return TRLArm(objective.name, config, subclass, notes)


def trl_arms(names=objectives.STUDY_ARMS) -> dict[str, TRLArm]:
    return {name: trl_arm(objectives.get_objective(name)) for name in names}


# The entries TRL refuses, {name: reason} (the one table: objective_refusals.REFUSED), and
# every other entry, which TRL's own loss can be compared with, in registry order.
REFUSED = objective_refusals.refused_by("trl")
EXPRESSIBLE = tuple(name for name in objectives.OBJECTIVES if name not in REFUSED)


def refusal(objective: objectives.Objective) -> str | None:
    """Why TRL cannot run `objective` (the refusal's message), or None when it can."""
    try:
        trl_arm(objective)
    except NotExpressibleInTRL as refused:
        return str(refused)
    return None
