"""The GRPO objective's pieces against hand-derived values and float64 references."""

import math

import pytest
import torch
import torch.nn.functional as F

from verifiable_grpo.training.losses import (
    ClipRange,
    TokenLogProbs,
    clipped_group_surrogate,
    exact_prefix_kl,
    group_advantages,
    grpo_objective,
    masked_token_mean,
    reduce_responses_then_prompts,
    sampled_kl_estimators,
)


# --------------------------------------------------------------------------- advantages
def test_alternating_group_is_close_to_but_not_exactly_plus_minus_one():
    advantages, mean, std = group_advantages(
        torch.tensor([[1.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    )
    expected = 0.5 / (0.5 + 1e-8)  # epsilon is why the integers are not reached
    assert advantages.tolist() == [[expected, -expected, expected, -expected]]
    assert expected != 1.0 and (advantages.abs() < 1).all()
    assert mean.tolist() == [[0.5]] and std.tolist() == [[0.5]]
    assert mean.shape == (1, 1) and std.shape == (1, 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("value", [0.0, 1.0, -1.0, 0.1, 0.3, 2.7, 1 / 3, 1e6 + 0.1])
@pytest.mark.parametrize("group", [2, 3, 4, 7, 8])
def test_constant_groups_give_exactly_zero(dtype, value, group):
    rewards = torch.full((2, group), value, dtype=dtype)
    rewards[1] = 1.0 - rewards[1]  # a second constant group in the same batch
    for correction in (0, 1):
        advantages, _, std = group_advantages(rewards, correction=correction)
        assert (advantages == 0).all() and (std == 0).all()
        assert not torch.signbit(advantages).any()  # +0.0, not -0.0


def test_a_naive_float_mean_of_a_constant_group_is_not_exact():
    # Why group_advantages special-cases constant groups: these means are off by an ulp.
    for dtype, value, group in [(torch.float64, 0.1, 3), (torch.float32, 0.1, 8)]:
        rewards = torch.full((1, group), value, dtype=dtype)
        assert (rewards - rewards.mean(dim=1, keepdim=True)).abs().max() > 0


def test_mixed_batch_keeps_groups_independent():
    rewards = torch.tensor(
        [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [2.0, 2.0, 2.0, 2.0]], dtype=torch.float64
    )
    advantages, mean, _ = group_advantages(rewards)
    std = math.sqrt(3) / 4
    assert advantages[0].tolist() == pytest.approx(
        [0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std], rel=1e-7
    )
    assert advantages[1:].abs().max() == 0
    assert mean.flatten().tolist() == [0.25, 0.0, 2.0]


@pytest.mark.parametrize(
    "rewards, population, sample",
    [
        ([1.0, 0.0, 1.0, 0.0], 1.0, math.sqrt(3) / 2),  # +-1 vs +-0.866
        ([1.0, 0.0], 1.0, math.sqrt(0.5)),  # +-1 vs +-0.707
    ],
)
def test_population_versus_sample_std(rewards, population, sample):
    r = torch.tensor([rewards], dtype=torch.float64)
    pop, _, _ = group_advantages(r, correction=0)
    smp, _, std = group_advantages(r, correction=1)
    sign = torch.tensor([1.0 if x == 1.0 else -1.0 for x in rewards], dtype=torch.float64)
    assert torch.allclose(pop[0], population * sign, atol=1e-7)
    assert torch.allclose(smp[0], sample * sign, atol=1e-7)
    assert torch.allclose(std[0], torch.std(r[0], correction=1))


def test_advantages_are_detached_and_integers_accepted():
    rewards = torch.tensor([[1.0, 0.0]], requires_grad=True)
    advantages, mean, std = group_advantages(rewards)
    assert not advantages.requires_grad and not mean.requires_grad and not std.requires_grad
    ints, _, _ = group_advantages(torch.tensor([[1, 0, 1, 0]]))
    assert ints.is_floating_point()


@pytest.mark.parametrize(
    "rewards, kwargs, message",
    [
        (torch.tensor([1.0, 0.0]), {}, "2-D"),
        (torch.zeros((0, 4)), {}, "at least one"),
        (torch.tensor([[1.0]]), {"correction": 1}, "at least 2"),
        (torch.tensor([[1.0, 0.0]]), {"correction": 2}, "correction"),
        (torch.tensor([[1.0, float("nan")]]), {}, "finite"),
        (torch.tensor([[1.0, 0.0]]), {"epsilon": 0.0}, "epsilon"),
    ],
)
def test_group_advantages_rejects_bad_input(rewards, kwargs, message):
    with pytest.raises(ValueError, match=message):
        group_advantages(rewards, **kwargs)


# --------------------------------------------------------------------------- clipping
RATIOS = [0.5, 0.9, 1.1, 1.5]  # below, inside, inside, above [0.8, 1.2]


def _hand_case(padding_logprob=1000.0):
    """Two responses (A=+1, A=-1), four active tokens with RATIOS, plus one padded token
    whose log-prob is garbage (ratio e^1000 if it leaked in)."""
    old = torch.tensor(
        [[-1.0, -2.0, -0.5, -3.0, 0.0], [-0.7, -1.5, -2.5, -0.2, 0.0]], dtype=torch.float64
    )
    log_rho = torch.tensor(RATIOS + [padding_logprob], dtype=torch.float64).log()
    log_rho[-1] = padding_logprob
    current = (old + log_rho).requires_grad_(True)
    mask = torch.tensor([[True] * 4 + [False]] * 2)
    return current, old, torch.tensor([1.0, -1.0], dtype=torch.float64), mask


def test_clipped_surrogate_values_and_branch_gradients():
    current, old, advantages, mask = _hand_case()
    loss, audit = clipped_group_surrogate(
        TokenLogProbs(current, old, mask), advantages, ClipRange(0.2)
    )
    # A > 0: min(rho, clip(rho)) -> 0.5, 0.9, 1.1, 1.2 (the last is clipped)
    # A < 0: min(-rho, -clip(rho)) -> -0.8 (clipped), -0.9, -1.1, -1.5
    assert loss.tolist() == pytest.approx(
        [-(0.5 + 0.9 + 1.1 + 1.2) / 4, (0.8 + 0.9 + 1.1 + 1.5) / 4], rel=1e-12
    )
    loss.sum().backward()
    # d loss / d current = -rho * A / T on the unclipped branch, exactly 0 on the clipped one
    expected = torch.tensor(
        [[-0.5 / 4, -0.9 / 4, -1.1 / 4, 0.0, 0.0], [0.0, 0.9 / 4, 1.1 / 4, 1.5 / 4, 0.0]],
        dtype=torch.float64,
    )
    assert torch.allclose(current.grad, expected, atol=1e-12, rtol=0)
    assert current.grad[0, 3] == 0 and current.grad[1, 0] == 0 and (current.grad[:, 4] == 0).all()
    assert torch.isfinite(current.grad).all()


def test_clip_audit_fractions_on_the_hand_case():
    current, old, advantages, mask = _hand_case()
    _, audit = clipped_group_surrogate(TokenLogProbs(current, old, mask), advantages)
    assert audit["clip_low_fraction"] == pytest.approx(1 / 8)  # rho 0.5 with A < 0
    assert audit["clip_high_fraction"] == pytest.approx(1 / 8)  # rho 1.5 with A > 0
    assert audit["active_clip_fraction"] == pytest.approx(2 / 8)
    assert audit["outside_fraction"] == pytest.approx(4 / 8)  # 0.5 and 1.5 in both rows
    assert audit["mean_ratio"] == pytest.approx(sum(RATIOS) / 4)
    assert audit["active_tokens"] == 8
    assert audit["active_clip_fraction_per_response"].tolist() == [0.25, 0.25]
    assert audit["outside_fraction_per_response"].tolist() == [0.5, 0.5]
    assert torch.allclose(audit["ratios"][:, :4], torch.tensor([RATIOS] * 2, dtype=torch.float64))
    assert (audit["ratios"][:, 4] == 1).all() and not audit["ratios"].requires_grad


def test_clip_higher_keeps_the_gradient_of_a_positive_advantage_longer():
    old = torch.zeros(1, 1, dtype=torch.float64)
    for high, expected_grad in [(None, 0.0), (0.28, -1.25)]:
        current = torch.tensor([[math.log(1.25)]], dtype=torch.float64, requires_grad=True)
        loss, audit = clipped_group_surrogate(
            TokenLogProbs(current, old, torch.ones(1, 1, dtype=torch.bool)),
            torch.tensor([1.0], dtype=torch.float64),
            ClipRange(0.2, high),
        )
        loss.sum().backward()
        assert current.grad.item() == pytest.approx(expected_grad, abs=1e-12)
        assert audit["clip_high_fraction"] == (1.0 if high is None else 0.0)


def test_on_policy_ratio_is_one_and_zero_advantage_has_no_gradient():
    old = torch.full((3, 2), -0.7, dtype=torch.float64)
    current = old.clone().requires_grad_(True)
    loss, audit = clipped_group_surrogate(
        TokenLogProbs(current, old, torch.ones(3, 2, dtype=torch.bool)),
        torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64),
    )
    loss.sum().backward()
    assert (audit["ratios"] == 1).all() and audit["outside_fraction"] == 0
    assert current.grad.tolist() == [[-0.5, -0.5], [0.5, 0.5], [0.0, 0.0]]
    assert loss.tolist() == [-1.0, 1.0, 0.0]


def test_old_logprobs_receive_no_gradient():
    current = torch.zeros(1, 2, requires_grad=True)
    old = torch.zeros(1, 2, requires_grad=True)
    loss, _ = clipped_group_surrogate(
        TokenLogProbs(current, old, torch.ones(1, 2)), torch.tensor([1.0])
    )
    loss.sum().backward()
    assert old.grad is None and current.grad is not None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"old": torch.zeros(2, 3)}, "old log-probs shape"),
        ({"advantages": torch.zeros(2, 1)}, "advantages must be"),
        ({"mask": torch.tensor([[True, True], [False, False]])}, "at least one active token"),
        ({"mask": torch.ones(2, 3, dtype=torch.bool)}, "mask shape"),
        ({"clip_epsilon": 1.5}, "clip_epsilon"),
        ({"current": torch.zeros(2)}, r"\[B, T\]"),
    ],
)
def test_clipped_surrogate_rejects_bad_input(change, message):
    args = {
        "current": torch.zeros(2, 2),
        "old": torch.zeros(2, 2),
        "advantages": torch.zeros(2),
        "mask": torch.ones(2, 2, dtype=torch.bool),
        "clip_epsilon": 0.2,
    }
    args.update(change)
    with pytest.raises(ValueError, match=message):
        clipped_group_surrogate(
            TokenLogProbs(args["current"], args["old"], args["mask"]),
            args["advantages"],
            ClipRange(args["clip_epsilon"]),
        )


