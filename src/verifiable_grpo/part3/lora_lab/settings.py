"""Lab 2's command-line options, each declared once (core/settings_schema.py); `run_lab` in
lora.py takes them. An option left out keeps the lab's default, and stays out of the
recorded settings (so their hash is what it was before the option existed)."""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.schema_checks import NON_EMPTY, above, at_most, each, one_of
from verifiable_grpo.core.settings_schema import option
from verifiable_grpo.part3.lab_limits import KEEP_ROWS, POSITIVE

# A Llama block's projections, in the block's order (training/lora.BLOCK_PROJECTIONS, which
# loads torch; a test holds the two equal).
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class LoRASettings:
    no_row_init: bool = option(KEEP_ROWS, default=False)
    rank: int | None = option(
        "adapter rank (default 8)",
        POSITIVE,
        at_most(576, "SmolLM2-135M's width: a higher rank adds nothing"),
        default=None,
    )
    alpha: float | None = option(
        "adapter alpha, the update scaled by alpha/rank (default 16)", above(0), default=None
    )
    targets: tuple[str, ...] | None = option(
        "comma-separated projections to wrap, e.g. q_proj,k_proj,v_proj,o_proj "
        "(default: all seven of each block)",
        NON_EMPTY,
        each(one_of(*PROJECTIONS)),
        default=None,
    )
    row_delta: bool = option(
        "a trainable delta on the two chat rows, in lookup and tied head", default=False
    )
