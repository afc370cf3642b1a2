"""Exercise (chapter "What taught it"): pass@k from n draws, without bias.

A problem was answered n times and c answers were right. The learner writes fn(n, c, k) ->
the unbiased estimate of pass@k, 1 - C(n - c, k) / C(n, k), and refuses (raises ValueError)
a k larger than n, which n draws cannot estimate. The reference is
evaluation/pass_at_k.pass_at_k; the hidden cases include an n where the binomial
coefficients overflow float64.
"""

from __future__ import annotations

import math
import numbers

from verifiable_grpo.evaluation.pass_at_k import pass_at_k
from verifiable_grpo.exercises.checking import Case, compare_numbers, exact_distance, run_cases

BIASED = (
    "that is 1 - (1 - c/n)^k, the plug-in of the per-draw rate: it is biased low (it treats "
    "c/n as the true rate); count the subsets of k draws instead, 1 - C(n-c, k) / C(n, k)"
)
PER_DRAW = (
    "that is c/n, the per-draw success (pass@1 averaged over the draws) whatever k is: "
    "pass@k asks whether ANY of k draws is right"
)
ALL_FAIL = "that is C(n-c, k) / C(n, k), the chance that all k draws fail: take one minus it"
TOO_LARGE_K = (
    "k > n: n draws cannot estimate pass@k for a k above n; refuse it (raise ValueError) "
    "instead of returning a number"
)
REFUSED = "refused"  # what a case of k > n expects the function to do
A_NUMBER = "a number"  # the mistake of answering k > n with any number


def _refused_or_value(fn, n, c, k):
    try:
        return fn(n, c, k)
    except ValueError:
        return REFUSED


def _refusal_distance(got, value) -> float:
    if value == A_NUMBER:
        is_number = isinstance(got, numbers.Real) and not isinstance(got, bool)
        return 0.0 if is_number else math.inf
    return exact_distance(got, value)


def _finite_comparison(got, expected, tolerance):
    """compare_numbers, with a word on overflow when the value is not finite."""
    problem = compare_numbers(got, expected, tolerance)
    if problem and isinstance(got, numbers.Real) and not math.isfinite(float(got)):
        problem += (
            " (C(n, k) overflows float64 here: compute the ratio as the product "
            "prod over i = n-c+1..n of (1 - k/i), or with exact integers)"
        )
    return problem


def _value_case(n: int, c: int, k: int) -> Case:
    want = pass_at_k(n, c, k)
    mistakes = {
        BIASED: 1.0 - (1.0 - c / n) ** k,
        PER_DRAW: c / n,
        ALL_FAIL: 1.0 - want,
    }
    return Case(
        f"n = {n} draws, c = {c} right, k = {k}",
        lambda fn, n=n, c=c, k=k: fn(n, c, k),
        want,
        tolerance=1e-12,
        mistakes={h: v for h, v in mistakes.items() if abs(v - want) > 1e-6},
        compare=_finite_comparison,
    )


def cases() -> list[Case]:
    out = [
        _value_case(n, c, k)
        for n, c, k in (
            (4, 1, 2),
            (8, 1, 4),
            (8, 3, 2),
            (8, 0, 8),
            (8, 2, 1),
            (64, 5, 16),
            (64, 60, 8),
            (2000, 3, 1000),
        )
    ]
    out.append(
        Case(
            "n = 8 draws, c = 2 right, k = 16 (more than n)",
            lambda fn: _refused_or_value(fn, 8, 2, 16),
            REFUSED,
            tolerance=0.0,
            mistakes={TOO_LARGE_K: A_NUMBER},
            compare=lambda got, want, _t: (
                None if got == want else f"expected a ValueError, got {got!r}"
            ),
            distance=_refusal_distance,
        )
    )
    return out


def check_pass_at_k(fn, verbose: bool = True):
    """Run the hidden cases against fn(n, c, k) -> unbiased pass@k (ValueError for k > n)."""
    return run_cases("pass@k", fn, cases(), verbose)