# --------------------------------------------------------------------------- exact KL
def _kl_div_reference(current, reference):
    """KL(p_cur || p_ref) with PyTorch's own kl_div (input = log q, target = log p)."""
    return F.kl_div(
        F.log_softmax(reference, -1), F.log_softmax(current, -1), log_target=True, reduction="none"
    ).sum(-1)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
@pytest.mark.parametrize(
    "shape, block",
    [((2, 3, 10), 3), ((1, 2, 4096 + 7), 4096), ((5, 10), 1), ((4, 10), 64), ((3, 10), 10)],
)
def test_exact_kl_matches_kl_div_values_and_gradients(dtype, tolerance, shape, block):
    generator = torch.Generator().manual_seed(sum(shape) + block)
    current = (2 * torch.randn(shape, generator=generator, dtype=dtype)).requires_grad_(True)
    reference = 2 * torch.randn(shape, generator=generator, dtype=dtype)
    weights = torch.rand(
        shape[:-1], generator=generator, dtype=dtype
    )  # a non-trivial upstream gradient

    ours = exact_prefix_kl(current, reference, block)
    (ours * weights).sum().backward()
    ours_grad, current.grad = current.grad, None
    theirs = _kl_div_reference(current, reference)
    (theirs * weights).sum().backward()

    assert ours.shape == shape[:-1] and ours.dtype == dtype
    assert torch.allclose(ours, theirs, atol=tolerance, rtol=tolerance)
    assert torch.allclose(ours_grad, current.grad, atol=tolerance, rtol=tolerance)


