"""The accounting calculator against the module's printed figures (exact integer arithmetic
or rounding far from a boundary) and against the models the labs actually load."""

import math

import pytest

from verifiable_grpo.models import accounting as acc
from verifiable_grpo.part3 import quantisation as qz
from verifiable_grpo.part3.smollm2 import records

CASE = acc.CASE_STUDY


def test_case_study_shape_gives_the_module_counts():
    assert CASE.parameters() == 9_550_729_216
    assert CASE.matmul_parameters() == 8_927_875_072
    assert CASE.block_parameters() == 8_305_020_928
    assert CASE.table_parameters() == 2 * 152_064 * 4096


def test_full_fine_tuning_is_16_bytes_per_parameter():
    parts = acc.trained_bytes_per_parameter(acc.TrainingSetup(method="full"))
    assert parts == {"weights": 2, "gradients": 2, "master weights": 4, "optimizer moments": 8}
    states = sum(
        b
        for name, b in acc.memory_rows(CASE, acc.TrainingSetup(method="full"))
        if name.startswith("trained")
    )
    assert states == 16 * 9_550_729_216
    assert f"{states / acc.GB:.3f}" == "152.812"
    assert f"{states / acc.GIB:.3f}" == "142.317"
    # FP32 training without a master copy (Lab 1) is also 16 bytes
    fp32 = acc.TrainingSetup(method="full", weights_dtype="fp32", master_weights=False)
    assert sum(acc.trained_bytes_per_parameter(fp32).values()) == 16


def test_flops_per_token_at_8192():
    full, lora = acc.flops_per_token(CASE, 8192, "full"), acc.flops_per_token(CASE, 8192, "lora")
    assert full == 6 * 8_927_875_072 + 6 * 36 * 8192 * 4096 == 60_815_007_744
    assert lora == 42_959_257_600
    assert f"{full:.2e} {lora:.2e}" == "6.08e+10 4.30e+10"
    assert round(100 * (1 - lora / full)) == 29
    # no other depth gives the printed pair at this width and length
    for layers in (32, 40):
        other = acc.ModelShape("x", 152_064, 4096, layers, 32, 8, 15_360, tied=False)
        assert f"{acc.flops_per_token(other, 8192, 'full'):.2e}" != "6.08e+10"


def test_activation_and_logit_memory():
    setup = acc.TrainingSetup(method="full")
    assert acc.activation_bytes(CASE, setup) == 3_607_101_440
    assert f"{acc.activation_bytes(CASE, setup) / 1e9:.2f}" == "3.61"
    assert acc.logits_bytes(CASE, setup) == 8192 * 152_064 * 4 == 4_982_833_152
    unchecked = acc.TrainingSetup(method="full", checkpointing=False)
    assert (
        acc.activation_bytes(CASE, unchecked) == 36 * acc.layer_activation_values(CASE) * 8192 * 2
    )
    assert acc.logits_bytes(CASE, acc.TrainingSetup(batch=2)) == 2 * 4_982_833_152


def test_lora_counts_and_scales():
    square = acc.ModelShape(
        "square", vocab=8, hidden=4096, layers=1, heads=32, kv_heads=32, ffn=4096, tied=True
    )
    assert acc.lora_parameters(square, 64, ("q_proj",)) == 524_288
    assert 524_288 / 4096**2 == 0.03125
    assert acc.lora_scale(16, 8) == 2.0 and acc.lora_scale(128, 64) == 2.0
    assert acc.lora_scale(16, 64, rank_stabilised=True) == 2.0
    assert acc.lora_scale(16, 4, rank_stabilised=True) == 8.0


def test_smollm2_matches_lab2_record_and_the_loaded_architecture():
    recorded_lora = records.load_recorded("lora")
    shape = acc.smollm2_135m()
    assert shape.parameters() == recorded_lora["base_parameters"] == 134_515_008
    trainable = acc.lora_parameters(shape, 8)
    assert trainable == recorded_lora["trainable"]
    assert shape.parameters() + trainable == recorded_lora["total"]
    assert shape.layers * len(acc.PROJECTIONS) == recorded_lora["wrapped"]
    assert f"{8 * trainable / 1e6:.2f} {8 * shape.parameters() / 1e6:.2f}" == "19.54 1076.12"
    from verifiable_grpo.models.smollm2 import meta_model

    model = meta_model()
    loaded = acc.shape_from_config("loaded", model.config)
    assert loaded.projection_shapes() == shape.projection_shapes()
    assert (loaded.vocab, loaded.layers, loaded.tied) == (shape.vocab, shape.layers, shape.tied)
    assert sum(p.numel() for p in model.parameters()) == shape.parameters()


