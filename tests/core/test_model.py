"""Loading, architecture checks, strict safetensors round trips, weight digests."""

from __future__ import annotations

import json
import struct

import pytest
import torch

from shared_helpers import TINY_BASE, tiny_base_has_weights
from verifiable_grpo.core import model as M
from verifiable_grpo.core.config import ConfigError, load_config

QWEN_PARAMETERS = 494_032_768


def qwen_standin(**changes):
    """Qwen2.5-0.5B-Instruct's architecture on the meta device: shapes, no weights."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    shape = dict(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        vocab_size=151936,
        max_position_embeddings=32768,
        rope_theta=1e6,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        attn_implementation="eager",
    )
    shape.update(changes)
    with torch.device("meta"):
        return Qwen2ForCausalLM(Qwen2Config(**shape))


@pytest.fixture(scope="module")
def qwen_config():
    return load_config("qwen")


# ------------------------------------------------------------------ the qwen stand-in
def test_qwen_standin_passes_the_qwen_checks(qwen_config):
    standin = qwen_standin()
    report = M.check_architecture(standin, qwen_config)
    assert report["unique_parameters"] == QWEN_PARAMETERS
    assert report["tied_embeddings"] is True
    assert M.qwen2_parameter_count(standin.config) == QWEN_PARAMETERS


def test_untied_standin_fails_with_a_clear_message(qwen_config):
    with pytest.raises(ValueError, match="embeddings not tied") as err:
        M.check_architecture(qwen_standin(tie_word_embeddings=False), qwen_config)
    # the untied head adds vocab x hidden parameters: the count check fires too
    assert f"{QWEN_PARAMETERS + 151936 * 896:,} unique parameters" in str(err.value)


def test_wrong_size_standin_fails(qwen_config):
    with pytest.raises(ValueError, match=r"unique parameters, expected 494,032,768"):
        M.check_architecture(qwen_standin(num_hidden_layers=23), qwen_config)


def test_non_fp32_frozen_or_sdpa_models_fail(qwen_config):
    half = qwen_standin().to(torch.bfloat16)
    with pytest.raises(ValueError, match="dtypes.*bfloat16"):
        M.check_architecture(half, qwen_config)
    frozen = qwen_standin()
    frozen.model.norm.weight.requires_grad_(False)
    with pytest.raises(ValueError, match="1 parameter tensors do not require gradients"):
        M.check_architecture(frozen, qwen_config)
    with pytest.raises(ValueError, match="attention implementation 'sdpa'"):
        M.check_architecture(qwen_standin(attn_implementation="sdpa"), qwen_config)


def test_another_architecture_fails(qwen_config):
    class NotQwen(torch.nn.Module):
        config = qwen_standin().config

        def get_input_embeddings(self):
            return torch.nn.Embedding(2, 2)

        get_output_embeddings = get_input_embeddings

    with pytest.raises(ValueError, match="architecture is NotQwen"):
        M.check_architecture(NotQwen(), qwen_config)


# ------------------------------------------------------------------ real (small) models
def small_models():
    yield pytest.param("random", id="micro-random")
    yield pytest.param(
        "local",
        id="tiny-base",
        marks=pytest.mark.skipif(
            not tiny_base_has_weights(), reason="data/tiny-base has no trained weights yet"
        ),
    )


@pytest.mark.parametrize("source", small_models())
def test_small_models_pass_the_same_checks(source, smoke_config):
    smoke_config = smoke_config.replaced(model={"source": source})
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    model, tokenizer = M.load_base(smoke_config)
    assert torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 is False
    report = M.check_architecture(model, smoke_config)
    assert report["unique_parameters"] == M.qwen2_parameter_count(model.config)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert not model.training
    assert all(p.requires_grad and p.dtype == torch.float32 for p in model.parameters())
    assert model.config.vocab_size >= len(tokenizer)


def test_random_model_is_seeded_and_leaves_global_rng_alone(random_config):
    torch.manual_seed(7)
    expected_next = torch.rand(3)
    torch.manual_seed(7)
    first, _ = M.load_base(random_config)
    assert torch.equal(torch.rand(3), expected_next)
    second, _ = M.load_base(random_config)
    assert M.model_digest(first) == M.model_digest(second)
    seed = random_config.model.random_init.seed + 1
    third, _ = M.load_base(random_config.replaced(model={"random_init": {"seed": seed}}))
    assert M.model_digest(third) != M.model_digest(first)


def test_micro_model_shape_comes_from_the_config(random_config, tokenizer):
    model, _ = M.load_base(random_config)
    shape = random_config["model"]["random_init"]
    assert model.config.hidden_size == shape["hidden_size"]
    assert model.config.num_key_value_heads == shape["num_key_value_heads"]
    assert model.config.vocab_size == len(tokenizer)
    h, f, v = 32, 64, len(tokenizer)  # hand count for the micro shape (head_dim 16, 1 KV head)
    per_layer = (h * h + h) + 2 * (h * 16 + 16) + h * h + 3 * h * f + 2 * h
    assert M.qwen2_parameter_count(model.config) == v * h + 2 * per_layer + h


# ------------------------------------------------------------------ unavailable weights
def test_hub_failure_is_one_clear_error(monkeypatch, qwen_config):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def offline(*args, **kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co'")

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", offline)
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", offline)
    config = qwen_config.replaced(device="cpu")
    with pytest.raises(M.ModelUnavailableError, match="Colab with a GPU") as err:
        M.load_base(config)
    text = str(err.value)
    assert "model.path" in text and "7ae557604adf67be50417f59c2c2f167def9a775" in text
    assert "couldn't connect" in text


def test_missing_local_snapshot_is_a_clear_error(qwen_config, tmp_path):
    config = qwen_config.replaced(device="cpu", model={"path": str(tmp_path / "no-such-snapshot")})
    with pytest.raises(M.ModelUnavailableError, match="does not exist.*model.path"):
        M.load_base(config)


def test_local_source_without_weights_is_a_clear_error(smoke_config, tmp_path):
    (tmp_path / "tokenizer.json").write_bytes((TINY_BASE / "tokenizer.json").read_bytes())
    (tmp_path / "tokenizer_config.json").write_bytes(
        (TINY_BASE / "tokenizer_config.json").read_bytes()
    )
    config = smoke_config.replaced(model={"source": "local", "path": str(tmp_path)})
    with pytest.raises(M.ModelUnavailableError, match="no model weights.*build-tiny-base"):
        M.load_base(config)


def test_cuda_device_without_gpu_is_refused(random_config):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        M.load_base(random_config.replaced(device="cuda"))


# ------------------------------------------------------------------ save / reload
def test_save_and_strict_reload_round_trip(micro_model, random_config, tmp_path):
    model, _ = micro_model
    path = tmp_path / "policy.safetensors"
    meta = {"identity": {"branch": "warmstart", "step": 3}, "note": "test"}
    sha = M.save_policy(model, path, meta)
    assert len(sha) == 64
    reloaded, metadata = M.reload_policy(path, random_config)
    assert metadata["identity"] == meta["identity"] and metadata["note"] == "test"
    assert metadata["model_digest"] == M.model_digest(model) == M.model_digest(reloaded)
    assert M.parameter_manifest(reloaded) == M.parameter_manifest(model)
    assert reloaded.lm_head.weight is reloaded.model.embed_tokens.weight
    assert not reloaded.training
    ids = torch.tensor([[1, 5, 9, 2]])
    with torch.no_grad():
        assert torch.equal(model(ids).logits, reloaded(ids).logits)
    with pytest.raises(FileExistsError, match="never overwritten"):
        M.save_policy(model, path, meta)


def _header_length(path) -> int:
    return struct.unpack("<Q", path.read_bytes()[:8])[0]


def test_tampered_weights_are_refused(micro_model, random_config, tmp_path):
    model, _ = micro_model
    path = tmp_path / "policy.safetensors"
    M.save_policy(model, path, {})
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # one bit of one float in the tensor data
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="do not match their recorded digest"):
        M.reload_policy(path, random_config)


def test_strict_reload_refuses_missing_or_extra_tensors(micro_model, random_config, tmp_path):
    from safetensors import safe_open
    from safetensors.torch import save_file

    model, _ = micro_model
    good = tmp_path / "good.safetensors"
    M.save_policy(model, good, {})
    with safe_open(str(good), framework="pt") as handle:
        header = handle.metadata()
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}
    extra = dict(tensors, **{"model.extra.weight": torch.zeros(2)})
    save_file(extra, str(tmp_path / "extra.safetensors"), metadata=header)
    with pytest.raises(ValueError, match=r"unexpected tensors \['model.extra.weight'\]"):
        M.reload_policy(tmp_path / "extra.safetensors", random_config)
    missing = {k: v for k, v in tensors.items() if k != "model.norm.weight"}
    save_file(missing, str(tmp_path / "missing.safetensors"), metadata=header)
    with pytest.raises(ValueError, match=r"missing tensors \['model.norm.weight'\]"):
        M.reload_policy(tmp_path / "missing.safetensors", random_config)
    save_file(tensors, str(tmp_path / "foreign.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="not a policy written by save_policy"):
        M.reload_policy(tmp_path / "foreign.safetensors", random_config)


def test_manifest_shows_which_weights_changed(micro_model):
    model, _ = micro_model
    before = M.parameter_manifest(model)
    assert "lm_head.weight" not in before  # tied: listed once, as the embedding
    assert M.model_digest(model) == M.manifest_digest(before)
    with torch.no_grad():
        model.model.norm.weight[0] += 1e-7 * model.model.norm.weight[0]  # one ulp-scale nudge
    after = M.parameter_manifest(model)
    assert [n for n in before if before[n] != after[n]] == ["model.norm.weight"]
    assert M.manifest_digest(after) != M.manifest_digest(before)
    assert M.state_dict_digest(model.state_dict()) == M.manifest_digest(after)


def test_tensor_hash_distinguishes_signed_zero_and_dtype():
    assert M.tensor_sha256(torch.tensor([0.0])) != M.tensor_sha256(torch.tensor([-0.0]))
    assert M.tensor_sha256(torch.tensor([1.0])) != M.tensor_sha256(
        torch.tensor([1.0], dtype=torch.float64)
    )
    assert M.tensor_sha256(torch.zeros(2, 3)) != M.tensor_sha256(torch.zeros(3, 2))


# ------------------------------------------------------------------ architectures beyond Qwen2
SMOLLM2_PARAMETERS = 134_515_008


def llama_config(config):
    """The same profile declaring a Llama (micro random shape of model.random_init)."""
    return config.replaced(model={"architecture": "LlamaForCausalLM"})


def smollm2_standin():
    """SmolLM2-135M's shape (a tied Llama) on the meta device: shapes, no weights."""
    from transformers import LlamaConfig, LlamaForCausalLM

    shape = LlamaConfig(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
        tie_word_embeddings=True,
        attn_implementation="eager",
    )
    with torch.device("meta"):
        return LlamaForCausalLM(shape)


