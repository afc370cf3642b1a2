"""Lab 1's settings, each declared once (core/settings_schema.py): the SFT lab's
command-line options (masked_sft.run_lab), the past-turn probe's none (past_turn.run_lab)
and the packing variant's keys (configs/part3/sft-packing.yaml, try_this_packing.run_lab)."""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.schema_checks import at_least, at_most
from verifiable_grpo.core.settings_schema import option
from verifiable_grpo.part3.lab_limits import COUNTED, KEEP_ROWS, POSITIVE


@dataclass(frozen=True)
class SFTSettings:
    full: bool = option("the FULL budget instead of QUICK", default=False)
    no_mask: bool = option("loss on every token", default=False)
    no_row_init: bool = option(KEEP_ROWS, default=False)
    steps: int | None = option(
        "this many updates instead of the budget's (15 QUICK, 50 FULL)",
        POSITIVE,
        at_most(10_000, "each is a forward and backward pass of a 135M model"),
        default=None,
    )
    letters: bool = option(
        "add a sixth family, letter counting, with its own held-out words", default=False
    )


@dataclass(frozen=True)
class PastTurnSettings:
    """The past-turn probe has no options: it reads the policies of lab sft and --no-mask."""


@dataclass(frozen=True)
class PackingSettings:
    row_length: int = option("slots per packed row", at_least(16), default=256)
    batch: int = option("conversations per padded batch", POSITIVE, COUNTED, default=10)
