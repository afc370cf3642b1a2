"""The batched path (sampling.batched): the same rows, log-probs, rewards and gradient as
the one-sequence-at-a-time path, a documented random stream, padding decided by position.
On the micro random Qwen2, and on the recorded tiny warm start where rewards must vary."""

from __future__ import annotations

import copy

import pytest
import torch

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core import scoring
from verifiable_grpo.core.config import read_json, repo_root
from verifiable_grpo.task import data, prompts
from verifiable_grpo.training import (
    batched_rollout,
    batched_scoring,
    gradients,
    grpo,
    objectives,
    rollout,
)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def examples(learning_view_dir):
    return data.read_examples(learning_view_dir, "train")[:3]


def _config(random_config, batched=True, use_kv_cache=True):
    return random_config.replaced(sampling={"batched": batched, "use_kv_cache": use_kv_cache})


def _prompts(tokenizer, examples, config):
    return [prompts.prompt_ids(tokenizer, e["statement"], config) for e in examples]


# --------------------------------------------------------------------------- the draw
def test_inverse_cdf_draw_follows_the_cumulative_probabilities_and_skips_zero_mass():
    probabilities = torch.tensor([[0.2, 0.0, 0.5, 0.3]] * 5 + [[0.5, 0.5, 0.0, 0.0]])
    uniforms = torch.tensor([0.0, 0.2, 0.69, 0.7, 0.999, 1.0 - 2**-53], dtype=torch.float64)
    # cumulative 0.2, 0.2, 0.7, 1.0: the first index whose cumulative exceeds u.
    assert batched_rollout.inverse_cdf_draw(probabilities, uniforms).tolist() == [0, 2, 2, 3, 3, 1]


def test_the_stream_advances_by_one_uniform_per_row_per_step(micro_model, random_config, examples):
    model, tokenizer = micro_model
    config = _config(random_config)
    sampler = batched_rollout.Sampler(model, tokenizer, config, torch.Generator().manual_seed(7))
    rows = batched_rollout.generate_batch(sampler, _prompts(tokenizer, examples, config))
    steps = max(r["response_tokens"] for r in rows)
    replay = torch.Generator().manual_seed(7)
    uniforms = [torch.rand(len(rows), dtype=torch.float64, generator=replay) for _ in range(steps)]
    generator = torch.Generator().manual_seed(7)
    batched_rollout.generate_batch(
        batched_rollout.Sampler(model, tokenizer, config, generator),
        _prompts(tokenizer, examples, config),
    )
    assert torch.equal(generator.get_state(), replay.get_state())
    # The first token of each row is the inverse-CDF draw of the first step's uniform.
    ids, mask, position = batched_rollout.left_padded(
        _prompts(tokenizer, examples, config), 0, "cpu"
    )
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=position).logits[:, -1]
    first = batched_rollout.inverse_cdf_draw(torch.softmax(logits.float(), -1), uniforms[0])
    assert [r["response_ids"][0] for r in rows] == first.tolist()


# --------------------------------------------------------------------------- rows
@pytest.mark.parametrize("use_kv_cache", [True, False])
def test_batched_log_probs_agree_with_one_sequence_rescoring(
    micro_model, random_config, examples, use_kv_cache
):
    model, tokenizer = micro_model
    config = _config(random_config, use_kv_cache=use_kv_cache)
    sampler = batched_rollout.Sampler(model, tokenizer, config, torch.Generator().manual_seed(3))
    groups = batched_rollout.sample_groups(sampler, examples, 2, ["a", "b", "c"])
    rows = [r for g in groups for r in g["responses"]]
    assert len({len(r["prompt_ids"]) for r in rows}) > 1  # left padding is exercised
    sequential = rollout.verify_captured_logprobs(model, rows, 2e-4)
    batched = batched_scoring.verify_captured_logprobs(model, rows, 2e-4, pad_id=0)
    assert sequential["max_abs_difference"] <= 2e-4
    assert batched["max_abs_difference"] <= 2e-4
    assert all(r["kv_cache"] is use_kv_cache for r in rows)


