"""Chapter I.9's figure draws the recorded group-size branches: the running total of groups
whose rewards differ, and each iteration's mean reward, as recorded."""

from __future__ import annotations

import numpy as np

from figure_checks import assert_fits_the_column
from verifiable_grpo.book import learning_plots
from verifiable_grpo.book.notebook import load_recorded


def _histories():
    main = load_recorded("learning/grpo-continuous.json")["history"][:20]
    return {
        "G = 2": load_recorded("learning/grpo-g2-continuous.json")["history"],
        "G = 4 (main run, first 20)": main,
        "G = 8": load_recorded("learning/grpo-g8-continuous.json")["history"],
    }


def test_groups_with_signal_agree_with_the_recorded_zero_variance_fraction():
    for history in _histories().values():
        for h, mixed in zip(history, learning_plots.groups_with_signal(history)):
            # 0/1 rewards in groups of a handful: the fraction is exact
            assert mixed == len(h["groups"]) - h["zero_variance_fraction"] * len(h["groups"])


def test_lines_are_the_running_signal_and_the_recorded_rewards():
    histories = _histories()
    figure = learning_plots.plot_group_size_branches(histories)
    assert_fits_the_column(figure)
    signal_ax, reward_ax = figure.axes
    assert len(signal_ax.lines) == len(reward_ax.lines) == len(histories)
    for signal, reward, history in zip(signal_ax.lines, reward_ax.lines, histories.values()):
        iterations = [h["iteration"] for h in history]
        assert list(signal.get_xdata()) == list(reward.get_xdata()) == iterations
        running = np.cumsum(learning_plots.groups_with_signal(history))
        assert list(signal.get_ydata()) == list(running)
        assert list(reward.get_ydata()) == [h["mean_reward"] for h in history]
    assert [t.get_text() for t in figure.legends[0].get_texts()] == list(histories)
    # a larger group is mixed more often: the G = 8 branch collects the most signal
    totals = [line.get_ydata()[-1] for line in signal_ax.lines]
    assert totals[0] < totals[2]
