"""Exercise (Part III, masked SFT): the share of positions a batch trains on.

The learner writes fn(masks) -> float, masks a list of conversations, each a list of 0/1
(1 where the shifted position is a target). The share is over all positions of the batch:
the number of targets divided by the number of positions, not a mean of per-conversation
shares. References are written out by hand here.
"""

from __future__ import annotations

from verifiable_grpo.exercises.checking import Case, run_cases

PER_CONVERSATION = (
    "looks like the mean of per-conversation shares: a short conversation then weighs as "
    "much as a long one; divide all targets by all positions"
)
INVERTED = "looks like the share of positions NOT trained (context): count the 1s"


def _by_hand(masks):
    return sum(sum(m) for m in masks) / sum(len(m) for m in masks)


def _case(label, masks):
    shares = [sum(m) / len(m) for m in masks]
    return Case(
        f"{label}: masks {masks}",
        lambda fn: float(fn([list(m) for m in masks])),
        _by_hand(masks),
        tolerance=1e-12,
        mistakes={
            PER_CONVERSATION: sum(shares) / len(shares),
            INVERTED: 1 - _by_hand(masks),
        },
    )


def cases() -> list[Case]:
    return [
        _case("one conversation", [[0, 0, 0, 1, 1]]),
        _case("a short and a long conversation", [[0, 1], [0, 0, 0, 0, 0, 0, 1, 1]]),
        _case("three conversations", [[0, 0, 1], [0, 0, 0, 1, 1, 1], [0, 1, 1, 1]]),
    ]


def check_trained_fraction(fn, verbose: bool = True):
    """Run the hidden cases against fn(masks: list of 0/1 lists) -> float."""
    return run_cases("trained fraction", fn, cases(), verbose)
