"""pass@k: exact small cases by hand, its limits k = 1 and k = n, monotone in k, stable at
large n, and its intervals over problems."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from verifiable_grpo.evaluation import pass_at_k as pk


def exact(n, c, k):
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.mark.parametrize(
    "n, c, k, by_hand",
    [
        (2, 1, 1, Fraction(1, 2)),
        (2, 1, 2, Fraction(1)),
        (4, 1, 2, Fraction(1, 2)),  # 3 of the 6 pairs hold the right draw
        (4, 2, 2, Fraction(5, 6)),  # only the pair of two wrong draws fails
        (8, 1, 4, Fraction(1, 2)),
        (5, 0, 3, Fraction(0)),
    ],
)
def test_small_cases_counted_by_hand(n, c, k, by_hand):
    assert exact(n, c, k) == by_hand
    assert pk.pass_at_k(n, c, k) == pytest.approx(float(by_hand), abs=1e-15)


@pytest.mark.parametrize("n", [1, 3, 8, 64])
def test_k_one_is_the_per_draw_rate_and_k_n_is_any_right(n):
    for c in range(n + 1):
        assert pk.pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-15)
        assert pk.pass_at_k(n, c, n) == (1.0 if c else 0.0)


def test_monotone_in_k_and_agrees_with_the_exact_fraction():
    for n, c in ((8, 1), (8, 3), (64, 5), (64, 40)):
        values = [pk.pass_at_k(n, c, k) for k in range(1, n + 1)]
        assert all(b >= a for a, b in zip(values, values[1:]))
        for k in range(1, n + 1):
            assert values[k - 1] == pytest.approx(float(exact(n, c, k)), abs=1e-12)


def test_the_product_is_stable_where_the_coefficients_overflow_float64():
    n, c, k = 2000, 3, 1000
    with pytest.raises(OverflowError):
        float(math.comb(n, k))
    assert pk.pass_at_k(n, c, k) == pytest.approx(float(exact(n, c, k)), abs=1e-12)


def test_the_biased_plug_in_is_lower():
    n, c, k = 8, 1, 4
    assert 1 - (1 - c / n) ** k < pk.pass_at_k(n, c, k)


@pytest.mark.parametrize(
    "n, c, k, message",
    [
        (4, 1, 5, "cannot estimate pass@5"),
        (4, 5, 1, "c must lie"),
        (0, 0, 1, "n must"),
        (4, 1, 0, "k must"),
        (4.0, 1, 1, "integer"),
    ],
)
def test_impossible_counts_are_refused(n, c, k, message):
    with pytest.raises(ValueError, match=message):
        pk.pass_at_k(n, c, k)


def test_the_curve_is_the_mean_over_problems_with_an_interval_around_it():
    counts = [(8, 0), (8, 1), (8, 4), (8, 8)]
    rows = pk.curve(counts, (1, 2, 8), np.random.default_rng(0), resamples=500)
    assert [r["k"] for r in rows] == [1, 2, 8]
    assert rows[0]["value"] == pytest.approx(13 / 32, abs=1e-15)
    assert rows[2]["value"] == pytest.approx(3 / 4, abs=1e-15)
    assert all(r["low"] <= r["value"] <= r["high"] for r in rows)
    again = pk.curve(counts, (1, 2, 8), np.random.default_rng(0), resamples=500)
    assert again == rows  # one generator: the same table


def test_the_paired_curve_pairs_problems():
    first, second = [(4, 0), (4, 1)], [(4, 2), (4, 1)]
    rows = pk.paired_curve(first, second, (1, 4), np.random.default_rng(1), resamples=200)
    assert rows[0]["difference"] == pytest.approx(0.25, abs=1e-15)
    assert rows[1]["difference"] == pytest.approx(0.5, abs=1e-15)
    with pytest.raises(ValueError, match="same problems"):
        pk.paired_curve(first, second[:1], (1,), np.random.default_rng(1))
