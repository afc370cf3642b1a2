"""Exercise (Part III, expert iteration vs GRPO): the share of silent groups.

The learner writes fn(rewards) -> float for rewards a float64 tensor [P, G] of 0/1 rewards,
one group per row: the share of groups whose rewards are all equal (all wrong or all
right), which give GRPO no signal. References are written out by hand here.
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, run_cases

ONLY_WRONG = "looks like only all-wrong groups were counted: an all-right group is silent too"
PER_RESPONSE = "looks like a share of responses, not of groups: count each row once"
INVERTED = "looks like the share of mixed groups (the informative ones): count the silent ones"


def _silent(rows):
    return sum(len(set(r)) == 1 for r in rows) / len(rows)


def _case(label, rows):
    all_wrong = sum(all(v == 0 for v in r) for r in rows) / len(rows)
    per_response = sum(len(r) * (len(set(r)) == 1) for r in rows) / sum(len(r) for r in rows)
    mistakes = {ONLY_WRONG: all_wrong, INVERTED: 1 - _silent(rows)}
    if len({len(r) for r in rows}) > 1:
        mistakes[PER_RESPONSE] = per_response
    return Case(
        f"{label}: rewards {rows}",
        lambda fn: float(fn(torch.tensor(rows, dtype=torch.float64))),
        _silent(rows),
        tolerance=1e-12,
        mistakes=mistakes,
    )


def cases() -> list[Case]:
    return [
        _case("one mixed group", [[1.0, 0.0, 1.0, 0.0]]),
        _case("all wrong, all right, mixed", [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]]),
        _case(
            "four groups of eight",
            [[0.0] * 8, [1.0] + [0.0] * 7, [1.0] * 8, [0.0, 1.0] * 4],
        ),
    ]


def check_silent_fraction(fn, verbose: bool = True):
    """Run the hidden cases against fn(rewards[P, G] float64) -> float."""
    return run_cases("silent groups", fn, cases(), verbose)
