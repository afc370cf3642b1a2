"""Exercise (Part III, SFT data): the attention mask of a packed row.

The learner writes fn(segment_ids) -> bool tensor [T, T]: entry [i, j] is True when the
token at position i may attend the token at position j. segment_ids is a list of ints, one
per position, naming the example each slot holds; -1 marks padding, which attends nothing
and is attended by nothing.
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, run_cases
from verifiable_grpo.part3.sft_data import block_causal_mask

NAIVE = (
    "looks like one causal mask over the whole row: tokens of a later example then "
    "attend the earlier examples; also require the same segment"
)
NOT_CAUSAL = "looks like whole blocks: a token may not attend later tokens of its own example"
PADDING = "padding (segment -1) must attend nothing: exclude it from both sides"


def _naive(segments):
    return torch.ones(len(segments), len(segments)).tril()


def _blocks(segments):
    seg = torch.tensor(segments)
    return ((seg[:, None] == seg[None, :]) & (seg[:, None] >= 0)).double()


def _with_padding(segments):
    seg = torch.tensor(segments)
    return (seg[:, None] == seg[None, :]).double().tril()


def _case(label, segments):
    mistakes = {NAIVE: _naive(segments), NOT_CAUSAL: _blocks(segments)}
    if -1 in segments:
        mistakes[PADDING] = _with_padding(segments)
    return Case(
        f"{label}: segment_ids {segments}",
        lambda fn: torch.as_tensor(fn(list(segments))).double(),
        block_causal_mask(segments).double(),
        tolerance=0,
        mistakes=mistakes,
    )


def cases() -> list[Case]:
    return [
        _case("one example", [0, 0, 0]),
        _case("two examples", [0, 0, 1, 1, 1]),
        _case("three examples and padding", [0, 1, 1, 2, 2, -1, -1]),
    ]


def check_packing_mask(fn, verbose: bool = True):
    """Run the hidden cases against fn(segment_ids: list[int]) -> bool tensor [T, T]."""
    return run_cases("packed attention mask", fn, cases(), verbose)
