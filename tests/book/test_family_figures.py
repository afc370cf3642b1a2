"""Part II's figures show the numbers their chapters print."""

from __future__ import annotations

import numpy as np

from figure_checks import assert_fits_the_column
from verifiable_grpo.book import family_plots
from verifiable_grpo.part2 import analysis, demos
from verifiable_grpo.part2.lock import read_lock


def test_dynamic_sampling_bars_are_the_samplers_means():
    costs = {
        label: demos.dynamic_sampling_cost(rates, steps=20)
        for label, rates in (("0.5", [0.5]), ("0.05, 0.95", [0.05, 0.95]))
    }
    figure = family_plots.plot_dynamic_sampling_cost(costs)
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    bars = [(p.get_height(), p.get_y()) for p in ax.patches]
    assert len(bars) == 3 * len(costs)  # plain, trained on, discarded
    plain, kept, discarded = bars[:2], bars[2:4], bars[4:]
    for k, cost in enumerate(costs.values()):
        assert plain[k] == (cost["plain_rollouts_per_step"], 0)
        assert np.isclose(discarded[k][0], cost["discarded_per_step"])
        # the discarded part sits on the kept part: together they are what was generated
        assert discarded[k][1] == kept[k][0]
        assert np.isclose(kept[k][0] + discarded[k][0], cost["rollouts_per_step"])
    assert [t.get_text() for t in ax.get_xticklabels()] == list(costs)
    assert "rollouts" in ax.get_ylabel()
    assert kept[1][0] + discarded[1][0] > kept[0][0] + discarded[0][0]  # extreme rates cost more


def test_paired_differences_show_each_arm_and_its_interval():
    lock, _ = read_lock()
    comparisons = analysis.analyse(lock, demos.e1_runs())["regimes"]["on_policy"]["comparisons"]
    figure = family_plots.plot_paired_differences(comparisons, "the card's runs")
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    intervals = [
        line
        for line in ax.lines
        if line.get_marker() != "o" and len(line.get_xdata()) == 2 and line.get_linestyle() == "-"
    ]
    assert [d.get_xdata()[0] for d in dots] == [c["difference"] for c in comparisons]
    assert [tuple(i.get_xdata()) for i in intervals] == [(c["low"], c["high"]) for c in comparisons]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert all(c["arm"] in label and c["verdict"] in label for c, label in zip(comparisons, labels))
    assert "minus grpo" in ax.get_xlabel()
