"""A GRPO branch's plan: its budget (group size, iterations, interrupt point) and the
order in which it reads training prompts (a seeded permutation read with a cursor)."""

from __future__ import annotations

import torch

from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import exercise_group_size

# Offsets from the profile's seed: one independent stream per purpose.
GENERATION_SEED_OFFSET = 200
PROMPT_ORDER_SEED_OFFSET = 300


# --------------------------------------------------------------------------- budget
def branch_budget(
    config: Profile,
    branch: str = "grpo",
    group_size: int | None = None,
    iterations: int | None = None,
    interrupt_at: int | None = None,
) -> dict:
    """Group size, iterations and interrupt point of a branch (explicit values win).

    "grpo" reads config.grpo; "grpo-gN" is an exercise branch (N in exercise.group_sizes)
    reading exercise.iterations and exercise.interrupt_at. The config's values are checked
    when it is read; the checks here are for the explicit values.
    """
    sizes = list(config.exercise.group_sizes)
    if branch == "grpo":
        defaults = (config.grpo.group_size, config.grpo.iterations, config.grpo.interrupt_at)
    else:
        named = exercise_group_size(branch)
        if named is None:
            raise ValueError(
                f"unknown GRPO branch {branch!r}: use 'grpo' or 'grpo-gN' with N in "
                f"exercise.group_sizes {sizes}"
            )
        if named not in sizes:
            raise ValueError(
                f"branch {branch!r}: group size {named} is not in exercise.group_sizes {sizes}"
            )
        if group_size is not None and group_size != named:
            raise ValueError(f"branch {branch!r} names group size {named}, got {group_size}")
        defaults = (named, config.exercise.iterations, config.exercise.interrupt_at)
    g = defaults[0] if group_size is None else group_size
    n = defaults[1] if iterations is None else iterations
    k = defaults[2] if interrupt_at is None else interrupt_at
    if group_size is not None and (type(g) is not int or g < 2):
        raise ValueError(f"group_size must be an integer >= 2, got {g!r}")
    if iterations is not None and (type(n) is not int or n < 1):
        raise ValueError(f"iterations must be a positive integer, got {n!r}")
    # An explicit iterations can leave the config's interrupt point past the end.
    if (iterations, interrupt_at) != (None, None) and (type(k) is not int or not 1 <= k < n):
        raise ValueError(f"interrupt_at must be an integer in [1, {n - 1}], got {k!r}")
    updates = config.grpo.updates_per_rollout
    return {
        "branch": branch,
        "group_size": g,
        "iterations": n,
        "interrupt_at": k,
        "prompts_per_iteration": config.grpo.prompts_per_iteration,
        "updates_per_rollout": updates,
        "total_updates": n * updates,
    }


# --------------------------------------------------------------------------- prompt order
class PromptOrder:
    """Prompts without replacement: a seeded permutation read with a cursor, reshuffled
    (from the same generator) when a pass is exhausted."""

    def __init__(self, size: int, seed: int):
        if size < 1:
            raise ValueError("no training prompts")
        self.size = size
        self.generator = torch.Generator().manual_seed(seed)
        self.permutation: list[int] = []
        self.cursor = 0
        self.passes = 0

    def take(self, count: int) -> list[int]:
        chosen = []
        while len(chosen) < count:
            if self.cursor >= len(self.permutation):
                self.permutation = torch.randperm(self.size, generator=self.generator).tolist()
                self.cursor = 0
                self.passes += 1
            chosen.append(self.permutation[self.cursor])
            self.cursor += 1
        return chosen

    def state(self) -> dict:
        return {
            "size": self.size,
            "permutation": list(self.permutation),
            "cursor": self.cursor,
            "passes": self.passes,
            "generator": self.generator.get_state(),
        }

    def load(self, state: dict) -> None:
        if state["size"] != self.size:
            raise ValueError(f"saved prompt order covers {state['size']} prompts, not {self.size}")
        self.permutation = list(state["permutation"])
        self.cursor = int(state["cursor"])
        self.passes = int(state["passes"])
        self.generator.set_state(state["generator"])
