"""Chapter I.1's figure draws the generated problems' sizes, split by split: its steps are
the shares of each population in each bin, its legend the populations and their sizes."""

from __future__ import annotations

import numpy as np

from figure_checks import assert_fits_the_column
from verifiable_grpo.book import task_plots
from verifiable_grpo.core.config import load_config
from verifiable_grpo.task import data, verifier


def _problems():
    return data.generate_problem_set(load_config("tiny")["data"]["seed"])


def test_populations_are_the_learning_splits_and_the_test_halves():
    problems = _problems()
    populations = task_plots.problem_populations(problems)
    assert list(populations) == [task_plots.LEARNING_LABEL, "test ID50", "test OOD100"]
    learning = sum(len(problems[s]) for s in data.LEARNING_SPLITS)
    assert len(populations[task_plots.LEARNING_LABEL]) == learning
    assert [len(populations[f"test {p}"]) for p in data.TEST_COUNTS] == list(
        data.TEST_COUNTS.values()
    )


def test_steps_are_the_shares_of_operands_and_final_stocks():
    problems = _problems()
    figure = task_plots.plot_problem_sizes(problems)
    assert_fits_the_column(figure)
    operand_ax, stock_ax = figure.axes
    populations = task_plots.problem_populations(problems)
    for ax, measure, edges in (
        (operand_ax, task_plots.largest_operand, task_plots.OPERAND_EDGES),
        (stock_ax, verifier.compute_final_stock, task_plots.STOCK_EDGES),
    ):
        assert len(ax.patches) == len(populations)
        for step, rows in zip(ax.patches, populations.values()):
            values, drawn_edges, _ = step.get_data()
            counts, _ = np.histogram([measure(p) for p in rows], bins=edges)
            # integer counts over a small integer: the same division, exact
            assert np.array_equal(values, counts / len(rows))
            assert np.array_equal(drawn_edges, edges)
            assert counts.sum() == len(rows)  # every problem falls in a bin
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend == [f"{label} ({len(rows)})" for label, rows in populations.items()]


def test_only_the_ood_half_goes_past_the_id50_bound():
    problems = _problems()
    (operand_ax, _) = task_plots.plot_problem_sizes(problems).axes
    beyond = task_plots.OPERAND_EDGES[:-1] > data.ID_MAXIMUM
    shares_beyond = [step.get_data()[0][beyond].sum() for step in operand_ax.patches]
    assert shares_beyond[:2] == [0, 0]
    assert np.isclose(shares_beyond[2], 1.0, rtol=0, atol=1e-12)
