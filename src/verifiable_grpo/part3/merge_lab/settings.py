"""The merging lab's settings (configs/part3/merging.yaml), each key declared once
(core/settings_schema.py); `run_lab` in digit_merges.py takes them."""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.schema_checks import NON_EMPTY, SEED, closed, each, open_between
from verifiable_grpo.core.settings_schema import option
from verifiable_grpo.part3.lab_limits import COUNTED, POSITIVE


@dataclass(frozen=True)
class MergingSettings:
    steps: int = option("SFT steps per fine-tune", POSITIVE, COUNTED, default=100)
    seed: int = option("fine-tune A's seed (B: seed + 1; DARE's masks)", SEED, default=0)
    density: float = option("TIES: share of each task vector kept", closed(0, 1), default=0.2)
    drops: tuple[float, ...] = option(
        "DARE drop probabilities", NON_EMPTY, each(open_between(0, 1)), default=(0.5, 0.9)
    )
    scales: tuple[float, ...] = option(
        "task-arithmetic scales", NON_EMPTY, default=(0.25, 0.5, 0.75, 1.0)
    )
    soup_weights: tuple[float, ...] = option(
        "weight on fine-tune A in a two-model soup",
        NON_EMPTY,
        each(closed(0, 1)),
        default=(0.3, 0.4, 0.5, 0.6, 0.7),
    )