def test_exact_kl_passes_gradcheck():
    generator = torch.Generator().manual_seed(3)
    current = torch.randn(2, 7, generator=generator, dtype=torch.float64, requires_grad=True)
    reference = torch.randn(2, 7, generator=generator, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda x: exact_prefix_kl(x, reference, 3), (current,))


@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-14), (torch.float32, 1e-6)])
def test_kl_of_a_distribution_with_itself_is_zero(dtype, tolerance):
    logits = 3 * torch.randn(4, 4096 + 7, generator=torch.Generator().manual_seed(1), dtype=dtype)
    current = logits.clone().requires_grad_(True)
    kl = exact_prefix_kl(current, logits, 4096)
    kl.sum().backward()
    assert kl.abs().max() < tolerance and current.grad.abs().max() < tolerance
    # a shift of every logit is the same distribution
    assert exact_prefix_kl(logits + 7.0, logits, 3).abs().max() < 10 * tolerance


def test_exact_kl_is_stable_for_large_float32_logits():
    generator = torch.Generator().manual_seed(2)
    base = torch.randn(3, 50, generator=generator)
    current32 = (base + 1e4).requires_grad_(True)
    reference32 = torch.randn(3, 50, generator=generator) - 1e4
    kl = exact_prefix_kl(current32, reference32, 7)
    kl.sum().backward()
    # the float64 value of the very same (rounded) float32 inputs
    current64 = current32.detach().double().requires_grad_(True)
    expected = _kl_div_reference(current64, reference32.double())
    expected.sum().backward()
    assert torch.isfinite(kl).all() and torch.isfinite(current32.grad).all()
    assert torch.allclose(kl.double(), expected, atol=1e-5, rtol=1e-5)
    assert torch.allclose(current32.grad.double(), current64.grad, atol=1e-6)
    # a naive float32 logsumexp of numbers near 1e4 is only good to about a float32 ulp (1e-3)
    assert torch.allclose(
        kl.double(), _kl_div_reference(base.double(), reference32.double() + 1e4), atol=1e-2
    )


