"""The band run's readings agree with what the record says another way: the twin groups
split the test sums, pass@1 is the paired per-draw rate, pass@8 the share of problems with
any right draw, and the breakdown counts every sampled answer once."""

from __future__ import annotations

import numpy as np
import pytest

from verifiable_grpo.book import taught_plots
from verifiable_grpo.part1 import band_reading, band_study
from verifiable_grpo.task import small_sums


@pytest.fixture(scope="module")
def band():
    return band_study.recorded("band")


def test_the_twin_groups_split_the_test_problems_by_their_commuted_twin():
    splits = small_sums.splits()
    groups = band_reading.twin_group_of_test_problems(splits)
    trained = {band_reading.operands(e) for e in splits["train"]}
    for example in splits["test"]:
        op, a, b = band_reading.operands(example)
        assert example["statement"] == small_sums.statement_of(op, a, b)
        group = groups[example["document_id"]]
        if op == "-":
            assert group == "differences"
        else:
            assert (group == "twin in train") == (("+", b, a) in trained)
            if a == b:
                assert group == "no twin in train"  # its own twin, never trained


def test_the_twin_table_adds_up_to_the_sums_the_record_reports(band):
    rows = {r["group"]: r for r in band_reading.twin_table(band)}
    assert sum(r["problems"] for r in rows.values()) == len(small_sums.splits()["test"])
    sums = [rows["twin in train"], rows["no twin in train"]]
    for side in ("before", "after"):
        pooled = sum(r[side] * r["problems"] for r in sums) / sum(r["problems"] for r in sums)
        assert pooled == pytest.approx(band["by_population"]["SUM"][side], abs=1e-12)
        assert rows["differences"][side] == pytest.approx(
            band["by_population"]["DIFF"][side], abs=1e-12
        )
    assert all(r["low"] <= r["difference"] <= r["high"] for r in rows.values())


def test_pass_at_k_meets_the_per_draw_rate_and_the_any_right_share(band):
    table = band_reading.pass_at_k_table(band)
    paired = band["paired"]["sample"]
    assert table["before"][0]["value"] == pytest.approx(paired["first_rate"], abs=1e-12)
    assert table["after"][0]["value"] == pytest.approx(paired["second_rate"], abs=1e-12)
    for side in ("before", "after"):
        rewards = band_reading.per_problem_rewards(band[side]["sample"])
        any_right = np.mean([max(r) for r in rewards.values()])
        assert table[side][-1]["value"] == pytest.approx(any_right, abs=1e-12)
        values = [r["value"] for r in table[side]]
        assert values == sorted(values)


def test_the_breakdown_counts_every_answer_once(band):
    breakdown = band_reading.answer_breakdown(band)
    for side in ("before", "after"):
        assert sum(breakdown[side].values()) == len(band[side]["sample"])
        assert breakdown[side]["right"] == sum(r[3] for r in band[side]["sample"])
    extra, repairs = band_reading.format_repairs_bound(band)
    assert 0 < repairs < extra


def test_the_figures_draw_both_sides(band):
    figure = taught_plots.plot_pass_at_k(band_reading.pass_at_k_table(band))
    assert len(figure.axes[0].lines) == 2
    bars = taught_plots.plot_answer_breakdown(band_reading.answer_breakdown(band))
    assert len(bars.axes[0].patches) == 6
