"""Lab 5's settings (configs/part3/expert-iteration.yaml), each key declared once
(core/settings_schema.py); `run_lab` in group_relative.py takes them."""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.schema_checks import BIGGEST_GROUP, NON_EMPTY, at_least, each
from verifiable_grpo.core.settings_schema import option
from verifiable_grpo.part3.lab_limits import COUNTED, POSITIVE


@dataclass(frozen=True)
class ExpertIterationSettings:
    betas: tuple[float, ...] = option(
        "GRPO KL coefficients with the exact verifier",
        NON_EMPTY,
        each(at_least(0)),
        default=(0.04, 0.5),
    )
    substring_beta: float = option(
        "KL coefficient with the flawed substring verifier", at_least(0), default=0.04
    )
    iterations: int = option("GRPO iterations per run", POSITIVE, COUNTED, default=150)
    group_size: int = option(
        "responses per prompt", at_least(2, "a group needs a spread"), BIGGEST_GROUP, default=8
    )
    expert_rounds: int = option("expert-iteration rounds", POSITIVE, COUNTED, default=3)
    variants: bool = option("also Part I's population std and beta 0", default=True)
