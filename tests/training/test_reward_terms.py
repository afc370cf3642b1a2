"""Reward terms: the answer reward judges the final answer only, the format reward the
shape only, each a registered function with its declared weight."""

from __future__ import annotations

import pytest

from verifiable_grpo.task import working_families
from verifiable_grpo.task.thinking_template import ANSWER_ONLY, THINK_THEN_ANSWER
from verifiable_grpo.training import reward_terms

EXAMPLE = {"problem": working_families.stock_problem((7, (("+", 5), ("-", 3))))}
RIGHT = '<think>7 + 5 = 12. 12 - 3 = 9.</think>\n{"final_stock": 9}'


def values(text, finish="eos", template=THINK_THEN_ANSWER):
    row = {"text": text, "finish_reason": finish}
    return reward_terms.term_values(row, EXAMPLE, template, ("answer", "format"))


def test_the_declared_terms_and_weights():
    assert reward_terms.REWARD_TERMS["answer"].weight == 1.0
    assert reward_terms.REWARD_TERMS["format"].weight == 0.1


@pytest.mark.parametrize(
    "text, finish, answer, form",
    [
        (RIGHT, "eos", 1.0, 1.0),
        (RIGHT.replace(": 9}", ": 8}"), "eos", 0.0, 1.0),  # format ignores the number
        ('{"final_stock": 9}', "eos", 1.0, 0.0),  # a right bare answer: no format reward
        ('<think></think>\n{"final_stock": 9}', "eos", 1.0, 0.0),  # empty block
        ('<think>7 + 5 = 12 {"final_stock": 9}', "eos", 0.0, 0.0),  # never closes
        (RIGHT, "length", 0.0, 0.0),  # cut at the token limit
        (RIGHT + '\n{"final_stock": 9}', "eos", 0.0, 0.0),  # answer repeated
        ("<think>a</think><think>b</think>" + '{"final_stock": 9}', "eos", 1.0, 0.0),
    ],
)
def test_each_term_sees_only_its_own_part(text, finish, answer, form):
    assert values(text, finish) == {"answer": answer, "format": form}


def test_the_total_weighs_each_term():
    assert reward_terms.total(values(RIGHT)) == pytest.approx(1.1, abs=1e-12)
    wrong_number = values(RIGHT.replace(": 9}", ": 8}"))
    assert reward_terms.total(wrong_number) == pytest.approx(0.1, abs=1e-12)


def test_answer_only_never_earns_the_format_reward():
    assert values('{"final_stock": 9}', template=ANSWER_ONLY) == {"answer": 1.0, "format": 0.0}


def test_registering_a_term_twice_or_an_unknown_name_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        reward_terms.register_reward_term("answer", 1.0)(lambda *a: 0.0)
    with pytest.raises(ValueError, match="weight"):
        reward_terms.register_reward_term("heavy", 2.0)(lambda *a: 0.0)
    with pytest.raises(ValueError, match="unknown reward terms"):
        reward_terms.term_values({"text": "", "finish_reason": "eos"}, EXAMPLE, ANSWER_ONLY, ("x",))
