"""The card's GSM8K reward: the integer after the final ####, exact match."""

import pytest

from verifiable_grpo.part2 import gsm8k


@pytest.mark.parametrize(
    "text, expected",
    [
        ("so the answer is\n#### 72", 72),
        ("#### 1,234", 1234),  # thousands separators dropped
        ("#### -5", -5),  # a negative answer
        ("#### -1,000 dollars", -1000),
        ("first #### 3\nthen I fixed it #### 4", 4),  # only the final marker counts
        ("####   42\n", 42),
        ("#### 3.5", None),  # not an integer
        ("#### seven", None),
        ("72", None),  # no marker at all
        ("#### ", None),
    ],
)
def test_final_integer(text, expected):
    assert gsm8k.final_integer(text) == expected


@pytest.mark.parametrize(
    "completion, answer, reward",
    [
        ("12 pens\n#### 12", "3 * 4 = 12\n#### 12", 1.0),
        ("#### 1500", "1200 + 300 = 1500\n#### 1,500", 1.0),
        ("#### 1,500", "#### 1500", 1.0),
        ("#### 5", "4 - 9 = -5\n#### -5", 0.0),  # the sign matters
        ("#### -5", "4 - 9 = -5\n#### -5", 1.0),
        ("#### 13 #### 12", "#### 12", 1.0),
        ("#### 12 #### 13", "#### 12", 0.0),  # a right answer followed by a wrong one
        ("The answer is 12.", "#### 12", 0.0),  # no marker: no credit
    ],
)
def test_reward_is_binary_exact_match(completion, answer, reward):
    assert gsm8k.reward(completion, answer) == reward


def test_reference_without_an_integer_is_refused():
    with pytest.raises(ValueError, match="reference answer"):
        gsm8k.reward("#### 1", "no marker here")


def test_shipped_items_all_have_integer_answers(tmp_path):
    from verifiable_grpo.core.config import resolve

    items = gsm8k.read_items(resolve("tests/part2/data/gsm8k_items.jsonl"))
    assert len(items) >= 4
    assert all(gsm8k.reward(i["answer"], i["answer"]) == 1.0 for i in items)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    with pytest.raises(ValueError, match="'answer'"):
        gsm8k.read_items(bad)
