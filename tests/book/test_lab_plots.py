"""Part III's lab figures show the recorded numbers their chapters print."""

from __future__ import annotations

import numpy as np

from figure_checks import assert_fits_the_column
from verifiable_grpo.book import lab_plots
from verifiable_grpo.part3 import labs
from verifiable_grpo.part3.expert_iteration_lab.group_relative import mixed_group_probability
from verifiable_grpo.part3.smollm2 import records


def _bars(ax):
    return [patch.get_height() for patch in ax.patches]


def test_calibration_points_are_the_recorded_bins():
    lab = labs.recorded("reward-model")["metrics"]
    figure = lab_plots.plot_calibration(lab["calibration"], lab["ece"])
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    (points,) = ax.collections
    assert points.get_offsets().tolist() == [[row[2], row[3]] for row in lab["calibration"]]
    sizes = points.get_sizes()
    assert np.argmax(sizes) == np.argmax([row[1] for row in lab["calibration"]])  # area: pairs
    assert f"{lab['ece']:.3f}" in ax.get_title()
    assert "predicted" in ax.get_xlabel() and "observed" in ax.get_ylabel()


def test_pass_rates_show_every_category_and_model_with_its_interval():
    categories = records.load_recorded("suite")["categories"]
    figure = lab_plots.plot_pass_rates(categories)
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    models = list(dict.fromkeys(row["model"] for row in categories))
    assert [d.get_label() for d in dots] == models
    plotted = sorted(x for d in dots for x in d.get_xdata())
    assert plotted == sorted(row["pass"] for row in categories)
    intervals = sorted(tuple(line.get_xdata()) for line in ax.lines if line.get_marker() != "o")
    assert intervals == sorted(tuple(row["wilson"]) for row in categories)
    names = {t.get_text() for t in ax.get_yticklabels()}
    assert names == {row["category"] for row in categories}


def test_judge_bars_are_the_recorded_win_rates():
    metrics = labs.recorded("judge")["metrics"]
    figure = lab_plots.plot_judge_win_rates(metrics)
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    assert _bars(ax) == [metrics[key] for key in lab_plots.JUDGE_BARS]
    assert ax.lines[0].get_ydata()[0] == metrics["true_win"]  # the truth, as a line
    assert "A wins" in ax.get_ylabel()


def test_fault_tree_bars_are_the_recorded_rewards():
    recorded = labs.recorded("fault-tree")["metrics"]
    rewards = {
        reply: (recorded["initial"][reply], recorded["revised"][reply])
        for reply in recorded["initial"]
    }
    figure = lab_plots.plot_reward_by_reply(rewards)
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    count = len(rewards)
    assert _bars(ax)[:count] == list(recorded["initial"].values())
    assert _bars(ax)[count:] == list(recorded["revised"].values())
    assert [t.get_text() for t in ax.get_xticklabels()] == list(rewards)
    assert ax.get_ylabel() == "reward"
    labels = [float(t.get_text()) for t in ax.texts]  # every bar says its value, 0 included
    assert labels == [
        round(v, 2) for v in (*recorded["initial"].values(), *recorded["revised"].values())
    ]


def test_merging_bars_are_the_recorded_scores():
    lab = labs.recorded("merging")["metrics"]
    columns = list(next(iter(lab["rows"].values())))[:2]
    figure = lab_plots.plot_scores_by_model(lab["rows"], columns)
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    widths = [patch.get_width() for patch in ax.patches]
    expected = [scores[c] for c in columns for scores in lab["rows"].values()]
    assert widths == expected
    assert [t.get_text() for t in ax.get_yticklabels()] == list(lab["rows"])  # top to bottom
    assert [t.get_text() for t in ax.get_legend().get_texts()] == columns


def test_zero_variance_check_draws_observed_and_predicted():
    runs = {
        str(r["beta"]): r["records"]
        for r in labs.recorded("expert-iteration")["metrics"]["grpo"]
        if not r["substring"]
    }
    figure = lab_plots.plot_zero_variance_check(runs, 8)
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    assert len(ax.lines) == 2 * len(runs)
    for k, run_records in enumerate(runs.values()):
        logged = [r for r in run_records if r["zero_variance"] is not None]
        observed, predicted = ax.lines[2 * k], ax.lines[2 * k + 1]
        assert list(observed.get_xdata()) == [r["iteration"] for r in logged]
        assert list(observed.get_ydata()) == [r["zero_variance"] for r in logged]
        assert list(predicted.get_ydata()) == [
            1 - mixed_group_probability(r["sampled_reward"], 8) for r in logged
        ]
    assert ax.get_xlabel() == "iteration" and "groups" in ax.get_ylabel()


def test_packing_bars_are_the_recorded_slots_and_losses():
    packing = labs.recorded("sft-packing")["metrics"]
    figure = lab_plots.plot_packing(packing)
    assert_fits_the_column(figure)
    slots_ax, loss_ax = figure.axes
    layouts = ("padded", "packed", "naive")
    assert _bars(slots_ax) == [packing[name]["slots"] for name in layouts]
    assert _bars(loss_ax) == [packing[name]["loss"] for name in layouts]
    assert "slots" in slots_ax.get_ylabel() and "nats" in loss_ax.get_ylabel()
