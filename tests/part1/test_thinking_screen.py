"""The thinking screen: its declared rule, its prompts, its record on the micro model."""

import pytest

from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part1 import thinking_screen
from verifiable_grpo.task import thinking_template

A, T = thinking_template.ANSWER_ONLY, thinking_template.THINK_THEN_ANSWER


@pytest.mark.parametrize(
    "answer, think, passed",
    [
        (0.10, 0.20, True),  # both in the band
        (0.01, 0.20, True),  # thinking in the band where answer-only is below it
        (0.10, 0.01, False),  # thinking below the band
        (0.60, 0.20, False),  # answer-only above the band: little room to learn
        (0.01, 0.02, False),  # neither
        (0.05, 0.50, True),  # the band's edges are inside it
    ],
)
def test_the_declared_rule(answer, think, passed):
    assert thinking_screen.family_verdict({A: answer, T: think}) is passed


def test_the_declaration_names_what_it_screens():
    assert set(thinking_screen.TEMPLATES) == set(thinking_template.TEMPLATES)
    assert thinking_screen.MAX_NEW_TOKENS[T] > thinking_screen.MAX_NEW_TOKENS[A]
    assert thinking_screen.BAND == {"low": 0.05, "high": 0.5}
    config = thinking_screen.screen_config(T)
    assert config.tokens.max_response == thinking_screen.MAX_NEW_TOKENS[T]


def test_prompts_over_the_limit_are_refused(tokenizer):
    from verifiable_grpo.task import working_families

    examples = working_families.splits("ThreeSmall-v1")["screen"][:2]
    # the tiny tokenizer of the tests splits words finer than SmolLM2's: a longer limit
    config = thinking_screen.screen_config(T).replaced(
        tokens={"max_prompt": 512, "max_response": 96, "max_total": 608}
    )
    rows = thinking_screen.prompt_rows(tokenizer, config, "ThreeSmall-v1", T, examples)
    assert len(rows) == 2 and all(len(r) <= 512 for r in rows)
    small = config.replaced(tokens={"max_prompt": 8, "max_response": 96, "max_total": 104})
    with pytest.raises(ValueError, match="prompt of"):
        thinking_screen.prompt_rows(tokenizer, small, "ThreeSmall-v1", T, examples)


def test_a_screen_on_a_dirty_tree_is_refused_before_any_folder(monkeypatch, tmp_path):
    from verifiable_grpo.core import preregistration

    monkeypatch.setattr(preregistration, "tree_changes", lambda root=None: ["x.py"])
    with pytest.raises(ConfigError, match="clean, committed tree"):
        thinking_screen.run_screen(tmp_path / "screen")
    assert not (tmp_path / "screen").exists()


def test_a_cell_on_the_micro_model_records_every_response(micro_model, random_config, monkeypatch):
    policy, tokenizer = micro_model
    monkeypatch.setitem(thinking_screen.MAX_NEW_TOKENS, T, 4)
    tokens = {"max_prompt": 512, "max_response": 4, "max_total": 516}
    config = random_config.replaced(tokens=tokens)
    monkeypatch.setattr(thinking_screen, "screen_config", lambda template: config)
    cell = thinking_screen.screen_cell(policy, tokenizer, "ThreeSmall-v1", T, problems=2)
    assert cell["problems"] == 2 and len(cell["rows"]) == 2 * thinking_screen.SCREEN["draws"]
    assert 0.0 <= cell["per_draw"] <= 1.0
    assert all(r[6] <= 4 for r in cell["rows"])  # the declared token limit holds
    assert {r[0] for r in cell["rows"]} == {"t3-screen-0000", "t3-screen-0001"}