@pytest.mark.parametrize("share_prompts", [False, True])
def test_llama_batched_log_probs_agree_with_one_sequence_rescoring(
    random_config, examples, share_prompts
):
    """Llama's forward takes the 4D mask itself (Qwen2 a mapping): left-padded rows must
    still score as their unpadded selves (SmolLM2's path)."""
    config = _config(random_config).replaced(
        model={"architecture": "LlamaForCausalLM"}, grpo={"share_prompts": share_prompts}
    )
    model, tokenizer = model_lib.load_base(config)
    assert type(model).__name__ == "LlamaForCausalLM"
    sampler = batched_rollout.Sampler(model, tokenizer, config, torch.Generator().manual_seed(3))
    groups = batched_rollout.sample_groups(sampler, examples, 2, ["a", "b", "c"])
    rows = [r for g in groups for r in g["responses"]]
    assert len({len(r["prompt_ids"]) for r in rows}) > 1  # left padding is exercised
    assert rollout.verify_captured_logprobs(model, rows, 2e-4)["max_abs_difference"] <= 2e-4
    assert (
        batched_scoring.verify_captured_logprobs(
            model, rows, 2e-4, pad_id=0, share_prompts=share_prompts
        )["max_abs_difference"]
        <= 2e-4
    )


def test_rows_and_groups_have_the_sequential_layout(micro_model, random_config, examples):
    model, tokenizer = micro_model
    config = _config(random_config)
    batched = batched_rollout.sample_groups(
        rollout.Sampler(model, tokenizer, config, torch.Generator().manual_seed(1), "d"),
        examples[:2],
        3,
        ["g0", "g1"],
    )
    single = rollout.sample_group(
        rollout.Sampler(model, tokenizer, config, torch.Generator().manual_seed(1), "d"),
        examples[0],
        3,
        "g0",
    )
    assert [set(g) for g in batched] == [set(single)] * 2
    assert all(set(r) == set(single["responses"][0]) for g in batched for r in g["responses"])
    assert [r["rollout_id"] for r in batched[1]["responses"]] == [
        "g1/response-00",
        "g1/response-01",
        "g1/response-02",
    ]
    assert batched[0]["prompt_ids"] == single["prompt_ids"]
    assert [g["document_id"] for g in batched] == [e["document_id"] for e in examples[:2]]
    for group in batched:
        assert group["rewards"] == [r["verifier"]["reward"] for r in group["responses"]]
        for row in group["responses"]:
            eos = prompts.eos_id(tokenizer, config)
            assert (row["finish_reason"] == "eos") == (row["response_ids"][-1] == eos)
            assert eos not in row["response_ids"][:-1]  # nothing drawn after EOS is kept
            assert len(row["behaviour_logprobs"]) == row["response_tokens"] <= 24


def test_greedy_batched_equals_greedy_sequential(micro_model, random_config, examples):
    model, tokenizer = micro_model
    config = _config(random_config)
    ids = _prompts(tokenizer, examples, config)
    decoder = rollout.Sampler(model, tokenizer, config)
    batched = batched_rollout.generate_batch(decoder, ids, greedy=True)
    for row, prompt in zip(batched, ids):
        alone = rollout.generate(decoder, prompt, greedy=True)
        assert row["response_ids"] == alone["response_ids"]
        assert (
            max(abs(a - b) for a, b in zip(row["behaviour_logprobs"], alone["behaviour_logprobs"]))
            <= 2e-4
        )


def test_a_row_with_its_own_generator_does_not_depend_on_its_batch(
    micro_model, random_config, examples
):
    model, tokenizer = micro_model
    config = _config(random_config)
    ids = _prompts(tokenizer, examples, config)
    streams = [torch.Generator().manual_seed(s) for s in (5, 6, 7)]
    together = batched_rollout.generate_batch(
        rollout.Sampler(model, tokenizer, config, streams), ids
    )
    stream = [torch.Generator().manual_seed(6)]
    alone = batched_rollout.generate_batch(
        rollout.Sampler(model, tokenizer, config, stream), ids[1:2]
    )
    assert together[1]["response_ids"] == alone[0]["response_ids"]
    assert together[0]["response_ids"] != together[1]["response_ids"]


def test_bad_input_is_refused_before_any_forward(micro_model, random_config, examples):
    model, tokenizer = micro_model
    config = _config(random_config)
    ids = _prompts(tokenizer, examples, config)
    with pytest.raises(ValueError, match="2 generators for 3 prompt rows"):
        two = rollout.Sampler(model, tokenizer, config, [torch.Generator(), torch.Generator()])
        batched_rollout.generate_batch(two, ids)
    with pytest.raises(ValueError, match="needs a torch.Generator"):
        batched_rollout.generate_batch(rollout.Sampler(model, tokenizer, config), ids)
    sampler = rollout.Sampler(model, tokenizer, config, torch.Generator())
    with pytest.raises(ValueError, match="exceeds tokens.max_prompt"):
        batched_rollout.generate_batch(sampler, [ids[0] * 10])
    with pytest.raises(ValueError, match="empty prompt"):
        batched_rollout.generate_batch(sampler, [ids[0], []])
    with pytest.raises(ValueError, match="3 group ids for 2 examples"):
        batched_rollout.sample_groups(sampler, examples[:2], 2, ["a", "b", "c"])
    model.train()
    try:
        with pytest.raises(ValueError, match="eval mode"):
            batched_rollout.generate_batch(sampler, ids)
    finally:
        model.eval()


