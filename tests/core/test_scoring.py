"""Teacher-forced scores: alignment (logits at t score token t+1), masks, the notebook table."""

from __future__ import annotations

import pytest
import torch

from verifiable_grpo.core import scoring as S
from verifiable_grpo.task import prompts as P
from verifiable_grpo.task.statements import canonical_response, render_statement

PROBLEMS = [
    {"initial": 48, "deliveries": [8, 37], "withdrawals": [3, 21]},
    {"initial": 0, "deliveries": [50, 1], "withdrawals": [2, 0]},
]


def rows(tokenizer, config):
    return [
        P.completion_row(tokenizer, render_statement(p, i), canonical_response(v), config)
        for i, (p, v) in enumerate(zip(PROBLEMS, (69, 49)))
    ]


def test_token_logprobs_match_a_float64_hand_computation(micro_model, random_config):
    model, tokenizer = micro_model
    batch = P.collate(rows(tokenizer, random_config), tokenizer.pad_token_id)
    with torch.no_grad():
        scores = S.token_logprobs(model, batch["input_ids"], batch["attention_mask"])
        logits = S.forward_logits(model, batch["input_ids"], batch["attention_mask"]).double()
    assert scores.dtype == torch.float32
    assert scores.shape == (2, batch["input_ids"].shape[1] - 1)
    ids = batch["input_ids"]
    # token t+1 scored by the logits at t, normalised in float64
    chosen = logits[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
    expected = chosen - torch.logsumexp(logits[:, :-1], dim=-1)
    assert torch.allclose(scores.double(), expected, atol=1e-5, rtol=0)
    # the misaligned reading (token t from logits t) is not what is returned
    misaligned = logits[:, :-1].gather(-1, ids[:, :-1, None])[..., 0] - torch.logsumexp(
        logits[:, :-1], -1
    )
    assert not torch.allclose(scores.double(), misaligned, atol=1e-3)


def test_right_padding_does_not_change_real_positions(micro_model, random_config):
    model, tokenizer = micro_model
    short, long = sorted(rows(tokenizer, random_config), key=lambda r: len(r["input_ids"]))
    long = dict(
        long,
        input_ids=long["input_ids"] + [long["input_ids"][-1]] * 3,
        response_mask=long["response_mask"] + [True] * 3,
    )
    with torch.no_grad():
        single = P.collate([short], tokenizer.pad_token_id)
        pair = P.collate([short, long], tokenizer.pad_token_id)
        alone = S.token_logprobs(model, single["input_ids"], single["attention_mask"])
        padded = S.token_logprobs(model, pair["input_ids"], pair["attention_mask"])
    n = len(short["input_ids"]) - 1
    assert torch.allclose(alone[0], padded[0, :n], atol=1e-5, rtol=0)


def test_masked_sums_by_hand():
    logprobs = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -0.25, -4.0]])
    response_mask = torch.tensor([[False, False, True, True], [False, True, True, False]])
    sums, counts = S.masked_sums(logprobs, response_mask)
    # position 0 of the mask is never predicted; mask[1:] aligns with logprobs
    assert sums.tolist() == [-5.0, -0.75] and counts.tolist() == [2, 2]


def test_response_logprob_rows_agree_with_batched_scoring(micro_model, random_config):
    model, tokenizer = micro_model
    examples = rows(tokenizer, random_config)
    per_row = S.response_logprob_rows(model, examples, tokenizer.pad_token_id, batch_size=1)
    assert [c for _, c in per_row] == [r["response_tokens"] for r in examples]
    batch = P.collate(examples, tokenizer.pad_token_id)
    with torch.no_grad():
        sums, _ = S.masked_sums(
            S.token_logprobs(model, batch["input_ids"], batch["attention_mask"]),
            batch["response_mask"],
        )
    assert [s for s, _ in per_row] == pytest.approx(sums.tolist(), abs=1e-5)


def test_token_table_for_notebooks(micro_model, random_config):
    model, tokenizer = micro_model
    row = rows(tokenizer, random_config)[0]
    ids = torch.tensor([row["input_ids"]])
    with torch.no_grad():
        scores = S.token_logprobs(model, ids, torch.ones_like(ids))
    table = S.token_table(tokenizer, ids, scores, row["response_mask"])
    assert [r["position"] for r in table] == list(range(len(row["input_ids"])))
    assert table[0]["logprob"] is None
    assert table[-1]["logprob"] == pytest.approx(float(scores[0, -1]))
    assert table[-1]["token"] == "<|im_end|>" and table[-1]["supervised"] is True
    assert [r["supervised"] for r in table] == row["response_mask"]
    assert "".join(r["token"] for r in table[row["prompt_length"] : -1]) == canonical_response(69)
    with pytest.raises(ValueError, match="lengths disagree"):
        S.token_table(tokenizer, ids, scores[:, :-1], row["response_mask"])
    with pytest.raises(ValueError, match="one sequence"):
        S.token_table(tokenizer, ids.repeat(2, 1), scores.repeat(2, 1), row["response_mask"])
