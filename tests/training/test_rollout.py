"""Rollouts: temperature-1 sampling, captured behaviour log-probs, their verification,
undecodable ids, and group records. All on the micro random Qwen2 (seconds)."""

from __future__ import annotations

import copy

import pytest
import torch

from verifiable_grpo.task import prompts, verifier
from verifiable_grpo.training import objectives, rollout

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def example(learning_view_dir):
    from verifiable_grpo.task import data

    return data.read_examples(learning_view_dir, "train")[0]


def _config(random_config, use_kv_cache):
    return random_config.replaced(sampling={"use_kv_cache": use_kv_cache})


def _sample(model, tokenizer, config, example, seed, greedy=False):
    ids = prompts.prompt_ids(tokenizer, example["statement"], config)
    generator = torch.Generator().manual_seed(seed)
    return rollout.generate(
        rollout.Sampler(model, tokenizer, config, generator), ids, greedy=greedy
    )


@pytest.mark.parametrize("use_kv_cache", [False, True])
def test_captured_logprobs_match_full_sequence_rescoring(
    micro_model, random_config, example, use_kv_cache
):
    model, tokenizer = micro_model
    config = _config(random_config, use_kv_cache)
    rows = [_sample(model, tokenizer, config, example, seed) for seed in (1, 2, 3)]
    for row in rows:
        assert len(row["behaviour_logprobs"]) == len(row["response_ids"]) == row["response_tokens"]
        assert row["kv_cache"] is use_kv_cache
        assert all(lp <= 0 for lp in row["behaviour_logprobs"])
    report = rollout.verify_captured_logprobs(model, rows, config["grpo"]["verify_tolerance"])
    assert report["responses"] == 3
    if use_kv_cache:
        assert report["max_abs_difference"] <= 2e-4
    else:  # the same full-prefix forward as rescoring, one sequence at a time: bitwise
        assert report["max_abs_difference"] == 0.0


def test_corrupted_old_logprob_is_caught_with_the_measured_difference(
    micro_model, random_config, example
):
    model, tokenizer = micro_model
    config = _config(random_config, False)
    row = _sample(model, tokenizer, config, example, 5)
    rollout.verify_captured_logprobs(model, [row], 2e-4)
    bad = copy.deepcopy(row)
    bad["rollout_id"] = "corrupted"
    bad["behaviour_logprobs"][3] += 3e-4  # just over the 2e-4 tolerance
    with pytest.raises(ValueError, match=r"3\.0\d*e-04 > tolerance 0\.0002.*corrupted"):
        rollout.verify_captured_logprobs(model, [row, bad], 2e-4)
    bad["behaviour_logprobs"] = bad["behaviour_logprobs"][:-1]
    with pytest.raises(ValueError, match="captured log-probs for"):
        rollout.verify_captured_logprobs(model, [bad], 2e-4)


@pytest.mark.parametrize(
    "key,value,problem",
    [
        (
            "temperature",
            0.7,
            "sampling.temperature: must be 1.0 (sampling is temperature 1 over the "
            "full vocabulary: top_k 0, top_p 1.0), got 0.7",
        ),
        (
            "top_k",
            50,
            "sampling.top_k: must be 0 (sampling is temperature 1 over the full "
            "vocabulary: top_k 0, top_p 1.0), got 50",
        ),
        ("top_p", 0.9, "sampling.top_p: must be 1.0 (sampling is temperature 1"),
        (
            "min_p",
            0.05,
            "sampling.min_p: unknown key; sampling takes temperature, top_k, top_p, use_kv_cache",
        ),
        ("temperature", True, "sampling.temperature: must be a number, got True (bool)"),
    ],
)
def test_sampling_refuses_anything_but_temperature_one_full_vocabulary(
    micro_model, random_config, example, key, value, problem
):
    """The schema refuses the setting by name when the profile is made, so no sampler can
    ever receive it (a loaded profile cannot be edited afterwards)."""
    from verifiable_grpo.core.config import ConfigError

    with pytest.raises(ConfigError) as caught:
        random_config.replaced(sampling={key: value})
    (only,) = caught.value.problems
    assert only.startswith(f"{random_config.path}: {problem}"), only


