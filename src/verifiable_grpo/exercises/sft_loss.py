"""Exercise (chapter 5): the supervised loss of one accumulation.

The learner writes fn(token_logprobs, mask) -> scalar: the negative log-likelihood averaged
over ALL supervised tokens of the batch, float64 [B, T] inputs, mask True on the answer's
positions. Positions outside the mask may hold anything, -inf included.
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, run_cases

PER_EXAMPLE = (
    "looks like the mean of per-example means: it gives the tokens of short answers "
    "more weight; divide the summed NLL by the number of supervised tokens"
)
ALL_POSITIONS = "looks like every position was averaged: only the masked (answer) positions count"
SIGN = "the loss is the NEGATIVE log-likelihood: minus the mean log-probability"
NAN_MASK = (
    "masked positions may hold -inf, and -inf * 0 is NaN: select with torch.where, "
    "do not multiply by the mask"
)


def _by_hand(logprobs, mask):
    picked = [lp for row, m in zip(logprobs, mask) for lp, on in zip(row, m) if on]
    return -sum(picked) / len(picked)


def _per_example(logprobs, mask):
    means = [-sum(lp for lp, on in zip(row, m) if on) / sum(m) for row, m in zip(logprobs, mask)]
    return sum(means) / len(means)


def _case(label, logprobs, mask, filler=None):
    stored = [
        [(filler if filler is not None and not on else lp) for lp, on in zip(row, m)]
        for row, m in zip(logprobs, mask)
    ]
    mistakes = {PER_EXAMPLE: _per_example(logprobs, mask), SIGN: -_by_hand(logprobs, mask)}
    if filler is None:
        flat = [lp for row in logprobs for lp in row]
        mistakes[ALL_POSITIONS] = -sum(flat) / len(flat)
    else:
        mistakes[NAN_MASK] = float("nan")
    return Case(
        f"{label}: log p {stored}, mask {mask}",
        lambda fn: fn(torch.tensor(stored, dtype=torch.float64), torch.tensor(mask)),
        _by_hand(logprobs, mask),
        tolerance=1e-12,
        mistakes=mistakes,
    )


def cases() -> list[Case]:
    long_short = [[-0.5, -1.0, -2.0, -0.1, -0.3], [-4.0, -0.2, -9.0, -9.0, -9.0]]
    mask = [[False, True, True, True, True], [False, True, False, False, False]]
    return [
        _case("one example", [[-3.0, -1.0, -0.5]], [[False, True, True]]),
        _case("a long and a short answer", long_short, mask),
        _case("padding holding -inf", long_short, mask, filler=float("-inf")),
    ]


def check_sft_loss(fn, verbose: bool = True):
    """Run the hidden cases against fn(token_logprobs[B, T], mask[B, T]) -> scalar NLL."""
    return run_cases("supervised loss", fn, cases(), verbose)
