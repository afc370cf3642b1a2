"""Lab 4's settings: the digit-policy lab's keys (configs/part3/dpo.yaml) and the SmolLM2
variant's command-line options, each declared once (core/settings_schema.py); `run_lab` in
dpo.py and dpo_smollm2.py takes them."""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.schema_checks import NON_EMPTY, above, each
from verifiable_grpo.core.settings_schema import option
from verifiable_grpo.part3.lab_limits import COUNTED, POLICY, POSITIVE


@dataclass(frozen=True)
class DPOSettings:
    betas: tuple[float, ...] = option(
        "bandit KL coefficients", NON_EMPTY, each(above(0)), default=(0.25, 0.5, 1.0, 2.0)
    )
    pairs: int = option("bandit preference pairs", POSITIVE, COUNTED, default=20_000)
    bandit_steps: int = option("Adam steps per beta", POSITIVE, COUNTED, default=1000)
    beta: float = option("digit-policy DPO coefficient", above(0), default=0.1)
    steps: int = option("digit-policy DPO steps per condition", POSITIVE, COUNTED, default=300)
    variant_beta: float | None = option(
        "the on-policy condition again at this beta (null: skip)", above(0), default=0.5
    )


@dataclass(frozen=True)
class SmolLM2DPOSettings:
    policy: str | None = option(POLICY, default=None)