def test_normalising_each_block_separately_gives_a_different_value():
    generator = torch.Generator().manual_seed(4)
    current = torch.randn(3, 10, generator=generator, dtype=torch.float64)
    reference = torch.randn(3, 10, generator=generator, dtype=torch.float64)

    def wrong_blockwise_kl(block):
        total = torch.zeros(3, dtype=torch.float64)
        for start in range(0, 10, block):
            log_p = F.log_softmax(
                current[:, start : start + block], -1
            )  # normalised per block: wrong
            log_q = F.log_softmax(reference[:, start : start + block], -1)
            total += (log_p.exp() * (log_p - log_q)).sum(-1)
        return total

    right = exact_prefix_kl(current, reference, 3)
    assert torch.allclose(right, _kl_div_reference(current, reference), atol=1e-12)
    assert (wrong_blockwise_kl(3) - right).abs().min() > 1e-2
    assert torch.allclose(
        wrong_blockwise_kl(10), right, atol=1e-12
    )  # one block is the whole vocabulary


def test_negative_infinite_current_logits_are_zero_probability():
    generator = torch.Generator().manual_seed(5)
    current = torch.randn(2, 9, generator=generator, dtype=torch.float64)
    reference = torch.randn(2, 9, generator=generator, dtype=torch.float64)
    current[:, [1, 4, 8]] = float("-inf")
    support = [0, 2, 3, 5, 6, 7]
    log_p = F.log_softmax(current[:, support], -1)
    log_q = F.log_softmax(reference, -1)[:, support]
    expected = (log_p.exp() * (log_p - log_q)).sum(-1)
    leaf = current.clone().requires_grad_(True)
    kl = exact_prefix_kl(leaf, reference, 4)
    kl.sum().backward()
    assert torch.allclose(kl, expected, atol=1e-12)
    assert torch.isfinite(leaf.grad).all() and (leaf.grad[:, [1, 4, 8]] == 0).all()


