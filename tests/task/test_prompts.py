"""The rendering contract: what the model reads, what a training row supervises."""

from __future__ import annotations

import copy

import pytest
import torch

from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.task import prompts as P
from verifiable_grpo.task.statements import canonical_response, render_statement, user_message

PROBLEM = {"initial": 48, "deliveries": [8, 37], "withdrawals": [3, 21]}
STATEMENT = render_statement(PROBLEM, 1)
RESPONSE = canonical_response(69)


def test_training_prompt_is_the_generation_prompt(tokenizer, smoke_config):
    row = P.completion_row(tokenizer, STATEMENT, RESPONSE, smoke_config)
    generation = P.prompt_ids(tokenizer, STATEMENT, smoke_config)
    assert row["input_ids"][: row["prompt_length"]] == generation
    assert row["prompt_length"] == len(generation)
    # the model reads only the statement and the formatting instruction
    text = tokenizer.decode(generation, skip_special_tokens=False)
    assert user_message(STATEMENT) in text
    assert "69" not in text and 'final_stock": 69' not in text
    assert text.endswith("<|im_start|>assistant\n")


def test_row_equals_the_template_rendering_up_to_eos(tokenizer, smoke_config):
    row = P.completion_row(tokenizer, STATEMENT, RESPONSE, smoke_config)
    full = P.full_conversation_ids(tokenizer, STATEMENT, RESPONSE)
    n = len(row["input_ids"])
    assert full[:n] == row["input_ids"]
    assert (
        full[n - 1]
        == P.eos_id(tokenizer, smoke_config)
        == tokenizer.convert_tokens_to_ids("<|im_end|>")
    )
    assert tokenizer.decode(full[n:]) == "\n"  # only the template's newline after the turn
    P.check_row_rendering(tokenizer, STATEMENT, RESPONSE, row, smoke_config)
    bad = dict(row, input_ids=row["input_ids"][:-2] + [row["input_ids"][-1], row["input_ids"][-2]])
    with pytest.raises(ValueError, match="differs from the chat template"):
        P.check_row_rendering(tokenizer, STATEMENT, RESPONSE, bad, smoke_config)


def test_mask_covers_exactly_the_response_and_its_eos(tokenizer, smoke_config):
    row = P.completion_row(tokenizer, STATEMENT, RESPONSE, smoke_config)
    response = tokenizer.encode(RESPONSE, add_special_tokens=False)
    mask, ids, p = row["response_mask"], row["input_ids"], row["prompt_length"]
    assert len(mask) == len(ids) == p + len(response) + 1
    assert mask.index(True) == p  # first supervised position
    assert mask[-1] is True and ids[-1] == P.eos_id(tokenizer, smoke_config)  # EOS supervised
    assert not any(mask[:p]) and all(mask[p:])
    assert sum(mask) == row["response_tokens"] == len(response) + 1
    assert ids[p:-1] == response


def test_mask_is_by_position_not_by_token_value(tokenizer, smoke_config):
    # a response made of tokens that also occur in the prompt is still fully supervised
    row = P.completion_row(tokenizer, STATEMENT, "Stock starts at", smoke_config)
    p = row["prompt_length"]
    assert set(row["input_ids"][p:-1]) <= set(row["input_ids"][:p])
    assert row["response_mask"] == [False] * p + [True] * (len(row["input_ids"]) - p)


def test_oversized_examples_raise_and_are_never_truncated(tokenizer, smoke_config):
    long_statement = " ".join([STATEMENT] * 40)
    with pytest.raises(ValueError, match="over tokens.max_prompt=256"):
        P.prompt_ids(tokenizer, long_statement, smoke_config)
    with pytest.raises(ValueError, match="over tokens.max_prompt"):
        P.completion_row(tokenizer, long_statement, RESPONSE, smoke_config)
    n_response = len(tokenizer.encode(RESPONSE, add_special_tokens=False)) + 1
    config = smoke_config.replaced(tokens={"max_response": n_response - 1})
    with pytest.raises(ValueError, match="over tokens.max_response"):
        P.completion_row(tokenizer, STATEMENT, RESPONSE, config)
    config = smoke_config.replaced(tokens={"max_response": n_response})  # at the limit: fine
    row = P.completion_row(tokenizer, STATEMENT, RESPONSE, config)
    # max_total below a row that fits both budgets breaks the schema's rule, named as such
    with pytest.raises(
        ConfigError,
        match=r"tokens\.max_total: must be >= max_prompt \+ "
        r"max_response = \d+, got \d+",
    ):
        config.replaced(tokens={"max_total": len(row["input_ids"]) - 1})


def test_eos_id_from_config_or_tokenizer(tokenizer, smoke_config):
    assert P.eos_id(tokenizer, smoke_config) == tokenizer.eos_token_id
    config = smoke_config.replaced(model={"eos_token_id": 10**9})
    with pytest.raises(ValueError, match="not a token"):
        P.eos_id(tokenizer, config)


def test_template_identity_records_the_probe_and_notices_changes(tokenizer, smoke_config):
    identity = P.template_identity(tokenizer, smoke_config)
    statement = render_statement(P.PROBE_PROBLEM, 0)
    assert identity["ids"] == P.prompt_ids(tokenizer, statement, smoke_config)
    assert identity["text"] == tokenizer.decode(identity["ids"], skip_special_tokens=False)
    assert len(identity["sha256"]) == 64
    assert P.template_identity(tokenizer, smoke_config) == identity
    changed = copy.deepcopy(tokenizer)
    changed.chat_template = (
        "{{- '<|im_start|>system\\nBe brief.<|im_end|>\\n' }}" + tokenizer.chat_template
    )
    assert P.template_identity(changed, smoke_config)["sha256"] != identity["sha256"]


def test_rendered_output_shapes_are_normalised():
    assert P._as_ids([1, 2]) == [1, 2]
    assert P._as_ids({"input_ids": [[3, 4]], "attention_mask": [[1, 1]]}) == [3, 4]
    assert P._as_ids({"input_ids": torch.tensor([[5, 6]])}) == [5, 6]
    with pytest.raises(ValueError, match="one rendered conversation"):
        P._as_ids([[1], [2]])


def test_collate_pads_on_the_right_and_masks_by_position():
    rows = [
        {"input_ids": [7, 8, 9], "response_mask": [False, True, True]},
        {"input_ids": [5], "response_mask": [False]},
    ]
    batch = P.collate(rows, pad_id=0)
    assert batch["input_ids"].tolist() == [[7, 8, 9], [5, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["response_mask"].tolist() == [[False, True, True], [False, False, False]]
    assert batch["response_mask"].dtype == torch.bool and batch["input_ids"].dtype == torch.long
    with pytest.raises(ValueError, match="response_mask length"):
        P.collate([{"input_ids": [1, 2], "response_mask": [True]}], 0)
    with pytest.raises(ValueError, match="empty batch"):
        P.collate([], 0)