def test_padding_is_decided_by_position_not_by_token_value(micro_model):
    """A response holding the pad id scores as it does alone."""
    model, _ = micro_model
    rows = [
        {"prompt_ids": [5, 6, 7, 8, 9], "response_ids": [0, 11, 0, 12]},
        {"prompt_ids": [5, 6], "response_ids": [13]},
    ]
    for row in rows:
        row["behaviour_logprobs"] = [0.0] * len(row["response_ids"])
    batch = batched_scoring.rollout_batch(rows, pad_id=0, device="cpu")
    assert batch["response_mask"].tolist() == [[True] * 4, [True, False, False, False]]
    with torch.no_grad():
        batched = batched_scoring.token_logprobs(
            batched_scoring.response_logits(model, batch), batch["targets"]
        )
    for i, row in enumerate(rows):
        ids = torch.tensor([row["prompt_ids"] + row["response_ids"]])
        with torch.no_grad():
            alone = scoring.token_logprobs(model, ids, torch.ones_like(ids))[0]
        alone = alone[rollout.response_slice(len(row["prompt_ids"]), len(row["response_ids"]))]
        torch.testing.assert_close(batched[i, : len(row["response_ids"])], alone, rtol=0, atol=2e-5)


def test_shared_prompt_layout_reads_each_prompt_once_and_continues_its_positions():
    rows = [
        {"prompt_ids": [5, 6, 7], "response_ids": [8, 9], "behaviour_logprobs": [0.0, 0.0]},
        {"prompt_ids": [5, 6, 7], "response_ids": [10], "behaviour_logprobs": [0.0]},
        {"prompt_ids": [4, 5], "response_ids": [11, 12, 13], "behaviour_logprobs": [0.0] * 3},
    ]
    batch = batched_scoring.rollout_batch(rows, pad_id=0, device="cpu", share_prompts=True)
    assert batch["prompt_ids"].tolist() == [[5, 6, 7], [0, 4, 5]]
    assert batch["prompt_mask"].tolist() == [[1, 1, 1], [0, 1, 1]]
    assert batch["row_prompt"].tolist() == [0, 0, 1]
    assert batch["response_positions"].tolist() == [[3, 4, 5], [3, 4, 5], [2, 3, 4]]
    assert batch["attention_mask"].tolist() == [
        [1, 1, 1, 1, 1, 0],
        [1, 1, 1, 1, 0, 0],
        [0, 1, 1, 1, 1, 1],
    ]
    assert batch["response_mask"].tolist() == [
        [True, True, False],
        [True, False, False],
        [True, True, True],
    ]


@pytest.mark.parametrize("longest", [1, 3])
def test_shared_prompt_logits_are_the_whole_row_logits(micro_model, longest):
    """Same logits at every real response position (float rounding apart), one-token
    responses included (no second pass)."""
    model, _ = micro_model
    rows = [
        {"prompt_ids": [5, 6, 7, 8], "response_ids": [9, 3, 4][:longest]},
        {"prompt_ids": [5, 6, 7, 8], "response_ids": [12]},
        {"prompt_ids": [2, 3], "response_ids": [14, 15, 1][:longest]},
        {"prompt_ids": [5, 6, 7, 8], "response_ids": [0, 0, 7][:longest]},
    ]
    for row in rows:
        row["behaviour_logprobs"] = [0.0] * len(row["response_ids"])
    whole = batched_scoring.rollout_batch(rows, pad_id=0, device="cpu")
    shared = batched_scoring.rollout_batch(rows, pad_id=0, device="cpu", share_prompts=True)
    assert shared["prompt_ids"].shape[0] == 2
    with torch.no_grad():
        a = batched_scoring.response_logits(model, whole)
        b = batched_scoring.response_logits(model, shared)
    assert a.shape == b.shape == (4, longest, a.shape[-1])
    mask = whole["response_mask"]
    torch.testing.assert_close(b[mask], a[mask], rtol=0, atol=1e-5)


