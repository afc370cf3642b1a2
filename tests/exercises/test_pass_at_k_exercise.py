"""The pass@k checker passes the unbiased estimator (written three ways) and names each
planted mistake, the biased plug-in 1 - (1 - c/n)^k first."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from verifiable_grpo.exercises import pass_at_k as exercise

HINTS = {exercise.BIASED, exercise.PER_DRAW, exercise.ALL_FAIL, exercise.TOO_LARGE_K}


def _refuse(n, k):
    if k > n:
        raise ValueError(f"k = {k} > n = {n}")


def product(n, c, k):
    _refuse(n, k)
    if n - c < k:
        return 1.0
    out = 1.0
    for i in range(n - c + 1, n + 1):
        out *= 1 - k / i
    return 1 - out


def exact_integers(n, c, k):
    _refuse(n, k)
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def biased(n, c, k):
    _refuse(n, k)
    return 1 - (1 - c / n) ** k


def per_draw(n, c, k):
    _refuse(n, k)
    return c / n


def all_fail(n, c, k):
    _refuse(n, k)
    return math.comb(n - c, k) / math.comb(n, k)


def no_refusal(n, c, k):
    return 1.0 if n - c < k else product(n, c, k)


def float_coefficients(n, c, k):
    _refuse(n, k)
    return (
        1
        - math.gamma(n - c + 1)
        / math.gamma(n - c - k + 1)
        / (math.gamma(n + 1) / math.gamma(n - k + 1))
        if n - c >= k
        else 1.0
    )


@pytest.mark.parametrize("fn", [product, exact_integers])
def test_the_unbiased_estimator_passes(fn, capsys):
    assert exercise.check_pass_at_k(fn).passed
    assert "all 9 cases pass" in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, hint",
    [
        (biased, exercise.BIASED),
        (per_draw, exercise.PER_DRAW),
        (all_fail, exercise.ALL_FAIL),
        (no_refusal, exercise.TOO_LARGE_K),
    ],
)
def test_each_mistake_is_named_alone(fn, hint, capsys):
    assert not exercise.check_pass_at_k(fn).passed
    out = capsys.readouterr().out
    assert hint in out
    assert not any(h in out for h in HINTS - {hint})


def test_overflowing_coefficients_are_told_to_use_the_product(capsys):
    with pytest.raises(OverflowError):
        float_coefficients(2000, 3, 1000)

    def overflowing(n, c, k):
        try:
            return float_coefficients(n, c, k)
        except OverflowError:
            return math.nan

    result = exercise.check_pass_at_k(overflowing)
    assert not result.passed and len(result.failures) == 1
    assert "overflows float64" in capsys.readouterr().out


def test_an_unwritten_function_is_not_attempted(capsys):
    def unwritten(n, c, k):
        raise NotImplementedError

    assert not exercise.check_pass_at_k(unwritten).attempted
