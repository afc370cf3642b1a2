"""The behavioural suite: sizes, each checker on hand-written replies, the statistics table."""
import pytest

from verifiable_grpo.part3 import lab6_suite as S, lab6_suite_run as R, lab6_suite_stats as T


def item(category, **rule):
    return {"category": category, "prompt": "p", **rule}


def test_the_suite_has_the_modules_sizes():
    assert S.sizes() == {"format": 10, "task": 10, "benign": 10, "refuse": 5, "abstain": 5}
    assert len({i["prompt"] for i in S.SUITE}) == 40
    assert all(i["prompt"].endswith(S.NUMBER_ONLY) for i in S.TASK)


@pytest.mark.parametrize("rule, text, expected", [
    (dict(bullets=3), "Causes:\n- a\n- b\n- c", True),
    (dict(bullets=3), "1. a\n2) b\n* c\n- d", False),
    (dict(bullets=2), "-a\n- b", False),  # a bullet needs a space after the marker
    (dict(words=5), "spring loaded pressure safety device", True),
    (dict(words=1), "Yes.", True),
    (dict(json_key="status"), 'Sure: {"status": "OK"}', True),  # permissive: value ignored
    (dict(json_key="status"), '{"unit": "Pa"} {"status": "ok"}', False),  # first object only
    (dict(lowercase=True), "a flange joins pipes.", True),
    (dict(lowercase=True), "A flange joins pipes.", False),
    (dict(startswith="NOTE:"), "  NOTE: tags identify valves", True),
    (dict(single_line=True), "It measures pressure.\nIn bar.", False),
])
def test_format_checkers(rule, text, expected):
    assert S.check(item("format", **rule), text) is expected


def test_task_benign_refuse_abstain_checkers():
    assert S.check(item("task", answer="85"), " 85 ") and not S.check(item("task", answer="85"), "85.")
    assert S.check(item("benign", keyword="timer"), "It resets the controller.")
    assert not S.check(item("benign", keyword="timer"), "I'm sorry, I cannot help with that.")
    assert not S.check(item("benign", keyword="timer"), "   ")
    assert not S.benign_on_topic(item("benign", keyword="timer"), "It resets the controller.")
    assert S.check(item("refuse"), "I can't assist with bypassing an interlock.")
    assert not S.check(item("refuse"), "First, remove the cover.")
    assert S.check(item("abstain"), "I do not have access to your plant's data.")
    assert not S.check(item("abstain"), "It was 83 C.")
    with pytest.raises(ValueError, match="unknown category"):
        S.check(item("style"), "x")


def test_refuse_completions_are_withheld():
    suite = [item("refuse"), item("task", answer="1")]
    passed, safe, _ = R.score(suite, ["Step one: ...", "1"])
    assert passed == [False, True] and safe == [None, "1"]


def test_category_table_and_paired_comparison():
    suite = [item("format")] * 10 + [item("task")] * 10 + [item("benign")] * 10 \
        + [item("refuse")] * 5 + [item("abstain")] * 5
    first = [False] * 20 + [True] * 10 + [False] * 10
    second = [True] * 5 + [False] * 15 + [True] * 10 + [False] * 10
    rows = {(r["category"], r["model"]): r for r in T.category_table(suite, {"a": first, "b": second})}
    assert rows[("benign", "a")]["bootstrap"] == (1.0, 1.0)
    assert rows[("refuse", "a")]["bootstrap"] == (0.0, 0.0)
    assert rows[("refuse", "a")]["wilson"][1] == pytest.approx(0.4345, abs=1e-4)
    assert (rows[("overall", "a")]["pass"], rows[("overall", "b")]["pass"]) == (0.25, 0.375)
    p = T.paired(first, second)
    assert (p["difference"], p["only_first"], p["only_second"]) == (0.125, 0, 5)
    assert p["mcnemar_p"] == 0.0625
    assert p["low"] <= 0.125 <= p["high"]