def test_shared_prompt_generation_draws_the_same_tokens(
    micro_model, tokenizer, learning_view_dir, random_config
):
    """The random stream is consumed as without sharing: same tokens, same captured
    log-probs up to rounding."""
    model, _ = micro_model
    config = _config(random_config)
    examples = data.read_examples(learning_view_dir, "train")[:2]
    prompt_rows = [p for p in _prompts(tokenizer, examples, config) for _ in range(3)]
    runs = [
        batched_rollout.generate_batch(
            rollout.Sampler(model, tokenizer, config, torch.Generator().manual_seed(3)),
            prompt_rows,
            share_prompts=share,
        )
        for share in (False, True)
    ]
    for a, b in zip(*runs):
        assert a["response_ids"] == b["response_ids"]
        assert (
            max(abs(x - y) for x, y in zip(a["behaviour_logprobs"], b["behaviour_logprobs"]))
            <= 1e-5
        )
    no_cache = _config(random_config, use_kv_cache=False)
    with pytest.raises(ValueError, match="needs sampling.use_kv_cache"):
        batched_rollout.generate_batch(
            rollout.Sampler(model, tokenizer, no_cache, torch.Generator().manual_seed(3)),
            prompt_rows,
            share_prompts=True,
        )


# --------------------------------------------------------------------------- the gradient
def _float64_setup(random_config, learning_view_dir):
    config = _config(random_config, batched=False, use_kv_cache=False)
    policy, tokenizer = model_lib.load_base(config)
    policy = policy.double()
    reference = copy.deepcopy(policy).requires_grad_(False)
    with torch.no_grad():  # move the policy away from the reference so the KL term acts
        for p in model_lib.unique_parameters(policy):
            p.add_(
                0.02
                * torch.randn(p.shape, generator=torch.Generator().manual_seed(1), dtype=p.dtype)
            )
    examples = data.read_examples(learning_view_dir, "train")[:2]
    generator = torch.Generator().manual_seed(0)
    groups = [
        rollout.sample_group(rollout.Sampler(policy, tokenizer, config, generator), e, 3, f"p{i}")
        for i, e in enumerate(examples)
    ]
    # Responses of different lengths (a prefix of a response is a response of that policy).
    for group, cuts in zip(groups, ([5, 24, 11], [17, 2, 24])):
        for row, cut in zip(group["responses"], cuts):
            row["response_ids"] = row["response_ids"][:cut]
            row["behaviour_logprobs"] = row["behaviour_logprobs"][:cut]
        group["advantages"] = [1.0, -0.5, -0.5] if group is groups[0] else [-1.0, 0.25, 0.75]
    return config, policy, reference, groups


@pytest.mark.parametrize("name", ["part1", "bnpo", "gspo"])
def test_batched_gradient_equals_the_one_at_a_time_gradient_in_float64(
    random_config, learning_view_dir, name
):
    config, policy, reference, groups = _float64_setup(random_config, learning_view_dir)
    objective = objectives.get_objective(name)
    parameters = model_lib.unique_parameters(policy)

    def gradient(run_config, **options):
        policy.zero_grad(set_to_none=True)
        if options:
            telemetry = gradients.accumulate_gradients(
                policy, reference, groups, run_config, gradients.UpdateOptions(objective, **options)
            )
        else:
            telemetry = grpo.accumulate_gradients(
                policy, reference, groups, run_config, grpo.UpdateOptions(objective)
            )
        return [p.grad.clone() for p in parameters], telemetry

    sequential, want = gradient(config)
    config = config.replaced(sampling={"batched": True}, grpo={"share_prompts": True})
    shared, got_shared = gradient(config)
    config = config.replaced(grpo={"share_prompts": False})
    batched, got = gradient(config)
    chunked, _ = gradient(config, rows_per_pass=4)
    # Shared prompts add the same terms in another order. The library's eager attention
    # takes its softmax in float32 even for a float64 model, so a last-bit change of a
    # score can move a probability by one float32 step: the gradients agree norm-wise.
    for a, d in zip(sequential, shared):
        assert float((d - a).norm()) <= 1e-6 * float(a.norm()) + 1e-12
    assert got_shared["loss"] == pytest.approx(want["loss"], rel=1e-6, abs=1e-9)
    assert got_shared["mean_exact_kl"] == pytest.approx(want["mean_exact_kl"], rel=1e-5)
    assert got["tokens"] == want["tokens"] == 5 + 24 + 11 + 17 + 2 + 24
    for key in (
        "loss",
        "surrogate",
        "clip_low_fraction",
        "clip_high_fraction",
        "ratio_min",
        "ratio_max",
    ):
        assert got[key] == pytest.approx(want[key], rel=1e-6, abs=1e-9), key
    # Both paths report the token-mean exact KL, whatever the objective's reduction.
    assert got["mean_exact_kl"] == pytest.approx(want["mean_exact_kl"], rel=1e-5)
    # ... and the same exact entropy (a positive number: the policy is not one-hot).
    assert got["mean_entropy"] == pytest.approx(want["mean_entropy"], rel=1e-5)
    assert got_shared["mean_entropy"] == pytest.approx(want["mean_entropy"], rel=1e-5)
    assert want["mean_entropy"] > 0
    assert [r["rollout_id"] for r in got["responses"]] == [
        r["rollout_id"] for r in want["responses"]
    ]
    assert any(p.abs().max() > 0 for p in sequential)
    for a, b, c in zip(sequential, batched, chunked):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-10)
        torch.testing.assert_close(c, b, rtol=1e-6, atol=1e-10)


