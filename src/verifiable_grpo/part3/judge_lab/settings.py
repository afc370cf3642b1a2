"""Lab 6's simulated judge's settings (configs/part3/judge.yaml), each key declared once
(core/settings_schema.py); `run_lab` in judge.py takes them."""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.schema_checks import SEED, at_least
from verifiable_grpo.core.settings_schema import option


@dataclass(frozen=True)
class JudgeSettings:
    pairs: int = option("judged pairs", at_least(10), default=400)
    seed: int = option("numpy seed", SEED, default=22)
    length_weight: float = option("how much the judge weighs the length gap", default=0.4)
    position_bias: float = option("the first slot's advantage", default=0.5)
    mean_length_gap: float = option("mean length gap between A and B", default=0.8)
