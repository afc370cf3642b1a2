"""The cost figures draw the package's accounting, segment by segment."""

from __future__ import annotations

import numpy as np

from figure_checks import assert_fits_the_column
from verifiable_grpo.book import cost_plots
from verifiable_grpo.models import accounting as acc
from verifiable_grpo.part3 import case_study as cs


def test_memory_segments_are_the_memory_table():
    tables = {
        method: acc.memory_table(acc.CASE_STUDY, acc.TrainingSetup(method=method, lora_rank=8))
        for method in acc.METHODS
    }
    figure = cost_plots.plot_memory_by_method(tables, acc.CASE_STUDY.name)
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    components = [r["component"] for r in tables["full"] if r["component"] != "total"]
    assert len(ax.patches) == len(components) * len(tables)
    widths = np.reshape([p.get_width() for p in ax.patches], (len(components), len(tables)))
    for k, method in enumerate(tables):
        sizes = {r["component"]: r["GB"] for r in tables[method]}
        # a stacked segment's width is its right edge minus its left: exact to rounding
        assert np.allclose(widths[:, k], [sizes[c] for c in components], rtol=1e-12, atol=0)
        assert np.isclose(widths[:, k].sum(), sizes["total"])  # the segments add to the total
    assert [t.get_text() for t in figure.legends[0].get_texts()] == components
    assert "GB" in ax.get_xlabel()


def test_bill_bars_are_the_stage_hours_and_prices():
    bill, price = cs.bill(), cs.Prices().usd_per_gpu_hour
    figure = cost_plots.plot_bill(bill, price)
    assert_fits_the_column(figure)
    (ax,) = figure.axes
    widths = [p.get_width() for p in ax.patches]
    expected = [bill["sft"]["gpu_hours"], *bill["grpo"]["stage_hours"].values()]
    assert np.allclose(widths, expected, rtol=1e-12, atol=0)  # stacked: right minus left edge
    assert np.isclose(sum(widths[1:]), bill["grpo"]["gpu_hours"])
    prices = [t.get_text().strip() for t in ax.texts]
    assert prices == [f"${bill['sft']['usd']:.2f}", f"${bill['grpo']['usd']:.2f}"]
    assert ax.get_xlabel() == "GPU-hours"
