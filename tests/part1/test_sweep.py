"""The sweep beyond the specification: its settings change only the four swept values,
the selection uses validation only, and a paired test interval decides "learns"."""

from __future__ import annotations

import pytest

from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import sweep


def _rows(rewards, seed_base=0):
    """Compact rows [document_id, draw, seed, reward]: rewards[problem][draw]."""
    return [
        [f"p{i}", k, seed_base + 10 * i + k, r]
        for i, draws in enumerate(rewards)
        for k, r in enumerate(draws)
    ]


def _result(name, validation, test, index):
    setting = sweep.SETTINGS[index]
    return {
        "setting": {**sweep.asdict(setting), "name": name},
        "validation_sample": _rows(validation, 1000),
        "test_greedy": _rows([[t[0]] for t in test]),
        "test_sample": _rows(test),
        "train_seconds": 1.0,
        "history": [
            {
                "iteration": 0,
                "mean_reward": 0.5,
                "zero_variance_fraction": 0.5,
                "kl": 1e-3,
                "clip": 0.0,
            }
        ],
    }


def test_a_setting_changes_only_the_swept_values():
    base = load_config("tiny")
    config = sweep.setting_config(base, sweep.SETTINGS[3])
    assert config["grpo"]["learning_rate"] == 1e-4 and config["grpo"]["group_size"] == 8
    assert config["grpo"]["updates_per_rollout"] == 1 and config["grpo"]["iterations"] == 100
    changed = {k for k in base["grpo"] if base["grpo"][k] != config["grpo"][k]}
    # and prompt sharing off: the recorded sweep ran before it existed (another rounding)
    assert changed <= {
        "learning_rate",
        "iterations",
        "updates_per_rollout",
        "group_size",
        "share_prompts",
    }
    assert config["grpo"]["share_prompts"] is False
    assert {k: v for k, v in base.items() if k != "grpo"} == {
        k: v for k, v in config.items() if k != "grpo"
    }
    assert base["grpo"]["learning_rate"] == sweep.SPEC["learning_rate"]  # base untouched
    assert len({s.name for s in sweep.SETTINGS}) == len(sweep.SETTINGS)


def test_selection_uses_validation_and_the_paired_interval_decides():
    warm = {
        "validation_sample": _rows([[0, 0]] * 4, 1000),
        "test_greedy": _rows([[0]] * 4),
        "test_sample": _rows([[0, 0]] * 4),
    }
    # Setting 0: best on validation, every test problem solved more often -> learns.
    # Setting 1: worse on validation but perfect on test: never selected (no test peeking).
    good = _result("a", [[1, 0]] * 4, [[1, 0]] * 4, 0)
    peeked = _result("b", [[0, 0]] * 4, [[1, 1]] * 4, 1)
    summary = sweep.summarise(warm, [good, peeked], resamples=200)
    assert summary["selected"] == "a" and summary["learns"] is True
    row = summary["settings"][0]
    assert row["validation_per_draw"] == {"correct": 4, "responses": 8, "rate": 0.5}
    assert row["paired_vs_warm_start"]["difference"] == pytest.approx(0.5)
    assert row["paired_vs_warm_start"]["low"] == pytest.approx(0.5)  # every pair differs by 0.5
    # A tie on validation goes to the earlier setting; no gain on test -> does not learn.
    flat = _result("c", [[1, 0]] * 4, [[0, 0]] * 4, 2)
    tie = sweep.summarise(warm, [flat, good], resamples=200)
    assert tie["selected"] == "c" and tie["learns"] is False


def test_an_unfinished_sweep_is_not_recorded(tmp_path):
    with pytest.raises(ValueError, match="the sweep is not finished"):
        sweep.export(load_config("tiny"), tmp_path / "runs", tmp_path / "record")
    with pytest.raises(ValueError, match="unknown sweep settings"):
        sweep.run_sweep(load_config("tiny"), tmp_path / "runs", ["lr9"])
    assert not (tmp_path / "record").exists()