def test_micro_llama_loads_and_passes_the_checks(random_config, tokenizer):
    random_config = llama_config(random_config)
    model, _ = M.load_base(random_config)
    assert type(model).__name__ == "LlamaForCausalLM"
    report = M.check_architecture(model, random_config, tokenizer)
    assert report["architecture"] == "LlamaForCausalLM" and report["tied_embeddings"]
    h, f, v = 32, 64, len(tokenizer)  # no attention biases in a Llama
    per_layer = h * h + 2 * h * 16 + h * h + 3 * h * f + 2 * h
    assert report["unique_parameters"] == v * h + 2 * per_layer + h
    assert report["unique_parameters"] == report["trainable_parameters"]
    # a Qwen2 profile refuses the Llama, and the other way round
    random_config = random_config.replaced(model={"architecture": "Qwen2ForCausalLM"})
    with pytest.raises(
        ValueError, match="architecture is LlamaForCausalLM, expected Qwen2ForCausalLM"
    ):
        M.check_architecture(model, random_config)


def test_smollm2_standin_has_the_published_count(smoke_config):
    config = llama_config(smoke_config).replaced(
        model={"expected_unique_parameters": SMOLLM2_PARAMETERS}
    )
    report = M.check_architecture(smollm2_standin(), config)
    assert report["unique_parameters"] == SMOLLM2_PARAMETERS
    spec = M.architecture_spec("LlamaForCausalLM")
    assert M.decoder_parameter_count(smollm2_standin().config, spec) == SMOLLM2_PARAMETERS


