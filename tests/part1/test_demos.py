import math

import pytest

from verifiable_grpo.part1.demos import clip_gradient_table, two_updates_on_one_rollout_set


def test_first_update_is_exactly_on_policy():
    report = two_updates_on_one_rollout_set(updates=2, seed=0)
    first, second = report
    assert first["min_ratio"] == first["max_ratio"] == 1.0
    assert first["outside_fraction"] == first["active_clip_fraction"] == 0.0
    # the parameters moved, so the second update sees ratios other than 1
    assert (second["min_ratio"], second["max_ratio"]) != (1.0, 1.0)


def test_large_steps_push_ratios_out_of_the_interval():
    # A group with mixed rewards (seed 0 gives one) and a large step: clipping acts.
    report = two_updates_on_one_rollout_set(updates=3, learning_rate=5.0, seed=0)
    assert len(set(report[0]["rewards"])) > 1
    assert report[-1]["outside_fraction"] > 0 and report[-1]["active_clip_fraction"] > 0


def test_gradient_table_matches_the_hand_derivation():
    rows = {(r["advantage"], r["ratio"]): r for r in clip_gradient_table()}
    # unclipped branch: d(rho A)/d logp = rho A
    assert rows[(1.0, 1.1)]["d_objective_d_logp"] == pytest.approx(1.1)
    assert rows[(-1.0, 0.9)]["d_objective_d_logp"] == pytest.approx(-0.9)
    # clipped branch selected: constant, zero gradient
    for key in [(1.0, 1.5), (-1.0, 0.5)]:
        assert rows[key]["branch"] == "clipped (constant)" and rows[key]["active_clip"]
        assert rows[key]["d_objective_d_logp"] == 0.0
    # outside the interval but on the side where min() keeps the unclipped term
    assert rows[(1.0, 0.5)]["branch"] == "unclipped"
    assert rows[(1.0, 0.5)]["d_objective_d_logp"] == pytest.approx(0.5)
    assert rows[(-1.0, 1.5)]["objective"] == pytest.approx(-1.5)
    assert math.isclose(rows[(1.0, 1.5)]["objective"], 1.2)


def test_updates_must_be_positive():
    with pytest.raises(ValueError, match="updates"):
        two_updates_on_one_rollout_set(updates=0)


def test_refreshing_old_logprobs_disables_the_clip():
    report = two_updates_on_one_rollout_set(updates=3, learning_rate=5.0, seed=0, refresh_old=True)
    assert all(r["min_ratio"] == r["max_ratio"] == 1.0 for r in report)
    assert all(r["active_clip_fraction"] == 0.0 for r in report)


def test_per_block_normalisation_is_wrong_unless_one_block():
    import torch
    import torch.nn.functional as F

    from verifiable_grpo.part1.demos import kl_normalising_each_block
    from verifiable_grpo.training.losses import exact_prefix_kl

    g = torch.Generator().manual_seed(1)
    cur, ref = (
        torch.randn(3, 10, generator=g, dtype=torch.float64),
        torch.randn(3, 10, generator=g, dtype=torch.float64),
    )
    exact = F.kl_div(
        torch.log_softmax(ref, -1), torch.log_softmax(cur, -1), log_target=True, reduction="none"
    ).sum(-1)
    assert torch.allclose(kl_normalising_each_block(cur, ref, 10), exact)
    assert torch.allclose(exact_prefix_kl(cur, ref, block_size=3), exact)
    assert not torch.allclose(kl_normalising_each_block(cur, ref, 3), exact, atol=1e-3)


def test_sampled_estimates_approach_the_exact_value():
    import torch

    from verifiable_grpo.part1.demos import sampled_estimates_at_prefixes
    from verifiable_grpo.training.losses import exact_prefix_kl

    g = torch.Generator().manual_seed(2)
    cur = torch.randn(2, 7, generator=g, dtype=torch.float64)
    ref = cur + 0.5 * torch.randn(2, 7, generator=g, dtype=torch.float64)
    exact = exact_prefix_kl(cur, ref)
    est = sampled_estimates_at_prefixes(cur, ref, samples=200_000, seed=0)
    for name in ("k1", "k3"):
        stderr = est[f"{name}_std"] / 200_000**0.5
        assert torch.all((est[name] - exact).abs() < 5 * stderr + 1e-12), name


def test_nudged_copy_moves_only_the_copy():
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from verifiable_grpo.core.model import model_digest
    from verifiable_grpo.part1.demos import nudged_copy

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=16,
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            tie_word_embeddings=True,
        )
    ).eval()
    before = model_digest(model)
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    mask = torch.tensor([[False, False, False, True, True]])
    moved = nudged_copy(model, ids, mask, learning_rate=0.1)
    assert model_digest(model) == before and model_digest(moved) != before


def _micro_model():
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    return Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=16,
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            tie_word_embeddings=True,
            attn_implementation="eager",
        )
    ).eval()


def test_dropout_makes_two_scorings_differ_and_eval_does_not():
    import torch

    from verifiable_grpo.part1.demos import dropout_changes_scores

    model = _micro_model()
    ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])
    assert dropout_changes_scores(model, ids, dropout=0.5) > 0
    assert dropout_changes_scores(model, ids, dropout=0.0) == 0.0
    assert not model.training


