"""The paper behind each entry of the objectives registry, kept apart from the entries.

An Objective's identity hash covers its arithmetic, not its name and description
(`Objective.mechanics`), and Part II's treatment lock pins those hashes; a citation is
not arithmetic, so it lives here, keyed by registry name. Each value names the anchor of
the work in book/references.md and says what the entry takes from it.
"""

from __future__ import annotations

from typing import NamedTuple

from verifiable_grpo.training.objectives import OBJECTIVES


class Source(NamedTuple):
    anchor: str  # the work's label on book/references.md
    cite: str  # how a table names it
    takes: str  # what the entry takes from it


SOURCES: dict[str, Source] = {
    "part1": Source(
        "ref-deepseekmath",
        "Shao et al. 2024",
        "GRPO's group advantages and KL to a reference; the exact prefix KL is "
        "the practical's variant",
    ),
    "grpo": Source(
        "ref-deepseekmath",
        "Shao et al. 2024",
        "GRPO as TRL runs it: sample std, token ratio, PPO's clip",
    ),
    "drgrpo": Source(
        "ref-drgrpo",
        "Liu et al. 2025 (Dr. GRPO)",
        "Dr. GRPO's first change: no division by the group's std",
    ),
    "dapo": Source("ref-dapo", "Yu et al. 2025 (DAPO)", "clip-higher and dynamic sampling"),
    "gspo": Source("ref-gspo", "Zheng et al. 2025 (GSPO)", "the sequence-level importance ratio"),
    "aero": Source(
        "ref-aero",
        "Zhang et al. 2026 (AERO)",
        "adaptive rollouts, rejection and the Beta posterior",
    ),
    "bnpo": Source("ref-trl", "TRL", "the loss_type='bnpo' reduction"),
    "dr_grpo": Source(
        "ref-drgrpo",
        "Liu et al. 2025 (Dr. GRPO)",
        "the full loss: no std, a constant length divisor",
    ),
    "dapo_token": Source("ref-dapo", "Yu et al. 2025 (DAPO)", "the token-level loss"),
    "cispo": Source(
        "ref-cispo",
        "MiniMax 2025 (CISPO)",
        "the clipped, stop-gradient importance weight on -A log p; the cap 5 "
        "is ScaleRL's (Khatri et al. 2025)",
    ),
    "gmpo": Source(
        "ref-gmpo",
        "Zhao et al. 2025 (GMPO)",
        "the geometric mean of token ratios, clipped in log space to [-0.4, 0.4]",
    ),
    "sapo": Source(
        "ref-sapo",
        "Gao et al. 2025 (SAPO)",
        "the sigmoid gate and its two temperatures (TRL's defaults 1 and 1.05)",
    ),
    "rloo": Source("ref-rloo", "Ahmadian et al. 2024 (RLOO)", "the leave-one-out baseline"),
    "reinforce_pp": Source(
        "ref-reinforce-pp",
        "Hu 2025 (REINFORCE++)",
        "the group baseline scaled by the batch's spread",
    ),
    "reinforce": Source(
        "ref-reinforce", "Williams 1992 (REINFORCE)", "the plain score-function loss -r log p"
    ),
    "reinforce_baseline": Source(
        "ref-reinforce",
        "Williams 1992 (REINFORCE)",
        "-(r - b) log p with the group mean as the baseline b",
    ),
    "grpo_tis": Source(
        "ref-trl",
        "TRL",
        "vllm_importance_sampling_mode='token_truncate', cap 3 (truncated importance sampling)",
    ),
    "grpo_mis": Source(
        "ref-trl",
        "TRL",
        "vllm_importance_sampling_mode='sequence_mask', "
        "cap 3 (masked importance sampling; TRL's default)",
    ),
    "gspo_paper": Source(
        "ref-gspo",
        "Zheng et al. 2025 (GSPO)",
        "the sequence ratio and the paper's clip range, 3e-4 below and 4e-4 above 1",
    ),
}


def source_of(name: str) -> Source:
    """The work a registry entry comes from (anchor, short citation, what it takes)."""
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; known objectives: {', '.join(OBJECTIVES)}")
    if name not in SOURCES:
        raise ValueError(f"objective {name!r} names no paper: add it to objective_sources.SOURCES")
    return SOURCES[name]