def test_untied_model_is_refused_when_ties_are_declared_and_the_reverse(random_config):
    model, _ = M.load_base(random_config)
    random_config = random_config.replaced(model={"tie_word_embeddings": False})
    with pytest.raises(
        ValueError, match="embeddings are tied, but model.tie_word_embeddings is false"
    ):
        M.check_architecture(model, random_config)


def test_tokenizer_larger_than_the_vocabulary_is_refused(random_config, tokenizer):
    model, _ = M.load_base(random_config)

    class Bigger:
        def __len__(self):
            return len(tokenizer) + 1

    with pytest.raises(ValueError, match="tokenizer has .* tokens but the model's vocabulary"):
        M.check_architecture(model, random_config, Bigger())


def test_unknown_architecture_is_a_clear_error(random_config):
    with pytest.raises(
        ValueError,
        match="unknown model architecture 'GPT2LMHeadModel'.*Qwen2ForCausalLM, LlamaForCausalLM",
    ):
        M.architecture_spec("GPT2LMHeadModel")
    with pytest.raises(  # a profile naming it is refused when it is made, before any load
        ConfigError,
        match="model.architecture: must be one of Qwen2ForCausalLM, "
        "LlamaForCausalLM, got 'GPT2LMHeadModel'",
    ):
        random_config.replaced(model={"architecture": "GPT2LMHeadModel"})


