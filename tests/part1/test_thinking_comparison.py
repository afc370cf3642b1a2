"""The comparison's declaration is checked, refuses a family the screen did not pass, and
plans equal-budget arms with an estimated time (the smoke scale: no model runs)."""

from __future__ import annotations

import argparse

import pytest
import yaml

from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part1 import learning_command, thinking_comparison, thinking_screen
from verifiable_grpo.task.thinking_template import ANSWER_ONLY, THINK_THEN_ANSWER


def _screen(passed=("CarrySums-v1",)):
    cell = lambda template, seconds: {  # noqa: E731
        "family": "CarrySums-v1",
        "template": template,
        "seconds": seconds,
        "rows": [[0]] * 128,
    }
    return {
        "passed": list(passed),
        "cells": [cell(ANSWER_ONLY, 16.0), cell(THINK_THEN_ANSWER, 64.0)],
    }


def test_the_committed_declaration_reads_and_keeps_the_arms_equal():
    declared = thinking_comparison.load()
    assert sorted(declared["arms"]) == sorted(thinking_screen.TEMPLATES)
    assert declared["max_new_tokens"] == thinking_screen.MAX_NEW_TOKENS
    assert len(declared["seeds"]) >= 2
    assert declared["reward_terms"][THINK_THEN_ANSWER] == ["answer", "format"]


def test_a_bad_declaration_is_refused_naming_its_key(tmp_path):
    declared = thinking_comparison.load()
    bad = dict(declared, surprise=1)
    bad["reward_terms"] = {**declared["reward_terms"], ANSWER_ONLY: ["no-such-term"]}
    path = tmp_path / "comparison.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match="unknown key 'surprise'"):
        thinking_comparison.load(path)
    del bad["surprise"]
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match="reward_terms.answer-only"):
        thinking_comparison.load(path)


def test_a_family_the_screen_did_not_pass_is_refused():
    declared = thinking_comparison.load()
    with pytest.raises(ConfigError, match="did not pass the recorded screen"):
        thinking_comparison.require_screen(declared, _screen(passed=()))
    thinking_comparison.require_screen(declared, _screen())


def test_the_plan_counts_every_run_at_the_measured_rates():
    declared = thinking_comparison.load()
    found = thinking_comparison.plan(declared, _screen())
    assert found["seconds_per_response"] == {ANSWER_ONLY: 0.125, THINK_THEN_ANSWER: 0.5}
    arms, seeds = len(declared["arms"]), len(declared["seeds"])
    assert len(found["runs"]) == arms * (seeds + 1)  # each seed, and the untrained model
    g, t = declared["grpo"], declared["test"]
    per_run = g["iterations"] * g["prompts_per_iteration"] * g["group_size"]
    expected = sum(
        rate
        * (
            seeds * per_run * thinking_comparison.TRAINING_FACTOR
            + (seeds + 1) * t["problems"] * t["draws"]
        )
        for rate in (0.125, 0.5)
    )
    assert found["total_seconds"] == pytest.approx(expected, rel=1e-12)
    assert "budget" in thinking_comparison.plan_lines(found)[-1]
    assert found["fallback"] is False and found["seeds"] == declared["seeds"]


def test_a_plan_over_the_budget_runs_the_declared_fallback_seeds():
    declared = thinking_comparison.load()
    slow = _screen()
    for cell in slow["cells"]:
        cell["seconds"] *= 1000
    found = thinking_comparison.plan(declared, slow)
    assert found["fallback"] is True and found["seeds"] == declared["fallback_seeds"]
    assert len(found["runs"]) == len(declared["arms"]) * (len(declared["fallback_seeds"]) + 1)
    assert "fallback" in thinking_comparison.plan_lines(found)[0]


def test_the_verb_prints_a_plan_on_a_dry_run_and_refuses_a_dirty_tree(
    monkeypatch, capsys, tmp_path
):
    from verifiable_grpo.core import preregistration

    monkeypatch.setattr(thinking_screen, "recorded", lambda path=None: _screen())
    args = argparse.Namespace(
        what="thinking-compare", dry_run=True, out=str(tmp_path), exploratory=False, export=False
    )
    assert learning_command.command_learn(args) == 0
    assert "think-then-answer/seed-1" in capsys.readouterr().out
    assert not any(tmp_path.iterdir())  # a plan writes nothing
    monkeypatch.setattr(preregistration, "tree_changes", lambda root=None: ["x.py"])
    args.dry_run = False
    with pytest.raises(ConfigError, match="clean, committed tree"):
        learning_command.command_learn(args)
    monkeypatch.setattr(thinking_screen, "recorded", lambda path=None: _screen(passed=()))
    with pytest.raises(ConfigError, match="did not pass"):
        learning_command.command_learn(args)