def test_update_on_one_group_moves_probability_toward_positive_advantage():
    from verifiable_grpo.core.config import load_config
    from verifiable_grpo.core.model import model_digest
    from verifiable_grpo.part1.demos import update_on_one_group

    model = _micro_model()
    config = load_config("smoke")
    import torch

    rows = []
    for member, response in enumerate([[5, 6], [7, 8]]):
        ids = [1, 2] + response
        with torch.no_grad():
            lp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
        rows.append(
            {
                "prompt_ids": [1, 2],
                "response_ids": response,
                "rollout_id": f"r{member}",
                "behaviour_logprobs": [float(lp[1 + i, t]) for i, t in enumerate(response)],
            }
        )
    group = {"responses": rows, "advantages": [1.0, -1.0]}
    before = model_digest(model)
    result = update_on_one_group(model, group, config, learning_rate=0.05)
    assert model_digest(model) == before
    assert result["after"][0] > result["before"][0] and result["after"][1] < result["before"][1]
    assert result["telemetry"]["clip_low_fraction"] == 0.0  # first update: ratio exactly 1


# --------------------------------------------------------------------------- KL probe
def test_estimator_gradients_k1_zero_k2_reverse_k3_forward():
    """By hand: E[grad k1] = sum_y p_y (e_y - p) = 0; E[grad k2] = grad KL(p||q);
    E[grad k3] = sum_y (p_y - q_y)(e_y - p) = p - q = grad KL(q||p)."""
    import torch

    from verifiable_grpo.part1.kl_probe import estimator_loss_gradients

    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    g = estimator_loss_gradients(p.log(), q.log())
    kl = float((p * (p / q).log()).sum())
    assert torch.allclose(g["k1"], torch.zeros(3, dtype=torch.float64), atol=1e-15)
    assert torch.allclose(g["reverse"], p * ((p / q).log() - kl), atol=1e-15)
    assert torch.allclose(g["k2"], g["reverse"], atol=1e-15)
    assert torch.allclose(g["forward"], p - q, atol=1e-15)
    assert torch.allclose(g["k3"], p - q, atol=1e-15)
    assert not torch.allclose(g["k3"], g["reverse"], atol=1e-3)


def test_kl_summary_counts_and_refuses_nothing():
    import torch

    from verifiable_grpo.part1.kl_probe import kl_summary

    s = kl_summary(torch.tensor([0.0, 1e-5, 2e-4, 1e-3], dtype=torch.float64))
    assert s["prefixes"] == 4 and s["max"] == 1e-3 and s["share_above"] == 0.5
    assert abs(s["median"] - (1e-5 + 2e-4) / 2) < 1e-18
    with pytest.raises(ValueError, match="no prefixes"):
        kl_summary(torch.tensor([]))


# --------------------------------------------------------------------------- cost model
def test_qwen_parameter_count_matches_the_architecture():
    """494,032,768: what transformers counts for Qwen2.5-0.5B's config (tied embeddings)."""
    from verifiable_grpo.part1.cost_model import qwen_parameters

    assert qwen_parameters() == 494_032_768


def test_cost_model_by_hand_and_scaling():
    from verifiable_grpo.core.config import load_config
    from verifiable_grpo.part1.cost_model import Gpu, qwen_parameters, stage_estimates

    gpu = Gpu(
        peak_flops=1e12,
        compute_efficiency=1.0,
        bandwidth_bytes=1e9,
        bandwidth_efficiency=1.0,
        prompt_tokens=50,
    )
    rows = {r["stage"]: r for r in stage_estimates(load_config("qwen"), 10.0, gpu)}
    p = qwen_parameters()
    # warm start: 128 examples x 3 epochs x 60 tokens trained, 200 x 3 x 60 validated, twice
    expected = 2 * (6 * p * 128 * 3 * 60 + 2 * p * 200 * 3 * 60) / 1e12
    assert abs(rows["warm-start SFT"]["seconds"] - expected) < 1e-6 * expected
    # evaluation: 5 policies x 200 problems x 5 answers x 10 tokens, 4 bytes per weight per token
    assert abs(rows["evaluation (5 policies)"]["seconds"] - 5 * 200 * 5 * 10 * 4 * p / 1e9) < 1e-3
    faster = {
        r["stage"]: r
        for r in stage_estimates(
            load_config("qwen"),
            10.0,
            Gpu(
                peak_flops=2e12,
                compute_efficiency=1.0,
                bandwidth_bytes=1e9,
                bandwidth_efficiency=1.0,
                prompt_tokens=50,
            ),
        )
    }
    assert abs(faster["further SFT"]["seconds"] * 2 - rows["further SFT"]["seconds"]) < 1e-6


def test_visited_prefix_kl_counts_every_response_token_and_is_zero_against_itself(
    micro_model, one_thread
):
    import copy

    import torch

    from verifiable_grpo.part1.kl_probe import response_prefix_logits, visited_prefix_kl

    model, _ = micro_model
    sequences = [([1, 2, 3], [4, 5]), ([6, 7], [8, 9, 10])]
    logits = response_prefix_logits(model, sequences)
    assert logits.shape[0] == 5 and logits.dtype == torch.float64
    assert torch.equal(
        visited_prefix_kl(model, copy.deepcopy(model), sequences),
        torch.zeros(5, dtype=torch.float64),
    )
    # the logits at prefix t predict token t+1: the first response token's row is the prompt's last position
    with torch.no_grad():
        full = model(torch.tensor([[1, 2, 3, 4, 5]])).logits[0].double()
    assert torch.allclose(logits[:2], full[2:4], atol=1e-6)
