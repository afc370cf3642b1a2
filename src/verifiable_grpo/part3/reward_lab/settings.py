"""Lab 3's settings (configs/part3/reward-model.yaml): each key's type, range, meaning and
default, declared once; `run_lab` in best_of_n.py takes them (core/settings_schema.py)."""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.schema_checks import NON_EMPTY, SEED, above, each, one_of
from verifiable_grpo.core.settings_schema import option
from verifiable_grpo.part3.lab_limits import COUNTED, POSITIVE

# The best-of-n grid, 1, 4, ..., 16384 (the recorded table's sizes).
GRID = tuple(4**k for k in range(8))
ON_GRID = one_of(*GRID)


@dataclass(frozen=True)
class RewardModelSettings:
    sizes: tuple[int, ...] = option("best-of-n grid sizes", NON_EMPTY, each(ON_GRID), default=GRID)
    trials: int = option("selections averaged per n", POSITIVE, COUNTED, default=200)
    seed: int = option("numpy and torch seed", SEED, default=0)
    softmax_n: int | None = option(
        "n of the softmax-selection variant (null: skip it)", ON_GRID, default=1024
    )
    temperatures: tuple[float, ...] = option(
        "softmax temperatures", NON_EMPTY, each(above(0)), default=(0.1, 0.3, 1.0, 3.0)
    )
