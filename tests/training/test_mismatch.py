"""Mismatch measurement and the TIS/MIS corrections (training/mismatch.py)."""

import math

import pytest
import torch

from verifiable_grpo.training import mismatch as mm

PAD = 6


def test_token_truncate_clamps_each_token_ratio():
    train = torch.tensor([[math.log(4.0), 0.0, 0.0]], dtype=torch.float64)
    sample = torch.tensor([[0.0, math.log(2.0), 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])
    weights = mm.importance_weights(train, sample, mask, "token_truncate", clip_max=3.0)
    assert weights.tolist() == [[3.0, 0.5, 0.0]]


def test_token_mask_zeroes_tokens_outside_the_interval():
    train = torch.tensor([[math.log(4.0), 0.0, math.log(0.25)]], dtype=torch.float64)
    sample = torch.zeros_like(train)
    mask = torch.ones_like(train, dtype=torch.bool)
    weights = mm.importance_weights(train, sample, mask, "token_mask", 3.0, 1 / 3)
    assert weights.tolist() == [[0.0, 1.0, 0.0]]
    # TRL's default lower bound is None: only ratios above the cap are masked
    assert mm.importance_weights(train, sample, mask, "token_mask").tolist() == [[0.0, 1.0, 0.25]]


def test_sequence_modes_share_the_product_of_token_ratios():
    train = torch.tensor(
        [[math.log(2.0), math.log(2.0)], [math.log(2.0), 5.0]], dtype=torch.float64
    )
    sample = torch.zeros_like(train)
    mask = torch.tensor([[True, True], [True, False]])
    truncated = mm.importance_weights(train, sample, mask, "sequence_truncate", clip_max=3.0)
    assert truncated.tolist() == [[3.0, 3.0], [2.0, 0.0]]
    masked = mm.importance_weights(train, sample, mask, "sequence_mask", clip_max=3.0)
    assert masked[0].tolist() == [0.0, 0.0]
    assert masked[1].tolist() == pytest.approx([2.0, 0.0], abs=1e-12)


def test_unknown_mode_is_refused():
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="mode"):
        mm.importance_weights(x, x, x.bool(), "token_clip")


def _micro(attn="eager"):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=7,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
        tie_word_embeddings=False,
        attn_implementation=attn,
        eos_token_id=PAD,
        pad_token_id=PAD,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        model = Qwen2ForCausalLM(config)
    return model.eval()


def _rows(model):
    """Responses drawn token by token with a KV cache, their log-probs captured."""
    from transformers import DynamicCache

    generator = torch.Generator().manual_seed(0)
    rows = []
    for prompt in ([1, 2, 3], [4, 5], [2]):
        cache, step, ids, logps = DynamicCache(config=model.config), [prompt], [], []
        with torch.no_grad():
            for _ in range(4):
                logits = (
                    model(input_ids=torch.tensor(step), cache=cache, use_cache=True)
                    .logits[0, -1]
                    .float()
                )
                token = int(torch.multinomial(logits.softmax(-1), 1, generator=generator))
                ids.append(token)
                logps.append(float(logits.log_softmax(-1)[token]))
                step = [[token]]
        rows.append({"prompt_ids": prompt, "response_ids": ids, "behaviour_logprobs": logps})
    return rows


def test_identical_paths_give_zero_mismatch():
    model = _micro()
    rows = _rows(model)
    scored = mm.score_path(model, rows, "one_by_one", PAD)
    summary = mm.log_ratio_summary(scored, [s.clone() for s in scored])
    assert summary["max_abs"] == 0.0 and summary["clip_outside_fraction"] == 0.0
    advantages = torch.tensor([1.0, -1.0, 0.5])
    reference = mm.surrogate_gradient(model, rows, scored, advantages, PAD)
    again = mm.surrogate_gradient(model, rows, scored, advantages, PAD)
    assert mm.gradient_gap(reference, again) == {
        "cosine": pytest.approx(1.0, abs=1e-9),
        "relative_difference": 0.0,
    }


def test_paths_agree_in_float32_and_bf16_departs():
    model = _micro()
    rows = _rows(model)
    full = mm.score_path(model, rows, "one_by_one", PAD)
    for path in ("kv_cache", "padded_batch"):
        assert mm.log_ratio_summary(full, mm.score_path(model, rows, path, PAD))["max_abs"] < 1e-4
    sdpa = _micro("sdpa")
    assert (
        mm.log_ratio_summary(full, mm.score_path(sdpa, rows, "one_by_one", PAD))["max_abs"] < 1e-4
    )
    bf16 = mm.log_ratio_summary(full, mm.score_path(model, rows, "bf16", PAD))
    assert bf16["max_abs"] > 1e-4  # bfloat16 keeps 8 bits of mantissa
    assert bf16["tokens"] == 12


def test_gradient_gap_reacts_to_other_old_logprobs():
    model = _micro()
    rows = _rows(model)
    full = mm.score_path(model, rows, "one_by_one", PAD)
    shifted = [s + 0.5 for s in full]  # ratios exp(-0.5): every token clipped or not
    advantages = torch.tensor([1.0, -1.0, 0.5])
    reference = mm.surrogate_gradient(model, rows, full, advantages, PAD)
    gap = mm.gradient_gap(reference, mm.surrogate_gradient(model, rows, shifted, advantages, PAD))
    assert gap["relative_difference"] > 0.1


def test_summary_refuses_misaligned_rows():
    with pytest.raises(ValueError, match="same tokens"):
        mm.log_ratio_summary([torch.zeros(2)], [torch.zeros(3)])


def test_exercise_checker_accepts_the_rule_and_names_a_truncation():
    from verifiable_grpo.exercises.importance_correction import TRUNCATED, check_sequence_mask

    def solution(train, sample, mask, cap):
        ratio = ((train - sample) * mask).sum(-1, keepdim=True).exp()
        return torch.where(ratio > cap, torch.zeros_like(ratio), ratio).expand_as(train) * mask

    assert check_sequence_mask(solution, verbose=False).passed
    truncating = check_sequence_mask(
        lambda t, s, m, cap: mm.importance_weights(t, s, m, "sequence_truncate", cap), verbose=False
    )
    assert not truncating.passed
    assert any(TRUNCATED in failure for failure in truncating.failures)