def test_reference_is_treated_as_a_constant():
    current = torch.randn(2, 5, requires_grad=True)
    reference = torch.randn(2, 5, requires_grad=True)
    exact_prefix_kl(current, reference, 2).sum().backward()
    assert reference.grad is None and current.grad is not None


@pytest.mark.parametrize(
    "current, reference, block, message",
    [
        (torch.zeros(2, 5), torch.zeros(2, 4), 2, "shape"),
        (torch.zeros(2, 5), torch.zeros(2, 5), 0, "block_size"),
        (torch.tensor([[0.0, float("nan")]]), torch.zeros(1, 2), 2, "NaN"),
        (torch.tensor([[0.0, float("inf")]]), torch.zeros(1, 2), 2, r"\+inf"),
        (torch.full((1, 2), float("-inf")), torch.zeros(1, 2), 2, "every entry is -inf"),
        (torch.zeros(2, 0), torch.zeros(2, 0), 2, "vocabulary"),
    ],
)
def test_exact_kl_rejects_bad_input(current, reference, block, message):
    with pytest.raises(ValueError, match=message):
        exact_prefix_kl(current, reference, block)


# --------------------------------------------------------------------------- sampled KL
def test_sampled_estimators_on_a_hand_value():
    estimates = sampled_kl_estimators(
        torch.tensor([math.log(0.5)], dtype=torch.float64),
        torch.tensor([math.log(0.25)], dtype=torch.float64),
    )
    log_r = math.log(0.5)  # r = ref / cur = 0.5
    assert estimates["k1"].item() == pytest.approx(-log_r)
    assert estimates["k2"].item() == pytest.approx(log_r**2 / 2)
    assert estimates["k3"].item() == pytest.approx(0.5 - 1 - log_r)


@pytest.mark.parametrize("spread", [1.0, 0.1])  # far apart, then close distributions
def test_k1_and_k3_means_approach_the_exact_kl(spread):
    generator = torch.Generator().manual_seed(6)
    current_logits = torch.randn(8, generator=generator, dtype=torch.float64)
    reference_logits = current_logits + spread * torch.randn(
        8, generator=generator, dtype=torch.float64
    )
    exact = exact_prefix_kl(current_logits, reference_logits, 3).item()
    log_p, log_q = F.log_softmax(current_logits, -1), F.log_softmax(reference_logits, -1)
    tokens = torch.multinomial(
        log_p.exp(), 200_000, replacement=True, generator=generator
    )  # drawn from p
    estimates = sampled_kl_estimators(log_p[tokens], log_q[tokens])
    for name in ("k1", "k3"):
        values = estimates[name]
        standard_error = values.std().item() / math.sqrt(values.numel())
        assert abs(values.mean().item() - exact) < 4 * standard_error, name
    assert (estimates["k3"] >= 0).all() and (estimates["k1"] < 0).any()
    if spread < 1:  # near the reference, k3 has far less variance than k1
        assert estimates["k3"].std() < 0.2 * estimates["k1"].std()


