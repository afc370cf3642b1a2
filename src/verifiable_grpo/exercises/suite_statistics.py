"""Exercises (Part III, behavioural suite and judge): the Wilson interval and the
Benjamini-Hochberg adjustment, checked against the package's statistics.

Wilson: fn(successes, n, z) -> (low, high). Benjamini-Hochberg: fn(pvalues) -> adjusted
p-values as a float64 tensor in the input order (scaled by m / rank, made monotone from the
largest down; the running minimum keeps every value at or below the largest p, so at most 1).
"""

from __future__ import annotations

import math

import torch

from verifiable_grpo.evaluation.statistics import Z_95, benjamini_hochberg, wilson_interval
from verifiable_grpo.exercises.checking import Case, run_cases

WALD = "looks like the Wald interval p +- z sqrt(p(1-p)/n): it collapses at 0/n and n/n"
NO_CLAMP = "an end lies outside [0, 1]: clamp to the unit interval"
BONFERRONI = "looks like Bonferroni (every p times m): Benjamini-Hochberg scales by m / rank"
NOT_MONOTONE = (
    "looks like p * m / rank without the running minimum from the largest p down: an "
    "adjusted p-value must not exceed the next larger one's"
)


def _wald(k, n, z):
    p = k / n
    half = z * math.sqrt(p * (1 - p) / n)
    return [p - half, p + half]


def _wilson_case(label, k, n, z=Z_95):
    wald = _wald(k, n, z)
    mistakes = {WALD: wald, WALD + "; clamped": [max(0.0, wald[0]), min(1.0, wald[1])]}
    return Case(
        f"{label}: {k} of {n}, z {z:g}",
        lambda fn: list(fn(k, n, z)),
        list(wilson_interval(k, n, z)),
        tolerance=1e-12,
        mistakes=mistakes,
    )


def wilson_cases() -> list[Case]:
    return [
        _wilson_case("half of ten", 5, 10),
        _wilson_case("none of ten", 0, 10),
        _wilson_case("all of forty", 40, 40),
        _wilson_case("7 of 40 at z = 1", 7, 40, 1.0),
    ]


def _bh_case(label, pvalues):
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    raw = [0.0] * m
    for rank, i in enumerate(order, 1):
        raw[i] = pvalues[i] * m / rank
    return Case(
        f"{label}: p {pvalues}",
        lambda fn: torch.as_tensor(fn(list(pvalues)), dtype=torch.float64),
        benjamini_hochberg(pvalues)[0].tolist(),
        tolerance=1e-12,
        mistakes={
            BONFERRONI: [min(1.0, p * m) for p in pvalues],
            NOT_MONOTONE: [min(1.0, v) for v in raw],
        },
    )


def bh_cases() -> list[Case]:
    return [
        _bh_case("three tests in order", [0.01, 0.02, 0.03]),
        _bh_case("a later p lowers an earlier one", [0.04, 0.01, 0.03, 0.5]),
        _bh_case("unsorted, one large", [0.9, 0.001, 0.2, 0.04, 0.03]),
    ]


def check_wilson(fn, verbose: bool = True):
    """Run the hidden cases against fn(successes, n, z) -> (low, high)."""
    return run_cases("Wilson interval", fn, wilson_cases(), verbose)


def check_benjamini_hochberg(fn, verbose: bool = True):
    """Run the hidden cases against fn(pvalues: list) -> adjusted p-values [m]."""
    return run_cases("Benjamini-Hochberg", fn, bh_cases(), verbose)
