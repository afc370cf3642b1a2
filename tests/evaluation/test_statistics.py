"""Statistics: hand-computed float64 values, the post-training module's Lab 6 figures, and
the error paths."""

import math
from fractions import Fraction

import numpy as np
import pytest

from verifiable_grpo.evaluation import statistics as st


# --------------------------------------------------------------------------- bootstrap
def test_constant_values_give_a_zero_width_interval():
    assert st.percentile_bootstrap([1.0] * 7, np.random.default_rng(0), resamples=50) == (1.0, 1.0)


def test_bootstrap_draws_one_index_matrix_and_reads_linear_quantiles():
    values = np.array([0.0, 1.0, 3.0])
    rng = np.random.default_rng(5)
    low, high = st.percentile_bootstrap(values, rng, resamples=4, level=0.5)
    # Reference: the same generator state, the four row means, quantiles at 0.25 / 0.75
    # by hand (linear interpolation between order statistics).
    rows = np.random.default_rng(5).integers(0, 3, (4, 3))
    means = sorted(float(values[r].sum()) / 3 for r in rows)
    position = 0.25 * 3  # (count - 1) * q
    expect_low = means[0] + (means[1] - means[0]) * position
    expect_high = means[2] + (means[3] - means[2]) * (0.75 * 3 - 2)
    assert (low, high) == pytest.approx((expect_low, expect_high), abs=1e-15)


def test_bootstrap_statistic_is_applied_per_row():
    values = [0.0, 0.0, 0.0, 10.0]
    low, high = st.percentile_bootstrap(
        values, np.random.default_rng(1), resamples=2000, statistic=np.median
    )
    assert low == 0.0 and high in (0.0, 5.0, 10.0)


def test_lab6_base_overall_interval_reproduces_with_the_shared_generator():
    # Lab 6's suite order is format 10, task 10, benign 10, refuse 5, abstain 5; the base
    # model passes exactly the ten benign items. The module calls its bootstrap on ten
    # category subsets (base, instruct for each) before the overall base row, all from
    # one default_rng(10); it prints [0.125, 0.400].
    rng = np.random.default_rng(10)
    for n in (10, 10, 10, 10, 10, 10, 5, 5, 5, 5):
        st.percentile_bootstrap(np.zeros(n), rng)
    base = np.array([0] * 20 + [1] * 10 + [0] * 10, dtype=float)
    low, high = st.percentile_bootstrap(base, rng)
    assert (round(low, 3), round(high, 3)) == (0.125, 0.4)


# --------------------------------------------------------------------------- Wilson
@pytest.mark.parametrize("n", [5, 10, 40])
def test_wilson_at_zero_successes_reaches_z2_over_n_plus_z2(n):
    z = st.Z_95
    low, high = st.wilson_interval(0, n)
    assert low == 0.0
    assert high == pytest.approx(z * z / (n + z * z), rel=1e-14)


def test_wilson_matches_lab6_table():
    rounded = lambda pair: tuple(round(x, 3) for x in pair)  # noqa: E731
    assert rounded(st.wilson_interval(0, 10)) == (0.0, 0.278)
    assert rounded(st.wilson_interval(0, 5)) == (0.0, 0.434)
    assert rounded(st.wilson_interval(10, 10)) == (0.722, 1.0)
    assert rounded(st.wilson_interval(10, 40)) == (0.142, 0.402)
    assert rounded(st.wilson_interval(15, 40)) == (0.242, 0.530)
    assert rounded(st.wilson_interval(5, 10)) == (0.237, 0.763)


def test_wilson_is_symmetric_around_one_half():
    low, high = st.wilson_interval(3, 10)
    mirror_low, mirror_high = st.wilson_interval(7, 10)
    assert low == pytest.approx(1 - mirror_high, abs=1e-15)
    assert high == pytest.approx(1 - mirror_low, abs=1e-15)