def test_sampled_estimators_reject_mismatched_shapes():
    with pytest.raises(ValueError, match="shapes differ"):
        sampled_kl_estimators(torch.zeros(3), torch.zeros(4))


# --------------------------------------------------------------------------- reductions
def test_masked_token_mean_ignores_inactive_tokens_even_when_not_finite():
    values = torch.tensor([[1.0, 2.0, float("inf")], [4.0, float("nan"), 6.0]])
    mask = torch.tensor([[True, True, False], [True, False, True]])
    assert masked_token_mean(values, mask).tolist() == [1.5, 5.0]
    with pytest.raises(ValueError, match="empty rows: \\[1\\]"):
        masked_token_mean(values, torch.tensor([[True, False, False], [False, False, False]]))


def test_reduce_responses_then_prompts_shapes_and_errors():
    flat = torch.tensor([1.0, 3.0, 0.0, 8.0, 4.0, 4.0], dtype=torch.float64)
    assert reduce_responses_then_prompts(flat, 2).item() == pytest.approx((2 + 4 + 4) / 3)
    assert reduce_responses_then_prompts(flat.reshape(3, 2)).item() == pytest.approx(10 / 3)
    with pytest.raises(ValueError, match="do not split"):
        reduce_responses_then_prompts(flat, 4)
    with pytest.raises(ValueError, match="group_size"):
        reduce_responses_then_prompts(flat)


def test_reduction_order_differs_from_a_flat_token_mean():
    # one prompt, two responses: one token of value 1, three tokens of value 0
    values = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, False, False], [True, True, True]])
    grpo = reduce_responses_then_prompts(masked_token_mean(values, mask), 2)
    flat = values[mask].mean()
    assert grpo.item() == 0.5 and flat.item() == 0.25  # the short response is not outweighed


def test_grpo_objective_combines_both_terms_with_the_same_reduction():
    # two prompts of two responses, unequal lengths, on-policy (ratio 1) so the surrogate is -A
    current = torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor(
        [[True, False, False], [True, True, True], [True, True, False], [True, True, True]]
    )
    advantages = torch.tensor([1.0, -1.0, 0.5, 0.5], dtype=torch.float64)
    kl = torch.tensor(
        [[4.0, 9.0, 9.0], [1.0, 2.0, 3.0], [2.0, 0.0, 9.0], [3.0, 3.0, 3.0]], dtype=torch.float64
    )
    loss, audit = grpo_objective(
        TokenLogProbs(current, current.detach(), mask),
        advantages,
        kl,
        group_size=2,
        clip=ClipRange(0.2),
        kl_coefficient=0.02,
    )
    surrogate = ((-1 + 1) / 2 + (-0.5 - 0.5) / 2) / 2  # -0.25
    kl_reduced = ((4 + 2) / 2 + (1 + 3) / 2) / 2  # 2.5
    assert loss.item() == pytest.approx(surrogate + 0.02 * kl_reduced, rel=1e-12)
    assert audit["surrogate"] == pytest.approx(surrogate) and audit["kl"] == pytest.approx(
        kl_reduced
    )
    loss.backward()
    # response 0 (1 token, A=1, prompt weight 1/2, response weight 1/2): d/d current = -1 / 4
    assert current.grad[0].tolist() == pytest.approx([-0.25, 0.0, 0.0])
    assert current.grad[1].tolist() == pytest.approx([0.25 / 3] * 3)
    batch = TokenLogProbs(current, current.detach(), mask)
    no_kl, _ = grpo_objective(batch, advantages, None, 2, ClipRange(0.2), 0.0)
    assert no_kl.item() == pytest.approx(surrogate)
    with pytest.raises(ValueError, match="kl_coefficient"):
        grpo_objective(batch, advantages, None, 2, ClipRange(0.2), 0.02)
