"""Exercise (chapter 8): the exact McNemar test for two policies on the same problems.

Only the discordant problems carry information: b solved by A only, c by B only. Under the
null hypothesis (same success rate) each discordant problem is a fair coin, so the two-sided
exact p-value is min(1, 2 P(X <= min(b, c))) with X ~ Binomial(b + c, 1/2); 1 when b + c = 0.
The learner writes fn(only_a, only_b) -> p; the reference uses exact fractions.
"""

from __future__ import annotations

import math
from fractions import Fraction

from verifiable_grpo.exercises.checking import Case, run_cases

ONE_SIDED = "looks one-sided: double the tail probability for a two-sided test"
UNCAPPED = "when b = c the doubled tail exceeds 1: cap the p-value at 1"
NORMAL = (
    "looks like the chi-square (normal) approximation: with few discordant problems use the "
    "binomial distribution exactly"
)


def exact_p(only_a: int, only_b: int) -> float:
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(Fraction(math.comb(n, k), 2**n) for k in range(min(only_a, only_b) + 1))
    return float(min(Fraction(1), 2 * tail))


def _normal(only_a, only_b):
    n = only_a + only_b
    return math.erfc(abs(only_a - only_b) / math.sqrt(n) / math.sqrt(2)) if n else 1.0


def _uncapped(only_a, only_b):
    n = only_a + only_b
    return float(2 * sum(Fraction(math.comb(n, k), 2**n) for k in range(min(only_a, only_b) + 1)))


def cases() -> list[Case]:
    out = []
    for a, b in ((0, 6), (6, 0), (1, 9), (12, 4), (5, 5), (30, 45), (0, 0), (3, 0)):
        mistakes = {
            ONE_SIDED: exact_p(a, b) / 2 if exact_p(a, b) < 1 else None,
            NORMAL: _normal(a, b),
        }
        if a == b and a:
            mistakes[UNCAPPED] = _uncapped(a, b)
        out.append(
            Case(
                f"only A solved {a}, only B solved {b}",
                lambda fn, a=a, b=b: fn(a, b),
                exact_p(a, b),
                tolerance=1e-12,
                mistakes={h: v for h, v in mistakes.items() if v is not None},
            )
        )
    return out


def check_exact_mcnemar(fn, verbose: bool = True):
    """Run the hidden cases against fn(only_a, only_b) -> two-sided exact p-value."""
    return run_cases("exact McNemar", fn, cases(), verbose)
