"""LoRA from scratch: exact zero-init equality, merge, counts, errors, and parity with peft."""

import copy

import pytest
import torch
from torch import nn

from verifiable_grpo.core.model_checks import is_adapter_parameter
from verifiable_grpo.training import lora


def micro_llama(seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    return LlamaForCausalLM(config).double().eval()


IDS = torch.tensor([[3, 14, 15, 9, 26, 5, 35, 8], [9, 7, 9, 3, 2, 38, 4, 6]])


def test_fresh_adapters_leave_the_function_exactly_unchanged():
    model = micro_llama()
    before = model(IDS).logits
    names = lora.attach_lora(model, rank=4, alpha=8)
    assert len(names) == 2 * 7
    assert torch.equal(model(IDS).logits, before)


def test_counts_match_a_hand_count_and_only_adapters_train():
    model = micro_llama()
    total_before = lora.parameter_counts(model)["total"]
    lora.attach_lora(model, rank=4, alpha=8)
    # per layer: q 32->32, k 32->16, v 32->16, o 32->32, gate 32->48, up 32->48, down 48->32
    per_layer = 4 * ((32 + 32) + (32 + 16) + (32 + 16) + (32 + 32) + (32 + 48) * 2 + (48 + 32))
    counts = lora.parameter_counts(model)
    assert lora.lora_parameter_count(model) == counts["trainable"] == 2 * per_layer == 3712
    assert counts["total"] == total_before + 3712
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(is_adapter_parameter(n) for n in trainable)
    assert not any(
        is_adapter_parameter(n) for n, p in model.named_parameters() if not p.requires_grad
    )


def test_merge_folds_the_update_into_plain_linears():
    model = micro_llama()
    total_before = lora.parameter_counts(model)["total"]
    lora.attach_lora(model, rank=4, alpha=8, targets=("q_proj", "down_proj"))
    torch.manual_seed(1)
    for _, module in lora.lora_modules(model):
        nn.init.normal_(module.lora_B, std=0.1)
    adapted = model(IDS).logits
    merged = lora.merge_lora(model)
    assert len(merged) == 4 and not lora.lora_modules(model)
    assert lora.parameter_counts(model)["total"] == total_before
    assert type(model.model.layers[0].self_attn.q_proj) is nn.Linear
    assert not torch.equal(model(IDS).logits, micro_llama()(IDS).logits)  # the update is kept
    torch.testing.assert_close(model(IDS).logits, adapted, rtol=0, atol=1e-12)


def test_scaling_is_alpha_over_rank_in_float64():
    base = nn.Linear(3, 2, bias=True).double()
    wrapped = lora.LoRALinear(base, rank=1, alpha=3.0)
    with torch.no_grad():
        wrapped.lora_A.copy_(torch.tensor([[1.0, 0.0, 2.0]]))
        wrapped.lora_B.copy_(torch.tensor([[0.5], [-1.0]]))
    x = torch.tensor([[1.0, 1.0, 1.0]], dtype=torch.float64)
    # A x = 3; B A x = (1.5, -3); scale 3 -> (4.5, -9)
    expected = base(x) + torch.tensor([[4.5, -9.0]], dtype=torch.float64)
    assert torch.equal(wrapped(x), expected)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(rank=0, alpha=8), "positive integer"),
        (dict(rank=99, alpha=8), "exceeds min"),
        (dict(rank=4, alpha=0), "alpha must be positive"),
        (dict(rank=4, alpha=8, dropout=1.0), "dropout"),
        (dict(rank=4, alpha=8, targets=("qproj",)), "named"),
    ],
)
def test_bad_settings_are_refused_with_the_reason(kwargs, message):
    with pytest.raises(ValueError, match=message):
        lora.attach_lora(micro_llama(), **kwargs)


def test_wrapping_twice_or_merging_nothing_is_refused():
    model = micro_llama()
    with pytest.raises(ValueError, match="no LoRA wrappers"):
        lora.merge_lora(model)
    lora.attach_lora(model, rank=2, alpha=4)
    with pytest.raises(ValueError, match="already holds"):
        lora.attach_lora(model, rank=2, alpha=4)


def test_same_outputs_and_gradients_as_peft_on_the_same_weights():
    peft = pytest.importorskip("peft")
    base = micro_llama()
    ours, theirs = copy.deepcopy(base), copy.deepcopy(base)
    lora.attach_lora(ours, rank=4, alpha=16)
    theirs = peft.get_peft_model(
        theirs,
        peft.LoraConfig(
            r=4, lora_alpha=16, lora_dropout=0.0, target_modules=list(lora.BLOCK_PROJECTIONS)
        ),
    )
    theirs.eval()
    torch.manual_seed(2)
    pairs = []
    for name, module in lora.lora_modules(ours):
        peer = theirs.base_model.model.get_submodule(name)
        with torch.no_grad():  # non-zero B so the gradient of A is not trivially zero
            nn.init.normal_(module.lora_B, std=0.2)
            peer.lora_A["default"].weight.copy_(module.lora_A)
            peer.lora_B["default"].weight.copy_(module.lora_B)
        pairs.append((module, peer))
    labels = IDS.clone()
    out_ours, out_theirs = ours(IDS, labels=labels), theirs(input_ids=IDS, labels=labels)
    torch.testing.assert_close(out_ours.logits, out_theirs.logits, rtol=0, atol=1e-12)
    out_ours.loss.backward()
    out_theirs.loss.backward()
    assert len(pairs) == 14
    for module, peer in pairs:
        torch.testing.assert_close(
            module.lora_A.grad, peer.lora_A["default"].weight.grad, rtol=0, atol=1e-12
        )
        torch.testing.assert_close(
            module.lora_B.grad, peer.lora_B["default"].weight.grad, rtol=0, atol=1e-12
        )
    assert lora.parameter_counts(ours)["trainable"] == sum(
        p.numel() for p in theirs.parameters() if p.requires_grad
    )
    merged = theirs.merge_and_unload()
    lora.merge_lora(ours)
    torch.testing.assert_close(ours(IDS).logits, merged(IDS).logits, rtol=0, atol=1e-12)