def test_sampling_refuses_train_mode(micro_model, random_config, example):
    model, tokenizer = micro_model
    model.train()
    try:
        with pytest.raises(ValueError, match="eval mode"):
            _sample(model, tokenizer, random_config, example, 0)
        with pytest.raises(ValueError, match="eval mode"):
            rollout.verify_captured_logprobs(
                model, [{"prompt_ids": [1], "response_ids": [2], "behaviour_logprobs": [0.0]}], 2e-4
            )
    finally:
        model.eval()


def test_greedy_is_deterministic_and_follows_the_argmax(micro_model, random_config, example):
    model, tokenizer = micro_model
    config = _config(random_config, False)
    first = _sample(model, tokenizer, config, example, 1, greedy=True)
    second = _sample(model, tokenizer, config, example, 999, greedy=True)
    assert first["response_ids"] == second["response_ids"]
    assert first["behaviour_logprobs"] == second["behaviour_logprobs"]
    # Each greedy token is the most probable one at its prefix.
    ids = torch.tensor([first["prompt_ids"] + first["response_ids"]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    start = len(first["prompt_ids"]) - 1
    chosen = logits[start : start + len(first["response_ids"])].argmax(dim=-1).tolist()
    assert chosen == first["response_ids"]


def test_same_generator_seed_gives_identical_responses(micro_model, random_config, example):
    model, tokenizer = micro_model
    a = _sample(model, tokenizer, random_config, example, 7)
    b = _sample(model, tokenizer, random_config, example, 7)
    c = _sample(model, tokenizer, random_config, example, 8)
    assert (a["response_ids"], a["behaviour_logprobs"], a["text"]) == (
        b["response_ids"],
        b["behaviour_logprobs"],
        b["text"],
    )
    assert a["response_ids"] != c["response_ids"]


def test_kv_cache_draws_the_same_tokens_as_full_prefix_sampling(
    micro_model, random_config, example
):
    model, tokenizer = micro_model
    plain = _sample(model, tokenizer, _config(random_config, False), example, 11)
    cached = _sample(model, tokenizer, _config(random_config, True), example, 11)
    assert plain["response_ids"] == cached["response_ids"]
    difference = max(
        abs(x - y) for x, y in zip(plain["behaviour_logprobs"], cached["behaviour_logprobs"])
    )
    assert difference <= 2e-4


class BiasedLogits(torch.nn.Module):
    """The micro policy with a constant added to one token's logit."""

    def __init__(self, inner, token, bias):
        super().__init__()
        self.inner, self.token, self.bias = inner, token, bias
        self.config = inner.config

    def forward(self, **kwargs):
        out = self.inner(**kwargs)
        out.logits[..., self.token] += self.bias
        return out


def test_stops_at_eos_or_at_the_length_limit(micro_model, random_config, example, tokenizer):
    model, _ = micro_model
    config = _config(random_config, False)
    eos = prompts.eos_id(tokenizer, config)
    row = _sample(BiasedLogits(model, eos, 60.0).eval(), tokenizer, config, example, 0)
    assert (row["finish_reason"], row["response_ids"], row["text"]) == ("eos", [eos], "")
    assert row["response_tokens"] == 1  # EOS counts as a response token
    row = _sample(BiasedLogits(model, eos, -60.0).eval(), tokenizer, config, example, 0)
    assert row["finish_reason"] == "length"
    assert row["response_tokens"] == config["tokens"]["max_response"]
    assert eos not in row["response_ids"]


class WiderLogits(torch.nn.Module):
    """A policy whose logits have padded rows beyond the tokenizer (like Qwen's 151,936),
    with the first padded row made the most likely."""

    def __init__(self, inner, extra):
        super().__init__()
        self.inner, self.extra = inner, extra
        self.config = inner.config

    def forward(self, **kwargs):
        out = self.inner(**kwargs)
        logits = out.logits
        padded = torch.full((*logits.shape[:-1], self.extra), -30.0, dtype=logits.dtype)
        padded[..., 0] = 50.0
        out.logits = torch.cat([logits, padded], dim=-1)
        return out


def test_an_undecodable_id_invalidates_the_response(micro_model, random_config, example, tokenizer):
    model, _ = micro_model
    wide = WiderLogits(model, extra=8).eval()
    # The micro model cannot embed the padded id it drew: one token only.
    config = _config(random_config, False).replaced(tokens={"max_response": 1})
    row = _sample(wide, tokenizer, config, example, 0, greedy=True)
    outside = len(tokenizer)
    assert row["response_ids"][0] == outside
    assert row["tokenization_valid"] is False
    assert outside in row["undecodable_ids"]
    score = verifier.score_generated_json(
        row["text"], row["finish_reason"], example["problem"], row["tokenization_valid"]
    )
    assert (score["reward"], score["reason"]) == (0, "undecodable_token")


def test_decode_keeps_special_tokens_and_flags_ids_outside_the_tokenizer(tokenizer):
    text_ids = tokenizer.encode('{"final_stock": 7}', add_special_tokens=False)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    clean = rollout.decode_response(tokenizer, text_ids + [eos], "eos")
    assert clean == {
        "text": '{"final_stock": 7}',
        "tokenization_valid": True,
        "undecodable_ids": [],
    }
    # An id past the tokenizer would decode to nothing and leave valid-looking JSON.
    hidden = rollout.decode_response(
        tokenizer, text_ids[:2] + [len(tokenizer) + 3] + text_ids[2:] + [eos], "eos"
    )
    assert hidden["text"] == '{"final_stock": 7}'
    assert hidden["tokenization_valid"] is False
    assert hidden["undecodable_ids"] == [len(tokenizer) + 3]
    # A special token other than EOS stays visible, so the JSON check rejects it.
    pad = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    special = rollout.decode_response(tokenizer, text_ids + [pad], "length")
    assert special["text"].endswith("<|endoftext|>")


def test_sample_group_records_rewards_and_zero_variance_not_advantages(
    micro_model, random_config, example
):
    model, tokenizer = micro_model
    generator = torch.Generator().manual_seed(3)
    sampler = rollout.Sampler(model, tokenizer, random_config, generator, policy_digest="digest")
    group = rollout.sample_group(sampler, example, 4, group_id="g")
    assert [r["rollout_id"] for r in group["responses"]] == [
        f"g/response-{i:02d}" for i in range(4)
    ]
    assert all(r["policy_digest"] == "digest" for r in group["responses"])
    # A random policy never writes the answer: a constant group, no invented winner.
    assert group["rewards"] == [0.0] * 4
    assert group["zero_variance"] is True
    # The sampler returns rewards; the objective computes the advantages.
    assert not {"advantages", "reward_mean", "reward_std"} & set(group)
    scored = objectives.with_advantages(group, objectives.objective_from_config(random_config))
    assert scored["advantages"] == [0.0] * 4
    for row in group["responses"]:
        assert row["verifier"] == verifier.score_generated_json(
            row["text"], row["finish_reason"], example["problem"], row["tokenization_valid"]
        )
    with pytest.raises(ValueError, match="at least 2"):
        rollout.sample_group(
            rollout.Sampler(model, tokenizer, random_config, generator), example, 1, "g"
        )


def test_sample_group_advantages_follow_the_verifier(
    micro_model, random_config, example, monkeypatch
):
    """Mixed rewards [1, 0, 1, 0] (verifier replaced) give (r - 0.5) / (0.5 + 1e-8)."""
    model, tokenizer = micro_model
    rewards = iter([1, 0, 1, 0])

    def fake_score(text, finish_reason, problem, tokenization_valid=True):
        return {"valid": True, "value": 0, "reason": None, "reward": next(rewards), "expected": 0}

    monkeypatch.setattr(rollout.verifier, "score_generated_json", fake_score)
    generator = torch.Generator().manual_seed(0)
    sampler = rollout.Sampler(model, tokenizer, random_config, generator)
    sampled = rollout.sample_group(sampler, example, 4, group_id="g")
    group = objectives.with_advantages(sampled, objectives.objective_from_config(random_config))
    expected = 0.5 / (0.5 + 1e-8)
    assert group["advantages"] == [expected, -expected, expected, -expected]
    assert group["advantages"][0] != 1.0  # the epsilon is visible
    assert group["zero_variance"] is False
    assert (group["reward_mean"], group["reward_std"]) == (0.5, 0.5)
    # The keys (and their order) of a group record are those Part I always wrote.
    assert list(group) == [
        "group_id",
        "document_id",
        "prompt_ids",
        "policy_digest",
        "responses",
        "rewards",
        "advantages",
        "reward_mean",
        "reward_std",
        "zero_variance",
    ]
