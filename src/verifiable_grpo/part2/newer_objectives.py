"""What chapter II.7 computes for the newer registry entries, on hand-set inputs: each
baseline's advantages, each surrogate's gradient weight as a function of the ratio, the
TIS / MIS weights, and what TRL 1.16 makes of each entry.

Everything goes through the registry (training/objectives.py) by autograd; nothing here
has arithmetic of its own.
"""

from __future__ import annotations

import torch

from verifiable_grpo.training import objectives, surrogates, trl_parity
from verifiable_grpo.training.objective_sources import source_of

# The entries chapter II.7 teaches, declared by the chapter (not the registry's "newer"
# section, which a new entry joins without changing the chapter's tables).
NEWER = objectives.declared_entries(
    (
        "cispo",
        "gmpo",
        "sapo",
        "rloo",
        "reinforce_pp",
        "reinforce",
        "reinforce_baseline",
        "grpo_tis",
        "grpo_mis",
    ),
    declared_by="newer_objectives.NEWER",
)
SURROGATE_ENTRIES = ("grpo", "cispo", "gmpo", "sapo", "reinforce")
BASELINE_ENTRIES = ("grpo", "reinforce_baseline", "rloo", "reinforce_pp", "reinforce")


def entry_rows(names=NEWER) -> tuple[list[str], list[list[str]]]:
    """Name, what differs from grpo, and the paper, one row per entry."""
    rows = []
    for name in names:
        objective, source = objectives.get_objective(name), source_of(name)
        rows.append(
            [
                name,
                objective.advantages.describe(),
                objective.surrogate.describe(),
                objective.aggregation.describe(),
                objective.correction.describe(),
                source.cite,
            ]
        )
    return ["name", "advantages", "surrogate", "aggregation", "correction", "paper"], rows


def baseline_table(groups, names=BASELINE_ENTRIES) -> dict[str, list[list[float]]]:
    """Each entry's advantages for a batch of groups (rewards [P][G])."""
    rewards = torch.tensor(groups, dtype=torch.float64)
    return {
        name: objectives.advantages(objectives.get_objective(name), rewards).values.tolist()
        for name in names
    }


def ratio_weights(ratios, advantage: float, names=SURROGATE_ENTRIES) -> dict[str, list[float]]:
    """d(-loss)/d log p of one token at each ratio, for a one-token response with advantage
    `advantage`: what each surrogate does to a token the policy has already moved. All
    ratios go through the loss at once as N one-token responses, each weighted 1 / N by
    every reduction, hence the factor N."""
    ratios = torch.as_tensor(ratios, dtype=torch.float64).reshape(-1, 1)
    count = ratios.shape[0]
    table = {}
    for name in names:
        current = torch.log(ratios).clone().requires_grad_(True)
        loss, _ = objectives.objective_loss(
            objectives.get_objective(name),
            objectives.TokenLogProbs(
                current, torch.zeros_like(ratios), torch.ones_like(ratios, dtype=torch.bool)
            ),
            torch.full((count,), advantage, dtype=torch.float64),
            None,
            objectives.Normalisation(group_size=1, max_length=1),
        )
        loss.backward()
        table[name] = (-current.grad[:, 0] * count).tolist()
    return table


def behaviour_weight_table(gaps, modes=surrogates.CORRECTION_MODES, clip_max: float = 3.0):
    """TIS / MIS weights of one response whose per-token log-ratios trainer - sampler are
    `gaps`: one row of weights per mode (TRL's cap 3 by default)."""
    gaps = torch.tensor([gaps], dtype=torch.float64)
    mask = torch.ones_like(gaps, dtype=torch.bool)
    return {
        mode: surrogates.behaviour_weights(
            gaps, torch.zeros_like(gaps), mask, mode, None, clip_max
        )[0].tolist()
        for mode in modes
    }


def trl_rows(names=NEWER) -> tuple[list[str], list[list[str]]]:
    """What TRL 1.16's GRPOConfig does with each entry: its fields, or why it refuses."""
    rows = []
    for name in names:
        try:
            config = trl_parity.trl_arm(objectives.get_objective(name)).config
            keys = [
                "loss_type",
                "sapo_temperature_pos",
                "sapo_temperature_neg",
                "vllm_importance_sampling_mode",
                "vllm_importance_sampling_clip_max",
            ]
            keys += ["epsilon_high"] if config["loss_type"] == "cispo" else []
            shown = {k: config[k] for k in keys if k in config}
            rows.append([name, ", ".join(f"{k}={v}" for k, v in shown.items())])
        except trl_parity.NotExpressibleInTRL as refusal:
            rows.append([name, "refused: " + str(refusal).split("GRPOTrainer ", 1)[-1]])
    return ["name", "TRL 1.16 GRPOConfig"], rows