# ------------------------------------------------------------------ trainability
def attach_adapter(model):
    """A stand-in LoRA factor on one projection: named like peft's, outside the forward."""
    projection = model.model.layers[0].self_attn.q_proj
    projection.lora_A = torch.nn.Linear(projection.in_features, 2, bias=False)
    projection.lora_B = torch.nn.Linear(2, projection.out_features, bias=False)
    return model


def test_frozen_tensor_is_named_and_refused_in_a_full_fine_tune(micro_model, random_config):
    model, _ = micro_model
    model.model.layers[1].mlp.up_proj.weight.requires_grad_(False)
    with pytest.raises(
        ValueError,
        match=r"1 parameter tensors do not require gradients "
        r"\(model.layers.1.mlp.up_proj.weight\).*trainable: adapters",
    ):
        M.check_architecture(model, random_config)


def test_adapters_may_train_over_a_frozen_base(micro_model, random_config):
    model, _ = micro_model
    base_count = M.check_architecture(model, random_config)["unique_parameters"]
    attach_adapter(model)
    for name, parameter in model.named_parameters():
        parameter.requires_grad_("lora_" in name)
    with pytest.raises(ValueError, match="adapter tensors .*lora_A.weight.* in a full fine-tune"):
        M.check_architecture(model, random_config)
    report = M.check_architecture(model, random_config, trainable="adapters")
    assert report["unique_parameters"] == base_count  # the declared size is the base's
    adapter = 32 * 2 + 2 * 32
    assert report["adapter_parameters"] == report["trainable_parameters"] == adapter
    # what the optimizer gets: the trainable tensors only, each once
    assert sum(p.numel() for p in M.unique_parameters(model)) == adapter
    assert len(M.all_unique_parameters(model)) == len(M.unique_parameters(model)) + len(
        [p for p in model.parameters() if not p.requires_grad]
    )
    model.model.layers[0].self_attn.q_proj.lora_B.weight.requires_grad_(False)
    with pytest.raises(ValueError, match="1 adapter tensors do not require gradients.*lora_B"):
        M.check_architecture(model, random_config, trainable="adapters")


def test_adapters_profile_loads_a_frozen_base_and_wants_adapters(random_config):
    random_config = random_config.replaced(model={"trainable": "adapters"})
    model, _ = M.load_base(random_config)
    assert not any(p.requires_grad for p in model.parameters())
    assert M.unique_parameters(model) == []
    with pytest.raises(ValueError, match="no adapter tensors.*attach the adapters"):
        M.check_architecture(model, random_config)
    attach_adapter(model)
    assert M.check_architecture(model, random_config)["trainable"] == "adapters"


