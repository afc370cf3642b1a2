"""GRPO on fixed prompts and the held-out lift study: settings, the train-subset view,
the selection rule, the summaries, and refusals."""

from __future__ import annotations

import pytest

from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import fixed_prompts, lift_study
from verifiable_grpo.task import data


def test_fixed_prompt_config_trains_every_prompt_at_a_constant_rate():
    base = load_config("tiny")
    config = fixed_prompts.setting_config(base, fixed_prompts.RECORDED_SETTING)
    grpo = config["grpo"]
    assert (grpo["prompts_per_iteration"], grpo["group_size"], grpo["iterations"]) == (8, 8, 60)
    assert (grpo["warmup_fraction"], grpo["final_lr_fraction"]) == (0.0, 1.0)
    assert grpo["learning_rate"] == 1e-4 and grpo["kl_coefficient"] == 0.02
    assert base["grpo"]["prompts_per_iteration"] == 4  # base untouched
    live = fixed_prompts.setting_config(base, fixed_prompts.LIVE_SETTING)
    assert live["grpo"]["interrupt_at"] < live["grpo"]["iterations"] == 12


def test_train_subset_view_keeps_the_chosen_prompts_in_order(learning_view_dir, tmp_path):
    train = data.read_examples(learning_view_dir, "train")
    ids = [train[5]["document_id"], train[2]["document_id"]]
    view = data.write_train_subset(learning_view_dir, tmp_path / "view", ids)
    assert [e["document_id"] for e in data.read_examples(view, "train")] == ids
    assert data.read_examples(view, "validation") == data.read_examples(
        learning_view_dir, "validation"
    )
    data.assert_learning_only(view)
    with pytest.raises(ValueError, match="train subset"):
        data.write_train_subset(learning_view_dir, tmp_path / "bad", ["sa-train-9999"])
    with pytest.raises(ValueError, match="train subset"):
        data.write_train_subset(learning_view_dir, tmp_path / "dup", ids + ids[:1])
    with pytest.raises(FileExistsError):
        data.write_train_subset(learning_view_dir, view, ids)


def test_fixed_prompt_summary_by_hand():
    result = {
        "setting": {"draws": 4},
        "prompts": [{"before": 1, "after": 4}, {"before": 2, "after": 1}],
        "history": [{"mean_reward": r} for r in (0.0, 0.5, 0.5, 1.0, 1.0)],
        "validation_before": [["a", 0, 1], ["a", 1, 0]],
        "validation_after": [["a", 0, 0], ["a", 1, 0]],
    }
    got = fixed_prompts.summary(result)
    assert (got["trained_before"], got["trained_after"]) == (3 / 8, 5 / 8)
    assert got["prompts_improved"] == 1
    assert (got["reward_first_fifth"], got["reward_last_fifth"]) == (0.0, 1.0)
    assert (got["validation_before"], got["validation_after"]) == (0.5, 0.0)


def _rows(rewards, seed_base=0):
    return [
        [f"p{i}", k, seed_base + 10 * i + k, r]
        for i, draws in enumerate(rewards)
        for k, r in enumerate(draws)
    ]


def _candidate_result(index, validation, test):
    return {
        "candidate": lift_study.asdict(lift_study.CANDIDATES[index]),
        "validation_sample": _rows(validation, 1000),
        "test_sample": _rows(test),
        "test_greedy": _rows([[t[0]] for t in test]),
        "train_seconds": 1.0,
        "history": [{"mean_reward": 0.25}, {"mean_reward": 0.5}],
    }


def test_lift_rule_selects_on_validation_only():
    warm = {
        "validation_sample": _rows([[0, 0]] * 40, 1000),
        "test_sample": _rows([[0, 0]] * 40),
        "test_greedy": _rows([[0]] * 40),
    }
    flat = _candidate_result(0, [[0, 0]] * 40, [[1, 1]] * 40)  # test up, validation flat
    summary = lift_study.summarise(warm, [flat])
    assert summary["selected"] is None and summary["candidates"][0]["learns"] is False
    assert summary["candidates"][0]["test_per_draw"] == 1.0  # reported, not selected on
    assert summary["not_run"] == [c.name for c in lift_study.CANDIDATES[1:]]
    up = _candidate_result(0, [[1, 1]] * 40, [[0, 0]] * 40)
    summary = lift_study.summarise(warm, [up])
    assert summary["selected"] == lift_study.CANDIDATES[0].name
    assert summary["candidates"][0]["paired"]["test_sample"]["difference"] == 0.0


def test_lift_candidates_are_declared_and_working_ones_refused():
    names = [c.name for c in lift_study.CANDIDATES]
    assert len(set(names)) == len(names) and lift_study.CANDIDATES[0].model == "tiny"
    config = lift_study.candidate_config(load_config("tiny"), lift_study.CANDIDATES[0])
    assert (config["grpo"]["prompts_per_iteration"], config["grpo"]["group_size"]) == (64, 8)
    with pytest.raises(ValueError, match="not runnable"):
        lift_study.candidate_config(load_config("tiny"), lift_study.CANDIDATES[2])


def test_the_recorded_validation_drop_has_an_interval_below_zero():
    """Chapter 6 shows the fall on validation with its paired interval: recomputed here
    from the recorded per-problem outcomes (integers, a seeded bootstrap)."""
    run = fixed_prompts.recorded()["ours"]
    change = fixed_prompts.validation_change(run, resamples=2000)
    summary = fixed_prompts.summary(run)
    assert change["problems"] == 200 and change["draws"] == 4
    assert change["difference"] == pytest.approx(
        summary["validation_after"] - summary["validation_before"], abs=1e-12
    )
    assert change["low"] < change["difference"] < change["high"] < 0
    assert change["mcnemar_p"] < 0.05
