"""The signal-share checker passes a right answer and names each planted mistake."""

from __future__ import annotations

import pytest

from verifiable_grpo.book.band_plots import signal_share
from verifiable_grpo.exercises import band_signal


def right(rates, g):
    return sum(1 - p**g - (1 - p) ** g for p in rates) / len(rates)


def pooled(rates, g):
    p = sum(rates) / len(rates)
    return 1 - p**g - (1 - p) ** g


def all_wrong_only(rates, g):
    return sum(1 - (1 - p) ** g for p in rates) / len(rates)


def constant(rates, g):
    return 1 - right(rates, g)


def test_a_right_answer_passes_and_agrees_with_the_widget(capsys):
    assert band_signal.check_informative_share(right).passed
    assert signal_share(0.25, 8) == pytest.approx(right([0.25], 8), abs=1e-15)


@pytest.mark.parametrize(
    "fn, hint",
    [
        (pooled, band_signal.POOLED),
        (all_wrong_only, band_signal.ALL_RIGHT_FORGOTTEN),
        (constant, band_signal.CONSTANT_SHARE),
    ],
)
def test_each_mistake_is_named(fn, hint, capsys):
    result = band_signal.check_informative_share(fn)
    assert not result.passed
    out = capsys.readouterr().out
    assert hint in out
    others = {band_signal.POOLED, band_signal.ALL_RIGHT_FORGOTTEN, band_signal.CONSTANT_SHARE}
    assert not any(h in out for h in others - {hint})


def test_the_widget_refuses_impossible_inputs():
    with pytest.raises(ValueError, match="p must lie"):
        signal_share(1.5, 8)
    with pytest.raises(ValueError, match="at least 2"):
        signal_share(0.5, 1)