# --------------------------------------------------------------------------- recorded model
def test_greedy_rewards_on_the_recorded_warm_start_are_the_sequential_ones(
    tokenizer, learning_view_dir
):
    from verifiable_grpo.core.config import load_config
    from verifiable_grpo.task import verifier

    config = load_config("tiny")
    recorded = repo_root() / "data" / "recorded" / "tiny"
    sha = read_json(recorded / "provenance.json")["files"]["policies/warmstart.safetensors"]
    model, _ = model_lib.reload_policy(recorded / "policies" / "warmstart.safetensors", config, sha)
    model.eval()
    examples = data.read_examples(learning_view_dir, "train")[:12]
    ids = _prompts(tokenizer, examples, config)
    decoder = rollout.Sampler(model, tokenizer, config)
    batched = batched_rollout.generate_batch(decoder, ids, greedy=True)
    rewards = {"batched": [], "sequential": []}
    for row, prompt, example in zip(batched, ids, examples):
        alone = rollout.generate(decoder, prompt, greedy=True)
        assert row["response_ids"] == alone["response_ids"]
        for name, out in (("batched", row), ("sequential", alone)):
            rewards[name].append(
                verifier.score_generated_json(
                    out["text"], out["finish_reason"], example["problem"], out["tokenization_valid"]
                )["reward"]
            )
    assert rewards["batched"] == rewards["sequential"]
    assert 0 < sum(rewards["batched"]) < 12  # not vacuous: right and wrong answers both occur


def test_reference_memo_gives_the_recomputed_gradient_bit_for_bit(
    random_config, learning_view_dir, monkeypatch
):
    """The second update of a rollout set reads the reference's logits kept by the first:
    exactly what recomputing them gives (same passes, same tensors)."""
    config, policy, reference, groups = _float64_setup(random_config, learning_view_dir)
    config = config.replaced(sampling={"batched": True})
    parameters = model_lib.unique_parameters(policy)

    def gradient(**options):
        policy.zero_grad(set_to_none=True)
        telemetry = gradients.accumulate_gradients(
            policy, reference, groups, config, gradients.UpdateOptions(rows_per_pass=4, **options)
        )
        return [p.grad.clone() for p in parameters], telemetry

    memo: dict = {}
    first, _ = gradient(reference_memo=memo)
    assert sorted(memo) == [(0, 4), (4, 4)]  # one entry per pass of 4 rows
    with torch.no_grad():  # the policy moves between updates
        for p in parameters:
            p.add_(
                0.01
                * torch.randn(p.shape, generator=torch.Generator().manual_seed(2), dtype=p.dtype)
            )
    kept, kept_telemetry = gradient(reference_memo=memo)
    fresh, fresh_telemetry = gradient()
    assert all(torch.equal(a, b) for a, b in zip(kept, fresh))
    assert kept_telemetry["mean_exact_kl"] == fresh_telemetry["mean_exact_kl"] > 0
    assert not all(torch.equal(a, b) for a, b in zip(first, fresh))
    monkeypatch.setattr(gradients, "REFERENCE_MEMO_BYTES", 0)
    small: dict = {}
    gradient(reference_memo=small)
    assert small == {}  # over the limit: recomputed
