"""The card's cost model is pure integer arithmetic on Qwen3-8B's published shape, so its
counts are pinned exactly (the same bits on any CPU); bad input is refused by name."""

from __future__ import annotations

import pytest

from verifiable_grpo.part2 import card_cost as cc

V, D, L, F, KV_WIDTH = 151_936, 4096, 36, 12_288, 8 * 128
PROMPT, COMPLETION = 160, 1024  # the default assumptions


def test_qwen3_8b_has_its_published_parameter_count():
    per_layer = 2 * D * D + 2 * D * KV_WIDTH + 3 * D * F + 2 * D + 2 * 128
    assert cc.parameters() == 2 * V * D + L * per_layer + D == 8_190_735_360


def test_lora_all_linear_rank_16_and_the_kv_cache_per_token():
    widths = (D + D) + 2 * (D + KV_WIDTH) + (D + D) + 2 * (D + F) + (F + D)
    assert cc.lora_parameters(cc.Plan()) == L * 16 * widths == 43_646_976
    assert cc.kv_bytes_per_token() == 2 * L * KV_WIDTH * 2 == 147_456


def test_token_counts_of_a_run_and_of_the_study():
    count = cc.tokens(cc.Plan())
    assert count["run"] == {
        "completions": 480,
        "generated": 491_520,
        "generated_at_cap": 491_520,
        "scored": 480 * (PROMPT + COMPLETION),
        "heldout_generated": 500 * COMPLETION,
    }
    assert count["study"]["completions"] == 40 * 480
    shorter = cc.tokens(cc.Plan(), cc.Assumptions(completion_tokens=300))["run"]
    assert shorter["generated"] == 480 * 300 and shorter["generated_at_cap"] == 491_520


def test_flops_follow_the_stated_conventions():
    matmul = cc.QWEN3_8B.parameters() - V * D  # accounting's N - V·d
    flops = cc.flops(cc.Plan())
    sequence, decode_context = PROMPT + COMPLETION, PROMPT + COMPLETION // 2
    # LoRA 4N + attention 6LTd, plus the checkpointing recompute 2N + 2LTd
    assert flops["training"] == 480 * sequence * float(6 * matmul + 8 * L * sequence * D)
    assert flops["generation"] == 491_520 * float(2 * matmul + 2 * L * decode_context * D)
    full = cc.flops(cc.Plan(method="full"))["training"]
    assert full == 480 * sequence * float(8 * matmul + 8 * L * sequence * D)
    assert flops["total"] == flops["generation"] + flops["training"] + flops["heldout"]


def test_memory_rows_and_which_gpu_classes_fit():
    rows = dict(cc.memory_rows(cc.Plan()))
    assert rows["weights, bf16 (frozen base)"] == 8_190_735_360 * 2
    assert rows["trained state (lora: weights, grads, AdamW)"] == 43_646_976 * 16
    assert rows[f"KV cache (16 x {PROMPT + COMPLETION} tokens)"] == 16 * 1184 * 147_456
    fits = {row["gpu"]: row["fits"] for row in cc.gpu_table()}
    assert fits == {
        "A100-40GB": True,
        "A100-80GB": True,
        "H100-80GB": True,
        "L4-24GB": True,
        "T4-16GB": False,
    }
    full_peak = cc.memory_rows(cc.Plan(method="full"))[-1][1]
    assert full_peak > 80e9  # 16 bytes per parameter: no single GPU listed
    assert not any(row["fits"] for row in cc.gpu_table(cc.Plan(method="full")))


def test_wall_time_orders_the_gpu_classes_and_scales_with_the_study():
    hours = {row["gpu"]: row["hours_per_run"] for row in cc.gpu_table()}
    assert hours["H100-80GB"] < hours["A100-80GB"] < hours["A100-40GB"] < hours["L4-24GB"]
    assert hours["T4-16GB"] is None
    row = cc.gpu_table()[0]
    assert row["hours_per_study"] == row["hours_per_run"] * 40


def test_the_card_beside_ours_agrees_on_what_both_state():
    for name, card, ours in cc.card_beside_ours():
        if card is not None and ours is not None:
            assert card == ours, name


@pytest.mark.parametrize(
    "make, named",
    [
        (lambda: cc.Plan(steps=-30), "plan.steps must be positive, got -30"),
        (lambda: cc.Plan(heldout_problems=0), "plan.heldout_problems must be positive"),
        (lambda: cc.Plan(seeds=2.5), "plan.seeds must be a whole number"),
        (lambda: cc.Plan(method="qlora"), "plan.method must be one of lora, full"),
        (lambda: cc.Assumptions(prompt_tokens=-1), "assumptions.prompt_tokens must be positive"),
        (
            lambda: cc.Assumptions(compute_efficiency=1.5),
            "assumptions.compute_efficiency is a share",
        ),
        (lambda: cc.gpu_class("V100"), "unknown GPU class 'V100'; known: A100-40GB, A100-80GB"),
        (lambda: cc.seconds(cc.Plan(), "a100"), "unknown GPU class 'a100'"),
    ],
)
def test_bad_input_is_refused_in_one_line_naming_the_key(make, named):
    with pytest.raises(ValueError) as refused:
        make()
    assert named in str(refused.value) and "\n" not in str(refused.value)


def test_the_version_table_states_the_installed_trl_defaults():
    from verifiable_grpo.part2.trl import versions as trl_versions

    installed = trl_versions.installed_defaults()
    assert len(installed) == len(trl_versions.INSTALLED_KEYS)
    for knob, _old, new, *_ in trl_versions.DIFFERENCES:
        if knob in installed:
            assert installed[knob] == new, knob


def test_the_kv_cache_exercise_accepts_the_formula_and_names_the_usual_mistakes():
    from verifiable_grpo.exercises import kv_cache

    assert kv_cache.check_kv_cache(kv_cache.kv_cache_bytes, verbose=False).passed
    assert kv_cache.kv_cache_bytes(36, 32, 8, 128, 1, 1) == cc.kv_bytes_per_token()
    wrong = {
        kv_cache.ONLY_ONE: lambda layers, h, k, d, s, t: layers * k * d * 2 * s * t,
        kv_cache.QUERY_HEADS: lambda layers, h, k, d, s, t: 2 * layers * h * d * 2 * s * t,
        kv_cache.FOUR_BYTES: lambda layers, h, k, d, s, t: 2 * layers * k * d * 4 * s * t,
    }
    for hint, fn in wrong.items():
        result = kv_cache.check_kv_cache(fn, verbose=False)
        assert not result.passed and any(hint in line for line in result.failures), hint


def test_gpu_memory_is_what_the_driver_reports():
    assert cc.gpu_class("A100-40GB")["memory_gb"] == 40_960 * 2**20 / 1e9
    with pytest.raises(ValueError, match="assumptions.prompt_tokens must be a whole number"):
        cc.Assumptions(prompt_tokens=160.0)
