"""Lab 2's chat-row delta acts as one change to the tied table: the same W + D in the input
lookup and in the output head, zero at the start, one gradient from both sides, and folding
it into the table changes no logit."""

from __future__ import annotations

import pytest
import torch

from verifiable_grpo.part3.smollm2 import row_delta

ROWS = (1, 2)


def tied_micro_model(seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=12,
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            tie_word_embeddings=True,
        )
    ).eval()


IDS = torch.tensor([[3, 1, 5, 2, 2, 7], [1, 4, 2, 9, 0, 11]])


def test_a_zero_delta_leaves_every_logit_unchanged():
    model = tied_micro_model()
    with torch.no_grad():
        before = model(IDS).logits
    shared = row_delta.attach(model, ROWS)
    with torch.no_grad():
        assert torch.equal(model(IDS).logits, before)
    assert [n for n, p in model.named_parameters() if p.requires_grad and p is shared.delta] == [
        "model.embed_tokens.shared.delta"
    ]


def test_the_delta_acts_identically_in_lookup_and_head():
    model = tied_micro_model()
    shared = row_delta.attach(model, ROWS)
    with torch.no_grad():
        shared.delta.copy_(
            torch.randn(shared.delta.shape, generator=torch.Generator().manual_seed(1))
        )
    table = shared.table(model.get_input_embeddings().weight)  # W + D, copied
    assert not torch.equal(table, model.get_input_embeddings().weight)
    with torch.no_grad():
        looked_up = model.get_input_embeddings()(IDS)
        hidden = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(2))
        logits = model.get_output_embeddings()(hidden)
    assert torch.equal(looked_up, torch.nn.functional.embedding(IDS, table))
    torch.testing.assert_close(
        logits, row_delta.effective_logits(hidden, model.lm_head.weight, shared), rtol=0, atol=1e-6
    )
    # only the chat rows' logit columns move
    plain = hidden @ model.lm_head.weight.T
    moved = (logits - plain).abs().amax(dim=(0, 1)) > 0
    assert moved.nonzero().flatten().tolist() == list(ROWS)


def test_both_paths_send_their_gradient_to_the_one_delta():
    def gradient(use_lookup: bool, use_head: bool):
        model = tied_micro_model()
        shared = row_delta.attach(model, ROWS)
        hidden = model.get_input_embeddings()(IDS) if use_lookup else torch.ones(2, 6, 8)
        out = model.get_output_embeddings()(hidden) if use_head else hidden
        out.sum().backward()
        return shared.delta.grad.clone()

    both, lookup, head = gradient(True, True), gradient(True, False), gradient(False, True)
    assert lookup.abs().sum() > 0 and head.abs().sum() > 0
    # lookup only: each row's gradient is its count in IDS times the ones of sum()
    counts = torch.tensor([float((IDS == r).sum()) for r in ROWS])
    torch.testing.assert_close(lookup, counts[:, None].expand(-1, 8))
    assert not torch.allclose(both, lookup) and not torch.allclose(both, head)


def test_folding_writes_w_plus_d_and_keeps_the_logits():
    model = tied_micro_model()
    shared = row_delta.attach(model, ROWS)
    with torch.no_grad():
        shared.delta.add_(0.5)
        adapted = model(IDS).logits
    expected_table = shared.table(model.get_input_embeddings().weight)
    row_delta.fold(model)
    assert isinstance(model.get_input_embeddings(), torch.nn.Embedding)
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight  # tied
    assert torch.equal(model.get_input_embeddings().weight, expected_table)
    with torch.no_grad():
        torch.testing.assert_close(model(IDS).logits, adapted, rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="no row delta attached"):
        row_delta.fold(model)


def test_bad_rows_and_untied_models_are_refused():
    from transformers import LlamaConfig, LlamaForCausalLM

    with pytest.raises(ValueError, match="rows must be distinct ids below 12"):
        row_delta.attach(tied_micro_model(), (1, 1))
    untied = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=12,
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            tie_word_embeddings=False,
        )
    )
    with pytest.raises(ValueError, match="tied embedding and head"):
        row_delta.attach(untied)