def test_a_model_with_adapters_is_not_saved_as_a_policy(micro_model, tmp_path):
    model, _ = micro_model
    attach_adapter(model)
    with pytest.raises(ValueError, match="adapter tensors.*merge them"):
        M.save_policy(model, tmp_path / "p.safetensors", {})
    assert not (tmp_path / "p.safetensors").exists()


# ------------------------------------------------------------------ a policy records its architecture
def test_saved_llama_reloads_as_llama_bit_for_bit(random_config, tmp_path):
    config = llama_config(random_config)
    model, _ = M.load_base(config)
    path = tmp_path / "llama.safetensors"
    M.save_policy(model, path, {})
    recorded = M.read_policy_metadata(path)["model_config"]
    assert recorded["architectures"] == ["LlamaForCausalLM"] and recorded["model_type"] == "llama"
    reloaded, _ = M.reload_policy(path, config)
    assert type(reloaded) is type(model)
    assert M.architecture_json(reloaded) == M.architecture_json(model)
    ids = torch.tensor([[1, 5, 9, 2, 7, 3]])
    with torch.no_grad():
        assert torch.equal(model(ids).logits, reloaded(ids).logits)
    # the Qwen2 profile refuses to take it as its policy
    qwen2 = random_config.replaced(model={"architecture": "Qwen2ForCausalLM"})
    with pytest.raises(
        ValueError, match="architecture is LlamaForCausalLM, expected Qwen2ForCausalLM"
    ):
        M.reload_policy(path, qwen2)


def test_micro_qwen2_records_its_class(micro_model, tmp_path):
    model, _ = micro_model
    assert model.config.architectures is None  # built from a bare config
    M.save_policy(model, tmp_path / "p.safetensors", {})
    recorded = M.read_policy_metadata(tmp_path / "p.safetensors")["model_config"]
    assert recorded["architectures"] == ["Qwen2ForCausalLM"] and recorded["model_type"] == "qwen2"
    assert model.config.architectures is None  # recorded on a copy, the live model untouched


def _rewrite_header(source, target, **changes):
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(source), framework="pt") as handle:
        header = dict(handle.metadata())
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}
    header.update(changes)
    save_file(tensors, str(target), metadata=header)


def test_edited_architecture_is_refused(micro_model, random_config, tmp_path):
    model, _ = micro_model
    good = tmp_path / "good.safetensors"
    M.save_policy(model, good, {})
    edited = M.read_policy_metadata(good)["model_config"]
    edited["rope_parameters"]["rope_theta"] = 5e5
    _rewrite_header(good, tmp_path / "edited.safetensors", model_config=json.dumps(edited))
    with pytest.raises(ValueError, match="architecture in its metadata does not match its digest"):
        M.reload_policy(tmp_path / "edited.safetensors", random_config)


def test_unknown_recorded_architecture_is_a_clear_error(micro_model, random_config, tmp_path):
    import hashlib

    model, _ = micro_model
    good = tmp_path / "good.safetensors"
    M.save_policy(model, good, {})
    recorded = M.read_policy_metadata(good)["model_config"]
    recorded["architectures"] = ["GPT2LMHeadModel"]
    text = json.dumps(recorded)  # with a matching digest: only the name is unknown
    _rewrite_header(
        good,
        tmp_path / "gpt2.safetensors",
        model_config=text,
        architecture_sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
    with pytest.raises(ValueError, match="unknown model architecture 'GPT2LMHeadModel'"):
        M.reload_policy(tmp_path / "gpt2.safetensors", random_config)


def test_legacy_v1_policy_loads_only_with_its_sha256(micro_model, random_config, tmp_path):
    from verifiable_grpo.core.config import sha256_file

    model, _ = micro_model
    good = tmp_path / "good.safetensors"
    M.save_policy(model, good, {})
    legacy = tmp_path / "v1.safetensors"
    _rewrite_header(good, legacy, format="verifiable-grpo-policy-v1")
    with pytest.raises(ValueError, match="carries no digest.*expected_sha256"):
        M.reload_policy(legacy, random_config)
    reloaded, metadata = M.reload_policy(legacy, random_config, sha256_file(legacy))
    assert metadata["format"] == "verifiable-grpo-policy-v1"
    assert M.model_digest(reloaded) == M.model_digest(model)
