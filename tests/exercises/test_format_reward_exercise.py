"""The format-reward checker passes the reference and names the classic mistakes: a regex
that accepts an empty block, or one that never closes."""

from __future__ import annotations

import json
import re

import pytest

from verifiable_grpo.exercises import format_reward
from verifiable_grpo.exercises.format_reward import check_format_reward


def careful(text, finish_reason):
    """A learner's right answer, written without the package."""
    if finish_reason != "eos" or text.count("<think>") != 1 or text.count("</think>") != 1:
        return 0.0
    match = re.fullmatch(r"\s*<think>(.*?)</think>(.*)", text, flags=re.DOTALL)
    if match is None or not match[1].strip():
        return 0.0
    try:
        value = json.loads(match[2])
    except ValueError:
        return 0.0
    ok = type(value) is dict and list(value) == ["final_stock"]
    return 1.0 if ok and type(value["final_stock"]) is int else 0.0


def empty_accepted(text, finish_reason):
    """The classic regex: `.*?` inside the block matches an empty or blank block."""
    if "<think>" in text and not text.split("</think>", 1)[0].replace("<think>", "").strip():
        return 1.0 if finish_reason == "eos" and text.rstrip().endswith("}") else 0.0
    return careful(text, finish_reason)


def unclosed_accepted(text, finish_reason):
    """`(</think>)?`: the closing tag made optional."""
    if text.startswith("<think>") and "</think>" not in text:
        return 1.0 if finish_reason == "eos" else 0.0
    return careful(text, finish_reason)


def number_judged(text, finish_reason):
    return careful(text, finish_reason) * float('"final_stock": 12}' in text)


def test_a_right_answer_passes_and_so_does_the_reference(capsys):
    assert check_format_reward(careful).passed
    assert check_format_reward(format_reward.reference).passed


@pytest.mark.parametrize(
    "fn, hint",
    [
        (empty_accepted, format_reward.EMPTY),
        (unclosed_accepted, format_reward.UNCLOSED),
        (number_judged, format_reward.NUMBER_JUDGED),
    ],
)
def test_each_classic_mistake_is_named(fn, hint, capsys):
    result = check_format_reward(fn)
    assert not result.passed
    out = capsys.readouterr().out
    assert hint in out


def test_a_naive_regex_is_caught_by_name(capsys):
    naive = re.compile(r"<think>(.*?)</think>\s*(\{.*\})", flags=re.DOTALL)

    def regex_only(text, finish_reason):
        return 1.0 if naive.search(text) else 0.0

    result = check_format_reward(regex_only)
    assert not result.passed
    out = capsys.readouterr().out
    assert format_reward.EMPTY in out and format_reward.EOS_IGNORED in out
