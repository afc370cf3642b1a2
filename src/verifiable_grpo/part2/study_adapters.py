"""LoRA for the family study: adapters attached from the lock's budget (each process
builds the same A from a seeded stream) and a merged copy for saving."""

from __future__ import annotations

import copy

import torch

from verifiable_grpo.training import lora

LORA_SEED_OFFSET = 500  # the adapters' A matrices (trainable: lora)


def attach_adapters(policy, budget: dict, seed: int) -> list[str]:
    """LoRA on every block projection when the lock says trainable 'lora' (the base is
    frozen and the initial function unchanged, B = 0); the wrapped names, else []. A's
    random init draws from its own seeded stream, so every process builds the same A."""
    if budget["trainable"] != "lora":
        return []
    shape = budget["lora"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed + LORA_SEED_OFFSET)
        return lora.attach_lora(policy, shape["rank"], shape["alpha"], shape["dropout"])


def merged_copy(policy):
    """A copy of a LoRA policy with every adapter folded into its base weight."""
    merged = copy.deepcopy(policy)
    lora.merge_lora(merged)
    return merged
