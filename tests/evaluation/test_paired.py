"""Pairing by problem: hand-computable differences, discordant counts, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from verifiable_grpo.evaluation import paired


def _rows(rewards_by_problem, population="ID50", seeds=True):
    rows = []
    for index, rewards in enumerate(rewards_by_problem):
        for draw, reward in enumerate(rewards):
            rows.append(
                {
                    "document_id": f"p{index}",
                    "population": population,
                    "draw": draw,
                    "seed": 100 * index + draw if seeds else None,
                    "reward": reward,
                }
            )
    return rows


def test_compare_by_hand():
    first = _rows([[1, 0], [0, 0], [1, 1], [0, 1]])
    second = _rows([[1, 1], [1, 0], [0, 1], [0, 1]])
    result = paired.compare(first, second, np.random.default_rng(0), resamples=2000)
    # per-problem rates: first 0.5, 0, 1, 0.5 ; second 1, 0.5, 0.5, 0.5 -> difference 0.125
    assert result["difference"] == pytest.approx(0.125, abs=1e-15)
    assert result["first_rate"] == 0.5 and result["second_rate"] == 0.625
    # first draws: first 1,0,1,0 ; second 1,1,0,0 -> one each way, McNemar p = 1
    assert (result["only_first"], result["only_second"], result["mcnemar_p"]) == (1, 1, 1.0)
    assert result["low"] <= result["difference"] <= result["high"]


def test_identical_policies_have_a_zero_width_interval_and_p_one():
    rows = _rows([[1, 0], [0, 0], [1, 1]])
    result = paired.compare(rows, rows, np.random.default_rng(0), resamples=500)
    assert result["difference"] == result["low"] == result["high"] == 0.0
    assert result["mcnemar_p"] == 1.0


def test_discordant_counts_and_mcnemar_of_six_to_none():
    first = _rows([[1]] * 6 + [[0]] * 4)
    second = _rows([[0]] * 10)
    result = paired.compare(first, second, np.random.default_rng(1), resamples=500)
    assert (result["only_first"], result["only_second"]) == (6, 0)
    assert result["mcnemar_p"] == 2 / 64
    with pytest.raises(ValueError, match="binary"):
        paired.discordant(np.array([0.5]), np.array([1.0]))


def test_population_filter_and_all_pairs_order():
    rows = _rows([[1], [0]]) + [
        dict(r, document_id="o" + r["document_id"], population="OOD100")
        for r in _rows([[1], [1], [1]])
    ]
    by_population = paired.outcomes_by_problem(rows, "OOD100")
    assert sorted(by_population) == ["op0", "op1", "op2"]
    table = paired.all_pairs(
        {"a": rows, "b": rows, "c": rows},
        np.random.default_rng(0),
        population="ID50",
        resamples=100,
    )
    assert [(t["first"], t["second"]) for t in table] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert all(t["problems"] == 2 for t in table)


def test_unpaired_rows_are_refused():
    rows = _rows([[1, 0], [0, 0]])
    with pytest.raises(ValueError, match="not scored on the same problems"):
        paired.compare(rows, _rows([[1, 0]]), np.random.default_rng(0))
    shifted = [dict(r, seed=r["seed"] + 1) for r in rows]
    with pytest.raises(ValueError, match="not paired"):
        paired.compare(rows, shifted, np.random.default_rng(0))
    with pytest.raises(ValueError, match="appears twice"):
        paired.outcomes_by_problem(rows + rows[:1])
    with pytest.raises(ValueError, match="no scored rows for OOD100"):
        paired.outcomes_by_problem(rows, "OOD100")
