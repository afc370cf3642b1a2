"""The chapter's readings of the recorded thinking screen: the table agrees with the
screen's own cells, the declared completions are the first problems' first draws, the
detector shares count what the detectors flag, the group reading adds up, and the
comparison stays "not run" until its record exists."""

from __future__ import annotations

import copy

import pytest

from verifiable_grpo.book import figure_checks, working_plots
from verifiable_grpo.book.widgets import FIGURE_DPI
from verifiable_grpo.part1 import thinking_comparison, thinking_reading, thinking_screen
from verifiable_grpo.task import working_families
from verifiable_grpo.task.thinking_template import ANSWER_ONLY, THINK_THEN_ANSWER


@pytest.fixture(scope="module")
def screen():
    return thinking_screen.recorded()


def test_the_table_reads_each_cell_and_brackets_its_rate(screen):
    rows = thinking_reading.screen_table(screen)
    assert len(rows) == len(thinking_screen.FAMILIES) * len(thinking_screen.TEMPLATES)
    for row in rows:
        found = thinking_reading.cell(screen, row["family"], row["template"])
        assert row["per_draw"] == found["per_draw"]
        assert row["low"] <= row["per_draw"] <= row["high"]
        assert row["passed"] == thinking_screen.family_verdict(
            screen["families"][row["family"]]["per_draw"]
        )


def test_per_problem_rates_average_to_the_per_draw_rate(screen):
    found = thinking_reading.cell(screen, "CarrySums-v1", THINK_THEN_ANSWER)
    rates = thinking_reading.per_problem(found)
    assert len(rates) == found["problems"]
    assert sum(rates) / len(rates) == pytest.approx(found["per_draw"], abs=1e-12)


def test_the_shown_completions_follow_the_declared_rule(screen):
    shown = thinking_reading.shown_completions(screen)
    per_family = thinking_reading.SHOWN_PROBLEMS * len(thinking_screen.TEMPLATES)
    assert len(shown) == len(thinking_screen.FAMILIES) * per_family
    first = working_families.splits("CarrySums-v1")["screen"][0]
    assert shown[0]["question"] == first["statement"]
    row = next(
        r
        for r in thinking_reading.cell(screen, "CarrySums-v1", ANSWER_ONLY)["rows"]
        if r[0] == first["document_id"] and r[1] == thinking_reading.SHOWN_DRAW
    )
    assert shown[0]["text"] == row[7] and shown[0]["right"] == bool(row[3])


def test_detector_shares_count_the_flagged_responses(screen):
    table = {(r["family"], r["template"]): r for r in thinking_reading.detector_table(screen)}
    answer_only = table[("CarrySums-v1", ANSWER_ONLY)]
    assert answer_only["format"] == 0.0  # never paid outside the thinking template
    assert answer_only["shares"]["unclosed_block"] == 0.0
    think = table[("CarrySums-v1", THINK_THEN_ANSWER)]
    found = thinking_reading.cell(screen, "CarrySums-v1", THINK_THEN_ANSWER)
    cut = sum(r[5] != "eos" for r in found["rows"]) / len(found["rows"])
    assert think["shares"]["truncated"] == cut == found["without_eos"]
    assert think["answer"] == found["per_draw"]


def test_group_shares_add_up(screen):
    for row in thinking_reading.group_table(screen):
        assert row["format_only"] <= row["answer_silent"]
        assert row["total_silent"] <= row["answer_silent"]
        # an answer-silent group is either silent in total or taught by the format alone
        assert row["answer_silent"] == pytest.approx(row["total_silent"] + row["format_only"])


def test_a_group_with_one_right_answer_is_not_answer_silent(screen):
    changed = copy.deepcopy(screen)
    found = thinking_reading.cell(changed, "ThreeSmall-v1", THINK_THEN_ANSWER)
    target = found["rows"][0][0]
    for row in found["rows"]:
        row[3] = 0
    before = thinking_reading.group_table(changed)[1]["answer_silent"]
    found["rows"][0][3] = 1
    after = thinking_reading.group_table(changed)[1]["answer_silent"]
    assert found["rows"][0][0] == target and before - after == pytest.approx(1 / 32)


def test_the_comparison_says_not_run_until_its_record_exists(tmp_path):
    status = dict(thinking_reading.comparison_status(tmp_path))
    assert set(status.values()) == {"not run"}
    (tmp_path / "comparison.json").write_text("{}")
    status = thinking_reading.comparison_status(tmp_path)
    assert status[0][1] == "recorded" and status[1][1] == "not run"


def test_the_declaration_rows_name_every_grpo_setting():
    declared = thinking_comparison.load()
    rows = dict(thinking_reading.declaration_rows(declared))
    for key in thinking_comparison.GRPO_KEYS:
        assert float(rows[f"GRPO: {key.replace('_', ' ')}"]) == declared["grpo"][key]


def test_the_figures_draw_every_cell_and_read_cleanly(screen):
    rows = thinking_reading.screen_table(screen)
    figure = working_plots.plot_screen(rows, screen["band"])
    assert sum(len(c) for c in figure.axes[0].containers if hasattr(c, "patches")) == len(rows)
    groups = working_plots.plot_group_signals(thinking_reading.group_table(screen))
    assert len(groups.axes[0].patches) == 3 * len(thinking_screen.FAMILIES)
    for drawn in (figure, groups):
        assert figure_checks.layout_problems(drawn, FIGURE_DPI) == []
