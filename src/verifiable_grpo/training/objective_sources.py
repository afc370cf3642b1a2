"""The paper behind each entry of the objectives registry, kept apart from the entries.

An Objective's identity hash covers every dataclass field but its name and description
(`Objective.mechanics`), and Part II's treatment lock pins those hashes; a citation is
not arithmetic, so it lives here, keyed by registry name. Each value names the anchor of
the work in book/references.md and says what the entry takes from it.
"""
from __future__ import annotations

from verifiable_grpo.training.objectives import OBJECTIVES

SOURCES: dict[str, tuple[str, str]] = {
    "part1": ("ref-deepseekmath", "GRPO's group advantages and KL to a reference; the exact "
                                  "prefix KL is the practical's variant (ref-practical)"),
    "grpo": ("ref-deepseekmath", "GRPO as TRL runs it: sample std, token ratio, PPO's clip"),
    "drgrpo": ("ref-drgrpo", "Dr. GRPO's first change: no division by the group's std"),
    "dapo": ("ref-dapo", "DAPO's clip-higher and dynamic sampling"),
    "gspo": ("ref-gspo", "GSPO's sequence-level importance ratio"),
    "aero": ("ref-aero", "AERO's adaptive rollouts, rejection and Beta posterior"),
    "bnpo": ("ref-trl", "TRL's loss_type='bnpo' reduction"),
    "dr_grpo": ("ref-drgrpo", "Dr. GRPO's full loss: no std, a constant length divisor"),
    "dapo_token": ("ref-dapo", "DAPO's token-level policy-gradient loss"),
}


def source_of(name: str) -> tuple[str, str]:
    """(reference anchor, what the entry takes from it) for a registry entry."""
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; known objectives: {', '.join(OBJECTIVES)}")
    if name not in SOURCES:
        raise ValueError(f"objective {name!r} names no paper: add it to objective_sources.SOURCES")
    return SOURCES[name]
