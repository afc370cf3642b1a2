"""Exercise (chapter 2): group-relative advantages A = (r - mean) / (population std + delta).

The book calls the small constant delta (epsilon is the clip's); the package's argument
keeps the name `epsilon`. The learner writes fn(rewards, delta) with rewards a float64
tensor [P, G] (one group per row); it returns the advantages [P, G]. References are
written out by hand here, in float64, independently of the package's implementation.
"""

from __future__ import annotations

import math

import torch

from verifiable_grpo.exercises.checking import Case, run_cases

SAMPLE_STD = (
    "looks like the sample standard deviation (divide by G - 1, torch.std's default); "
    "this practical uses the population std (divide by G)"
)
NO_EPSILON = "looks like delta is missing from the denominator (std + delta)"
NO_STD = "looks like the rewards are only centred: divide by (std + delta) as well"
WHOLE_BATCH = "looks like one mean/std over the whole batch: each row is its own group"
NAN_FOR_CONSTANT = (
    "a constant group must give exactly 0, not NaN: keep delta in the "
    "denominator, never divide by the std alone"
)


def _by_hand(rows, epsilon, correction=0, use_epsilon=True, scale=True, exact_constant=True):
    out = []
    for row in rows:
        mean = row[0] if exact_constant and len(set(row)) == 1 else sum(row) / len(row)
        std = math.sqrt(sum((r - mean) ** 2 for r in row) / (len(row) - correction))
        denominator = (std + (epsilon if use_epsilon else 0.0)) if scale else 1.0
        out.append([(r - mean) / denominator if denominator else float("nan") for r in row])
    return out


def _batch_wide(rows, epsilon):
    flat = [r for row in rows for r in row]
    mean = sum(flat) / len(flat)
    std = math.sqrt(sum((r - mean) ** 2 for r in flat) / len(flat))
    return [[(r - mean) / (std + epsilon) for r in row] for row in rows]


def _case(label, rows, epsilon=1e-8, tolerance=1e-12):
    mistakes = {
        NO_EPSILON: _by_hand(rows, epsilon, use_epsilon=False),
        NO_STD: _by_hand(rows, epsilon, scale=False),
    }
    if len(rows[0]) > 1:
        mistakes[SAMPLE_STD] = _by_hand(rows, epsilon, correction=1)
    if len(rows) > 1:
        mistakes[WHOLE_BATCH] = _batch_wide(rows, epsilon)
    return Case(
        label=f"{label}: rewards {rows}, delta {epsilon:g}",
        run=lambda fn: fn(torch.tensor(rows, dtype=torch.float64), epsilon),
        expected=_by_hand(rows, epsilon),
        tolerance=tolerance,
        mistakes=mistakes,
    )


def _constant_case(rows, tolerance=0.0):
    """Rewards of 0 and 1 give an exact mean, so a constant group must give exactly 0. Other
    constants may not: 0.1 + 0.1 + 0.1 is 0.30000000000000004, the float mean is one ulp
    above 0.1, and a correct (r - mean) / (std + eps) is about 1e-9, not 0; accept that."""
    case = _case("constant groups give zero", rows, tolerance=tolerance)
    case.mistakes[NAN_FOR_CONSTANT] = [[float("nan")] * len(r) for r in rows]
    return case


def cases() -> list[Case]:
    return [
        _case("two right, two wrong", [[1.0, 0.0, 1.0, 0.0]]),
        _case("one right out of four", [[1.0, 0.0, 0.0, 0.0]]),
        _case("a group of two", [[0.0, 1.0]]),
        _case("delta matters when the std is tiny", [[1e-8, 0.0, 0.0, 0.0]]),
        _case("a large delta", [[1.0, 0.0, 1.0, 0.0]], epsilon=0.5),
        _case("several groups, one per row", [[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]]),
        _constant_case([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]),
        _constant_case([[0.1, 0.1, 0.1]], tolerance=1e-6),
    ]


def check_group_advantages(fn, verbose: bool = True):
    """Run the hidden cases against fn(rewards[P, G] float64, delta) -> advantages[P, G]."""
    return run_cases("group advantages", fn, cases(), verbose)
