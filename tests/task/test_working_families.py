"""The working families: disjoint, deterministic splits; the verifier on the final answer;
both templates render with the worked examples' working shown."""

import pytest

from verifiable_grpo.task import prompts, thinking_template, verifier, working_families
from verifiable_grpo.task.thinking_template import ANSWER_ONLY, THINK_THEN_ANSWER

FAMILIES = sorted(working_families.FAMILIES)


@pytest.mark.parametrize("name", FAMILIES)
def test_splits_are_disjoint_deterministic_and_exclude_the_worked_examples(name):
    splits = working_families.splits(name)
    assert {k: len(v) for k, v in splits.items()} == working_families.SPLIT_SIZES
    statements = [e["statement"] for rows in splits.values() for e in rows]
    assert len(statements) == len(set(statements))  # no problem in two splits
    shots = {working_families.statement_of(s) for s in working_families.FAMILIES[name].shots}
    assert not shots & set(statements)
    assert working_families.splits(name) == splits  # drawn once, from the declared seed
    ids = [e["document_id"] for rows in splits.values() for e in rows]
    assert len(ids) == len(set(ids))


def test_every_member_has_the_declared_shape():
    carries = working_families.family_problems("CarrySums-v1")
    assert all(
        10 <= a <= 99 and 10 <= b <= 99 and a % 10 + b % 10 >= 10 for a, ((_, b),) in carries
    )
    three = working_families.family_problems("ThreeSmall-v1")
    assert all(len(steps) == 2 and working_families.value_of((a, steps)) >= 0 for a, steps in three)
    with pytest.raises(ValueError, match="unknown family"):
        working_families.family_problems("NoSuchFamily")


@pytest.mark.parametrize(
    "problem, value",
    [((47, (("+", 38),)), 85), ((7, (("+", 5), ("-", 3))), 9), ((4, (("-", 4), ("+", 9))), 9)],
)
def test_the_stock_problem_and_the_working_agree_with_the_statement(problem, value):
    assert verifier.compute_final_stock(working_families.stock_problem(problem)) == value
    assert working_families.working(problem).endswith(f"{value}.")


def test_the_carry_working_shows_the_carry():
    assert "carry 1" in working_families.working((47, (("+", 38),)))


def _row(text, finish="eos"):
    return {"text": text, "finish_reason": finish, "tokenization_valid": True}


def test_the_verifier_judges_the_final_answer_only():
    problem = working_families.stock_problem((47, (("+", 38),)))
    think = "<think>7 + 8 = 15, carry 1. 4 + 3 + 1 = 8.</think>\n" + '{"final_stock": 85}'
    assert thinking_template.score(_row(think), problem, THINK_THEN_ANSWER)["reward"] == 1
    wrong = think.replace("85}", "84}")
    assert thinking_template.score(_row(wrong), problem, THINK_THEN_ANSWER)["reward"] == 0
    # the same working under answer-only is not a JSON answer
    assert thinking_template.score(_row(think), problem, ANSWER_ONLY)["reward"] == 0
    # no closed block: the whole text is the answer (format is the format reward's business)
    bare = '{"final_stock": 85}'
    assert thinking_template.score(_row(bare), problem, THINK_THEN_ANSWER)["reward"] == 1
    assert (
        thinking_template.score(_row("<think>85" + bare), problem, THINK_THEN_ANSWER)["reward"] == 0
    )
    assert (
        thinking_template.score(_row(think, "length"), problem, THINK_THEN_ANSWER)["reason"]
        == verifier.COMPLETION_WITHOUT_EOS
    )
    # prose after the answer is refused, as the verifier refuses it everywhere
    assert thinking_template.score(_row(think + " done"), problem, THINK_THEN_ANSWER)["reward"] == 0


@pytest.mark.parametrize("name", FAMILIES)
def test_both_templates_render_with_two_worked_turns(name, tokenizer):
    statement = working_families.splits(name)["test"][0]["statement"]
    for template in thinking_template.TEMPLATES:
        turns = thinking_template.messages(name, statement, template)
        assert [t["role"] for t in turns] == ["user", "assistant"] * 2 + ["user"]
        assert turns[-1]["content"].startswith(statement)
        ids = prompts.render_ids(tokenizer, turns, add_generation_prompt=True)
        assert len(ids) > 0
    think = thinking_template.messages(name, statement, THINK_THEN_ANSWER)
    answer = thinking_template.messages(name, statement, ANSWER_ONLY)
    assert all(t["content"].startswith("<think>") for t in think[1:4:2])
    assert all("</think>\n{" in t["content"] for t in think[1:4:2])
    assert not any("<think>" in t["content"] for t in answer)
    assert "<think></think>" in think[-1]["content"]


def test_an_unknown_template_is_refused():
    with pytest.raises(ValueError, match="unknown template"):
        thinking_template.final_answer("x", "no-such-template")


def test_the_profile_schema_names_every_family_under_every_template(smoke_config):
    from verifiable_grpo.core.config_schema import WORKING_PROMPTS

    declared = {
        f"{family}/{template}"
        for family in working_families.FAMILIES
        for template in thinking_template.TEMPLATES
    }
    assert set(WORKING_PROMPTS) == declared
    config = smoke_config.replaced(data={"prompt": "ThreeSmall-v1/think-then-answer"})
    turns = prompts.messages_for("What is 3 + 4 - 2?", config)
    assert turns == thinking_template.messages(
        "ThreeSmall-v1", "What is 3 + 4 - 2?", THINK_THEN_ANSWER
    )