# --------------------------------------------------------------------------- paired
def test_paired_difference_and_a_constant_difference():
    rng = np.random.default_rng(0)
    result = st.paired_bootstrap([1, 1, 0, 1], [0, 1, 0, 0], rng, resamples=500)
    assert result["difference"] == 0.5
    assert -1.0 <= result["low"] <= 0.5 <= result["high"] <= 1.0
    same = st.paired_bootstrap([1, 0, 1], [0, -1, 0], rng, resamples=100)
    assert same == {"difference": 1.0, "low": 1.0, "high": 1.0}


# --------------------------------------------------------------------------- McNemar
def test_exact_mcnemar_hand_values():
    assert st.exact_mcnemar(5, 0) == 0.0625  # 2 / 2**5, Lab 6's printed p
    assert st.exact_mcnemar(0, 5) == 0.0625
    assert st.exact_mcnemar(8, 3) == 464 / 2048  # 2 (1 + 11 + 55 + 165) / 2**11
    assert st.exact_mcnemar(0, 0) == 1.0
    assert st.exact_mcnemar(4, 4) == 1.0
    assert st.exact_mcnemar(3, 4) == 1.0  # 2 P(X <= 3), n = 7, capped


def test_exact_binomial_is_exact_for_large_counts():
    # 2 * P(X <= 10) for n = 200 is below 1e-40: float summation of tiny terms would
    # still be fine, but exactness is checked against the rational value.
    expect = Fraction(2 * sum(math.comb(200, j) for j in range(11)), 2**200)
    assert st.exact_binomial_two_sided(10, 200) == float(expect)
    assert st.exact_binomial_two_sided(190, 200) == float(expect)


# --------------------------------------------------------------------------- BH
def test_benjamini_hochberg_hand_case_in_input_order():
    adjusted, reject = st.benjamini_hochberg([0.01, 0.04, 0.03, 0.5], alpha=0.05)
    np.testing.assert_allclose(adjusted, [0.04, 0.16 / 3, 0.16 / 3, 0.5], rtol=1e-15)
    assert reject.tolist() == [True, False, False, False]


def test_benjamini_hochberg_caps_at_one_and_rejects_all_small():
    adjusted, reject = st.benjamini_hochberg([0.9, 1.0])
    assert adjusted.tolist() == [1.0, 1.0] and not reject.any()
    adjusted, reject = st.benjamini_hochberg([0.001, 0.002, 0.003])
    assert reject.all() and adjusted.tolist() == pytest.approx([0.003] * 3, abs=1e-18)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: st.percentile_bootstrap([], np.random.default_rng(0)), "empty"),
        (lambda: st.percentile_bootstrap([1.0], np.random.default_rng(0), level=1.0), "level"),
        (lambda: st.percentile_bootstrap([1.0], np.random.default_rng(0), level=0), "level"),
        (
            lambda: st.percentile_bootstrap([1.0], np.random.default_rng(0), resamples=0),
            "resamples",
        ),
        (lambda: st.percentile_bootstrap([[1.0]], np.random.default_rng(0)), "1-D"),
        (lambda: st.percentile_bootstrap([float("nan")], np.random.default_rng(0)), "NaN"),
        (lambda: st.paired_bootstrap([1, 0], [1], np.random.default_rng(0)), "same items"),
        (lambda: st.wilson_interval(-1, 5), "non-negative"),
        (lambda: st.wilson_interval(6, 5), "exceed"),
        (lambda: st.wilson_interval(0, 0), "at least 1"),
        (lambda: st.wilson_interval(1.5, 5), "integer"),
        (lambda: st.exact_mcnemar(-1, 3), "non-negative"),
        (lambda: st.exact_mcnemar(True, 3), "integer"),
        (lambda: st.benjamini_hochberg([0.2, 1.5]), r"\[0, 1\]"),
        (lambda: st.benjamini_hochberg([0.2], alpha=0), "level"),
    ],
)
def test_bad_input_names_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