def test_qwen_matches_the_profile_and_the_core_counter():
    from types import SimpleNamespace

    from verifiable_grpo.core.config import load_config
    from verifiable_grpo.core.model_checks import qwen2_parameter_count

    profile = load_config("qwen")
    assert acc.QWEN2_5_0_5B.parameters() == profile["model"]["expected_unique_parameters"]
    config = SimpleNamespace(
        vocab_size=151_936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        tie_word_embeddings=True,
        model_type="qwen2",
    )
    assert acc.shape_from_config("q", config).parameters() == qwen2_parameter_count(config)


def test_qlora_bits_levels_and_round_trip():
    assert qz.bits_per_weight(4, 64, 8, 256, 32) == 4 + 8 / 64 + 32 / (64 * 256) == 4.126953125
    assert f"{qz.bits_per_weight(4, 64, 8, 256, 32):.3f}" == "4.127"
    assert qz.bits_per_weight(4, 64, 32) == 4.5 and qz.bits_per_weight(4, 128, 16) == 4.125
    published = [
        -1.0,
        -0.6961928009986877,
        -0.5250730514526367,
        -0.39491748809814453,
        -0.28444138169288635,
        -0.18477343022823334,
        -0.09105003625154495,
        0.0,
        0.07958029955625534,
        0.16093020141124725,
        0.24611230194568634,
        0.33791524171829224,
        0.44070982933044434,
        0.5626170039176941,
        0.7229568362236023,
        1.0,
    ]
    assert qz.nf4_levels() == pytest.approx(published, abs=1e-6)
    trip = qz.round_trip([-0.027, 0.031, 0.010], qz.nf4_levels())
    assert trip["scale"] == 0.031 and f"{trip['normalised'][0]:.3f}" == "-0.871"
    assert trip["levels"][0] == -1.0 and trip["reconstructed"][0] == pytest.approx(-0.031)
    uniform = qz.round_trip([-0.027, 0.031, 0.010], qz.uniform_levels(4))
    assert abs(uniform["reconstructed"][0] + 0.027) < abs(trip["reconstructed"][0] + 0.027)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: acc.ModelShape("m", -1, 64, 2, 4, 4, 128, True),
            "vocab must be a positive integer",
        ),
        (lambda: acc.ModelShape("m", 10, 64, 2, 4, 3, 128, True), "multiple of kv_heads"),
        (lambda: acc.TrainingSetup(weights_dtype="fp12"), "unknown dtype for weights_dtype 'fp12'"),
        (lambda: acc.TrainingSetup(method="prefix"), "unknown method 'prefix'"),
        (
            lambda: acc.TrainingSetup(sequence_length=0),
            "sequence_length must be a positive integer",
        ),
        (
            lambda: acc.lora_parameters(acc.smollm2_135m(), 256),
            "LoRA rank 256 exceeds the width 192 of k_proj",
        ),
        (lambda: acc.lora_parameters(acc.smollm2_135m(), 8, ("qkv",)), "unknown LoRA target 'qkv'"),
        (lambda: acc.lora_scale(-1, 8), "alpha must be positive"),
        (lambda: qz.bits_per_weight(4, 0), "block must be a positive integer"),
        (lambda: qz.round_trip([], qz.nf4_levels()), "non-empty"),
    ],
)
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_summary_and_table_units():
    setup = acc.TrainingSetup(method="qlora")
    rows = acc.memory_table(CASE, setup)
    assert rows[-1]["component"] == "total"
    assert math.isclose(rows[-1]["GB"] * 1e9, rows[-1]["GiB"] * 2**30)
    info = acc.summary(CASE, setup)
    assert info["trained"] == acc.lora_parameters(CASE, 64)
    assert info["trained_fraction"] == 195_821_568 / 9_550_729_216
