"""How large each objective's advantages are, on chapter II.7's prompts, and the declared
rerun that equalises that scale.

All objectives of chapter II.7 ran at one learning rate with the same KL term
(exact prefix KL x 0.02). The loss is advantage x (something of the ratio) + beta x KL, so
an objective whose advantages are half GRPO's gives the KL term twice GRPO's relative
weight. AdamW divides each step by a running gradient scale, so the overall size of the
loss barely matters; the *ratio* of the two terms does. This module measures the scale
with the registry's own advantage rule (`objectives.on_part1(entry)`, as the runs used it)
on groups of G binary rewards drawn at the eight prompts' warm-start success rates (the
recorded `before` counts, shared by every run): exactly, by enumerating the successes of
a group, for group-level rules; by a seeded simulation for batch-level ones.

The declared rerun (declared here before it runs; `python -m verifiable_grpo learn
objectives --objectives --scale-matched --export`, about 2.5 minutes per objective on a
2-core CPU): each objective of SCALE_MATCHED with the KL coefficient multiplied by its
scale relative to GRPO's, so that advantage / KL has GRPO's ratio; recorded in RECORDED.
Under AdamW that is the same update as rescaling the advantages to GRPO's scale, except
for gradient-norm clipping (max_grad_norm 1), which sees the unscaled gradient.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import torch

from verifiable_grpo.core import files
from verifiable_grpo.core.config import resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.part1 import fixed_prompt_objectives, fixed_prompts
from verifiable_grpo.training import objectives

GROUP_SIZE = 8
SIMULATED_BATCHES = 4000
SEED = 2026
# Declared with this module, before any of these runs: the objectives whose advantage scale
# is not GRPO's by construction (the others reuse GRPO's advantages unchanged).
SCALE_MATCHED = ("rloo", "reinforce_pp", "reinforce", "reinforce_baseline")
RUN_SUFFIX = "-scale-matched"


def _objective(name: str):
    entry = objectives.get_objective(name)
    return entry if name == "part1" else objectives.on_part1(entry)


def _group_level(objective, rates: np.ndarray, group_size: int) -> tuple[float, float]:
    """(E mean |A| over all responses, over responses of mixed groups), exactly."""
    per_k = []
    for k in range(group_size + 1):
        rewards = torch.tensor([[1.0] * k + [0.0] * (group_size - k)], dtype=torch.float64)
        per_k.append(objectives.advantages(objective, rewards).values.abs().mean().item())
    every, mixed = [], []
    for p in rates:
        weights = [
            math.comb(group_size, k) * p**k * (1 - p) ** (group_size - k)
            for k in range(group_size + 1)
        ]
        every.append(sum(w * a for w, a in zip(weights, per_k)))
        inner = sum(weights[1:-1])
        mixed.append(
            sum(w * a for w, a in zip(weights[1:-1], per_k[1:-1])) / inner if inner else 0.0
        )
    return float(np.mean(every)), float(np.mean(mixed))


def _batch_level(objective, rates: np.ndarray, group_size: int) -> tuple[float, float]:
    """The same two means by simulation: every batch holds one group per prompt."""
    generator = torch.Generator().manual_seed(SEED)
    probabilities = torch.tensor(rates, dtype=torch.float64)[:, None].expand(-1, group_size)
    every = mixed = mixed_count = 0.0
    for _ in range(SIMULATED_BATCHES):
        rewards = torch.bernoulli(probabilities, generator=generator)
        values = objectives.advantages(objective, rewards).values.abs()
        every += values.mean().item()
        varied = rewards.max(dim=1).values != rewards.min(dim=1).values
        mixed += values[varied].sum().item()
        mixed_count += varied.sum().item() * group_size
    return every / SIMULATED_BATCHES, mixed / max(mixed_count, 1.0)


def scale(name: str, rates, group_size: int = GROUP_SIZE) -> dict:
    """Mean |advantage| of an objective at these per-prompt success rates."""
    rates = np.asarray(rates, dtype=np.float64)
    objective = _objective(name)
    level = _batch_level if objective.advantages.batch_level else _group_level
    every, mixed = level(objective, rates, group_size)
    return {"objective": name, "mean_abs": every, "mean_abs_mixed": mixed}


def warm_start_rates(grpo_run: dict) -> np.ndarray:
    """The eight prompts' success before training (shared by every run of chapter II.7)."""
    draws = grpo_run["setting"]["draws"]
    return np.array([p["before"] / draws for p in grpo_run["prompts"]], dtype=np.float64)


def scales(names, grpo_run: dict) -> list[dict]:
    """GRPO (Part I's rule) first, then each name, with the ratio to GRPO's mean |A|."""
    rates = warm_start_rates(grpo_run)
    rows = [scale(n, rates) for n in ("part1", *names)]
    for row in rows:
        row["relative"] = row["mean_abs"] / rows[0]["mean_abs"]
    rows[0]["objective"] = "grpo (part1)"
    return rows


RECORDED = "data/recorded/fixed-prompts/scale-matched.json"


def scale_matched_setting(name: str, relative: float):
    """Chapter II.7's setting with beta x the objective's relative scale (the rerun)."""
    if name not in SCALE_MATCHED:
        raise ValueError(f"{name} is not declared for the scale-matched rerun {SCALE_MATCHED}")
    if not relative > 0:
        raise ValueError(f"relative scale must be positive, got {relative!r}")
    setting = fixed_prompt_objectives.SETTING
    return dataclasses.replace(
        setting, name=setting.name + RUN_SUFFIX, kl_coefficient=setting.kl_coefficient * relative
    )


def run_scale_matched(base: Profile, runs: Path, name: str, progress: bool = True) -> dict:
    """One declared rerun in RUNS/NAME-scale-matched (continued where it stopped)."""
    grpo_run = fixed_prompts.recorded()["ours"]
    relative = next(r["relative"] for r in scales([name], grpo_run) if r["objective"] == name)
    out = Path(runs) / (name + RUN_SUFFIX)
    fixed_prompt_objectives.seed_selection(out, grpo_run)
    config = fixed_prompt_objectives.objective_config(base, name)
    setting = scale_matched_setting(name, relative)
    result = fixed_prompts.run(config, out, setting, progress=progress)
    return {"objective": name, "relative_scale": relative, **result}


def export_scale_matched(runs: Path) -> Path:
    """RECORDED from the finished reruns in RUNS (a record of its own: objectives.json
    keeps the runs at one KL coefficient)."""
    found = {}
    for name in SCALE_MATCHED:
        done = Path(runs) / (name + RUN_SUFFIX) / "result.json"
        if done.is_file():
            found[name] = files.read_json(done)
    if not found:
        raise FileNotFoundError(f"no finished scale-matched run under {runs}")
    return files.save_json(resolve(RECORDED), {"declared": list(SCALE_MATCHED), "runs": found})
