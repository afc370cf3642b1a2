"""Chapter I.13's reading of the control study: two halves' records (built here from
synthetic 0/1 answers) combine into the declared contrasts, and the rows the chapter shows
say what the records hold."""

from __future__ import annotations

import pytest

from verifiable_grpo.part1 import control_declaration, control_reading, control_study

PROBLEMS = [f"p{i}" for i in range(10)]


def _rows(rights: list[int]) -> list[list]:
    """Two draws per problem: the first right where `rights` says, the second never."""
    return [
        [p, draw, 500 + 2 * i + draw, rights[i] if draw == 0 else 0, 1, "x"]
        for i, p in enumerate(PROBLEMS)
        for draw in (0, 1)
    ]


def _run(name: str, arm: str, seed: int, rights: list[int], wall: float) -> dict:
    rows = _rows(rights)
    return {
        "name": name,
        "arm": arm,
        "seed": seed,
        "after": {"sample": rows},
        "per_draw": sum(r[3] for r in rows) / len(rows),
        "train_seconds": wall - 100.0,
        "score_seconds": 90.0,
        "wall_seconds": wall,
    }


def _halves(declaration: dict) -> dict:
    rights = {"verifier": [1] * 10, "random": [0] * 10, "format": [1, 0] * 5}
    instruct_rows = _rows([0] * 10)
    halves = {}
    for half in control_declaration.HALVES:
        runs = {
            name: _run(name, arm, seed, rights[arm], 800.0 + seed)
            for name, arm, seed in control_declaration.half_runs(declaration, half)
        }
        halves[half] = {
            "runs": runs,
            "started": {"started_at": half},
            "seconds": 1.0,
            "instruct": {"after": {"sample": instruct_rows}} if half == "first" else None,
        }
    return halves


def test_the_halves_combine_into_the_rows_the_chapter_shows():
    declaration = control_declaration.load()
    declaration["analysis"] = {**declaration["analysis"], "resamples": 200}
    halves = _halves(declaration)
    combined = control_study.combined_record(halves, declaration)
    rows = control_reading.runs_rows(halves)
    assert len(rows) == 7 and rows[0][:3] == ["first", "verifier", 1234]
    assert rows[0][3:5] == ["0.500", "+0.500"]  # one right draw of two, against none
    assert control_reading.contrast(combined, "verifier - random")["difference"] == 0.5
    assert control_reading.contrast(combined, "verifier - format")["difference"] == 0.25
    shown = {row[0]: row for row in control_reading.contrast_rows(combined)}
    assert shown["random - instruct"][1:] == ["+0.000", "[+0.000, +0.000]", "no"]
    assert shown["verifier - format"][3] == "yes"
    assert combined["analysis"]["verifier_taught_it"]
    assert control_reading.fifteen_minute_run(halves, declaration) == combined["fifteen_minute_run"]
    fifteen = dict(control_reading.fifteen_minute_rows(combined["fifteen_minute_run"]))
    assert fifteen["run"] == "verifier-1234"
    assert fifteen["instruct model to test score, minutes"] == f"{2034 / 60:.1f}"
    assert fifteen["targets met (15 minutes; +0.3)"] == "no; yes"


def test_the_first_half_alone_has_no_analysis():
    declaration = control_declaration.load()
    first = {"first": _halves(declaration)["first"]}
    assert len(control_reading.runs_rows(first)) == 3
    with pytest.raises(ValueError, match="second half has not run"):
        control_study.combined_record(first, declaration)


def test_the_training_figure_draws_each_run_once_and_names_each_arm_once():
    from verifiable_grpo.book import taught_plots

    def history(paid, verifier):
        return [
            {
                "iteration": i,
                "mean_reward": paid,
                "mean_verifier_reward": verifier,
                "mean_exact_kl": 0.01 * i,
            }
            for i in range(6)
        ]

    runs = [
        {"arm": "verifier", "history": history(0.5, None)},
        {"arm": "verifier", "history": history(0.7, None)},
        {"arm": "random", "history": history(0.5, 0.1)},
    ]
    left, right = taught_plots.plot_control_training(runs).axes
    drawn = [line.get_ydata()[-1] for line in left.get_lines()]
    assert drawn == pytest.approx([0.5, 0.7, 0.1])  # the verifier's judgement, not the pay
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["verifier", "random"]
    assert len(right.get_lines()) == 3
