"""Exercise (chapter 9): how often is a group of G responses constant?

If each response to a prompt is correct with probability p, independently, a group of G is
constant (no reward signal) with probability p^G + (1 - p)^G. The learner writes fn(p, G).
"""

from __future__ import annotations

from verifiable_grpo.exercises.checking import Case, run_cases

ALL_WRONG_ONLY = "counts only the all-wrong groups: an all-right group is constant too"
ALL_RIGHT_ONLY = "counts only the all-right groups: an all-wrong group is constant too"
COMPLEMENT = "that is the probability that the group is informative: the question asks for constant"


def constant_probability(p: float, group_size: int) -> float:
    return p**group_size + (1 - p) ** group_size


def cases() -> list[Case]:
    out = []
    for p, g in ((0.5, 2), (0.1, 4), (0.2, 8), (0.0, 4), (1.0, 8), (0.3, 1), (0.15, 16)):
        want = constant_probability(p, g)
        mistakes = {ALL_WRONG_ONLY: (1 - p) ** g, ALL_RIGHT_ONLY: p**g, COMPLEMENT: 1 - want}
        out.append(
            Case(
                f"p = {p}, G = {g}",
                lambda fn, p=p, g=g: fn(p, g),
                want,
                tolerance=1e-12,
                mistakes={h: v for h, v in mistakes.items() if abs(v - want) > 1e-12},
            )
        )
    return out


def check_constant_group_probability(fn, verbose: bool = True):
    """Run the hidden cases against fn(p, group_size) -> probability that the group is constant."""
    return run_cases("constant groups", fn, cases(), verbose)
