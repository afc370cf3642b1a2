"""Each checker passes a correct solution (written here, independently) and fails specific
wrong ones with the message that names the mistake."""

from __future__ import annotations

import json
import math

import pytest
import torch

from verifiable_grpo import exercises
from verifiable_grpo.exercises import (
    advantages,
    clipping,
    exact_kl,
    group_size,
    grpo_loss,
    mcnemar,
    sft_loss,
)


def _failures(check, fn):
    result = check(fn, verbose=False)
    assert result.attempted and not result.passed
    return "\n".join(result.failures)


# --------------------------------------------------------------------------- machinery
def test_a_stub_is_reported_as_not_attempted(capsys):
    def stub(*args):
        raise NotImplementedError

    result = exercises.check_group_advantages(stub)
    assert not result.attempted and not result.passed and not result
    assert "not attempted yet" in capsys.readouterr().out


def test_an_exception_is_reported_with_its_case_not_raised(capsys):
    def broken(rewards, epsilon):
        raise KeyError("oops")

    result = exercises.check_group_advantages(broken)
    out = capsys.readouterr().out
    assert result.failures and all("raised KeyError" in f for f in result.failures)
    assert f"{len(result.failures)} of {result.cases} cases fail" in out


def test_passing_the_result_of_a_call_instead_of_the_function_is_refused():
    with pytest.raises(TypeError, match="pass your function itself"):
        exercises.check_sft_loss(1.5)


def test_nan_is_only_accepted_where_nan_is_expected():
    from verifiable_grpo.exercises.checking import compare_numbers

    assert compare_numbers([float("nan"), 1.0], [float("nan"), 1.0], 0.0) is None
    assert compare_numbers([0.5, 1.0], [float("nan"), 1.0], 0.0) is not None
    assert compare_numbers([float("nan")], [0.5], 1.0) is not None
    assert compare_numbers([1.0, 2.0], [1.0], 0.0).startswith("shape")


# --------------------------------------------------------------------------- advantages
def good_advantages(rewards, epsilon):
    mean = rewards.mean(dim=1, keepdim=True)
    centred = torch.where(
        (rewards == rewards[:, :1]).all(1, keepdim=True), torch.zeros_like(rewards), rewards - mean
    )
    std = centred.square().mean(dim=1, keepdim=True).sqrt()
    return centred / (std + epsilon)


def test_group_advantages_accepts_a_correct_solution():
    assert exercises.check_group_advantages(good_advantages, verbose=False).passed


def test_group_advantages_names_the_sample_std():
    def sample_std(rewards, epsilon):
        return (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + epsilon)

    assert advantages.SAMPLE_STD in _failures(exercises.check_group_advantages, sample_std)


def test_group_advantages_names_a_missing_epsilon_and_nan_for_constant_groups():
    def no_epsilon(rewards, epsilon):
        centred = rewards - rewards.mean(1, keepdim=True)
        return centred / centred.square().mean(1, keepdim=True).sqrt()

    text = _failures(exercises.check_group_advantages, no_epsilon)
    assert advantages.NO_EPSILON in text and advantages.NAN_FOR_CONSTANT in text


def test_group_advantages_accepts_the_one_ulp_mean_of_a_constant_group():
    # The textbook formula is correct; on [0.1, 0.1, 0.1] its float mean is one ulp above 0.1
    # and its advantages are about 1e-9 instead of 0. The checker accepts that, and still
    # demands exact zeros where the mean is exact (rewards 0 and 1).
    def textbook(rewards, epsilon):
        centred = rewards - rewards.mean(1, keepdim=True)
        return centred / (centred.square().mean(1, keepdim=True).sqrt() + epsilon)

    assert textbook(torch.tensor([[0.1, 0.1, 0.1]], dtype=torch.float64), 1e-8).abs().max() > 0
    assert exercises.check_group_advantages(textbook, verbose=False).passed


def test_group_advantages_names_one_mean_over_the_batch():
    def batch_wide(rewards, epsilon):
        centred = rewards - rewards.mean()
        return centred / (centred.square().mean().sqrt() + epsilon)

    assert advantages.WHOLE_BATCH in _failures(exercises.check_group_advantages, batch_wide)


# --------------------------------------------------------------------------- clipping
def good_clip(ratio, advantage, epsilon):
    return torch.minimum(
        ratio * advantage, torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * advantage
    )


def test_clipped_surrogate_accepts_a_correct_solution():
    assert exercises.check_clipped_surrogate(good_clip, verbose=False).passed


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda r, a, e: torch.clamp(r, 1 - e, 1 + e) * a, clipping.CLIP_ALWAYS),
        (
            lambda r, a, e: torch.maximum(r * a, torch.clamp(r, 1 - e, 1 + e) * a),
            clipping.MAX_NOT_MIN,
        ),
        (lambda r, a, e: torch.clamp(r * a, 1 - e, 1 + e), clipping.CLIPPED_PRODUCT),
    ],
)
def test_clipped_surrogate_names_the_mistake(wrong, hint):
    assert hint in _failures(exercises.check_clipped_surrogate, wrong)


def test_clipped_surrogate_notices_a_detached_ratio():
    def detached(ratio, advantage, epsilon):
        return good_clip(ratio.detach(), advantage, epsilon)

    assert "no gradient reached rho" in _failures(exercises.check_clipped_surrogate, detached)


# --------------------------------------------------------------------------- exact KL
def good_kl(current, reference, block_size):
    def normaliser(z):
        m = z.max(-1, keepdim=True).values
        s = sum(
            torch.exp(z[:, i : i + block_size] - m).sum(-1, keepdim=True)
            for i in range(0, z.shape[-1], block_size)
        )
        return m + torch.log(s)

    cur, ref = normaliser(current), normaliser(reference)
    total = torch.zeros(current.shape[0], dtype=current.dtype)
    for i in range(0, current.shape[-1], block_size):
        log_p, log_q = current[:, i : i + block_size] - cur, reference[:, i : i + block_size] - ref
        p = log_p.exp()
        total = total + torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1)
    return total


def test_exact_kl_accepts_a_correct_solution():
    assert exercises.check_exact_kl(good_kl, verbose=False).passed


def test_exact_kl_names_per_block_normalisation_and_the_reversed_kl():
    def per_block(current, reference, block_size):
        return sum(
            torch.nn.functional.kl_div(
                torch.log_softmax(reference[:, i : i + block_size], -1),
                torch.log_softmax(current[:, i : i + block_size], -1),
                log_target=True,
                reduction="none",
            ).sum(-1)
            for i in range(0, current.shape[-1], block_size)
        )

    assert exact_kl.PER_BLOCK in _failures(exercises.check_exact_kl, per_block)
    assert exact_kl.REVERSED in _failures(
        exercises.check_exact_kl, lambda c, r, b: good_kl(r, c, b)
    )


def test_exact_kl_names_nan_for_a_zero_probability_token():
    def naive(current, reference, block_size):
        log_p, log_q = torch.log_softmax(current, -1), torch.log_softmax(reference, -1)
        return (log_p.exp() * (log_p - log_q)).sum(-1)

    result = exercises.check_exact_kl(naive, verbose=False)
    assert len(result.failures) == 1 and exact_kl.NAN_AT_ZERO in result.failures[0]


# --------------------------------------------------------------------------- reward
def good_reward(text, finish_reason, expected):
    if finish_reason != "eos" or len(text) > 256:
        return 0

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate")
        return dict(pairs)

    def refuse(name):
        raise ValueError(name)

    try:
        value = json.loads(text, object_pairs_hook=no_duplicates, parse_constant=refuse)
    except ValueError:
        return 0
    if (
        type(value) is not dict
        or list(value) != ["final_stock"]
        or type(value["final_stock"]) is not int
    ):
        return 0
    return int(value["final_stock"] == expected)


def test_reward_accepts_a_correct_solution():
    assert exercises.check_reward(good_reward, verbose=False).passed


def test_reward_names_the_rules_a_lenient_parser_breaks():
    def lenient(text, finish_reason, expected):
        try:
            return int(json.loads(text.strip("`json\n ")).get("final_stock") == expected)
        except ValueError:
            return 0

    text = _failures(exercises.check_reward, lenient)
    for hint in (
        "no EOS, no reward",
        "17.0 is a JSON float",
        "true is not an integer",
        "a repeated key is refused",
        "a Markdown fence",
    ):
        assert hint in text


# --------------------------------------------------------------------------- resume
def test_resume_accepts_compare_states_itself_and_names_allclose():
    from verifiable_grpo.core.checkpoint import compare_states

    assert exercises.check_resume(lambda a, b: compare_states(a, b) == [], verbose=False).passed

    def allclose(a, b):
        a, b = dict(a), dict(b)
        a.pop("timings"), b.pop("timings")
        return all(
            torch.allclose(a["model"][k], b["model"][k].to(a["model"][k].dtype)) for k in a["model"]
        )

    text = _failures(exercises.check_resume, allclose)
    assert "allclose/isclose hide a one-ulp difference" in text
    assert "0.0 == -0.0 is True but the bits differ" in text


def test_resume_names_timings_that_were_not_ignored():
    from verifiable_grpo.core.checkpoint import compare_states

    text = _failures(exercises.check_resume, lambda a, b: compare_states(a, b, ignore=()) == [])
    assert "ignore the key 'timings'" in text and "ignore 'timings' at any depth" in text


# --------------------------------------------------------------------------- SFT loss
def good_sft(logprobs, mask):
    return -torch.where(mask, logprobs, torch.zeros_like(logprobs)).sum() / mask.sum()


def test_sft_loss_accepts_a_correct_solution():
    assert exercises.check_sft_loss(good_sft, verbose=False).passed


def test_sft_loss_names_per_example_means_and_multiplying_by_the_mask():
    def per_example(logprobs, mask):
        return (-torch.where(mask, logprobs, 0.0).sum(1) / mask.sum(1)).mean()

    assert sft_loss.PER_EXAMPLE in _failures(exercises.check_sft_loss, per_example)
    assert sft_loss.NAN_MASK in _failures(
        exercises.check_sft_loss, lambda lp, m: -(lp * m).sum() / m.sum()
    )
    assert sft_loss.SIGN in _failures(exercises.check_sft_loss, lambda lp, m: -good_sft(lp, m))


# --------------------------------------------------------------------------- GRPO loss
def good_grpo(current, old, advantages_, mask, kl, group_size_, epsilon, beta):
    ratio = torch.exp(current - old)
    a = advantages_.unsqueeze(1)
    per_token = (
        -torch.minimum(ratio * a, torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * a) + beta * kl
    )
    per_response = torch.where(mask, per_token, 0.0).sum(1) / mask.sum(1)
    return per_response.reshape(-1, group_size_).mean(1).mean()


def test_grpo_loss_accepts_a_correct_solution_and_the_package_objective():
    from verifiable_grpo.training.losses import ClipRange, TokenLogProbs, grpo_objective

    assert exercises.check_grpo_loss(good_grpo, verbose=False).passed

    def package(current, old, adv, mask, kl, g, epsilon, beta):
        return grpo_objective(
            TokenLogProbs(current, old, mask), adv, kl, g, ClipRange(epsilon), beta
        )[0]

    assert exercises.check_grpo_loss(package, verbose=False).passed


def test_grpo_loss_names_a_global_token_mean_and_a_missing_clip():
    def token_mean(current, old, adv, mask, kl, g, epsilon, beta):
        ratio, a = torch.exp(current - old), adv.unsqueeze(1)
        per_token = (
            -torch.minimum(ratio * a, torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * a) + beta * kl
        )
        return torch.where(mask, per_token, 0.0).sum() / mask.sum()

    def no_clip(current, old, adv, mask, kl, g, epsilon, beta):
        return good_grpo(current, old, adv, mask, kl, g, 0.99999999, beta)

    assert grpo_loss.TOKEN_MEAN in _failures(exercises.check_grpo_loss, token_mean)
    assert grpo_loss.KL_SIGN in _failures(
        exercises.check_grpo_loss, lambda c, o, a, m, k, g, e, b: good_grpo(c, o, a, m, -k, g, e, b)
    )
    assert grpo_loss.NO_CLIP in _failures(exercises.check_grpo_loss, no_clip)


# --------------------------------------------------------------------------- McNemar
def good_mcnemar(only_a, only_b):
    n = only_a + only_b
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n)


def test_mcnemar_accepts_a_correct_solution_and_knows_two_values_by_hand():
    assert exercises.check_exact_mcnemar(good_mcnemar, verbose=False).passed
    assert mcnemar.exact_p(0, 6) == 2 / 64 and mcnemar.exact_p(3, 0) == 0.25


def test_mcnemar_names_one_sided_uncapped_and_normal_approximations():
    def one_sided(a, b):
        return good_mcnemar(a, b) / 2

    def uncapped(a, b):
        n = a + b
        return 2 * sum(math.comb(n, k) for k in range(min(a, b) + 1)) / 2**n if n else 1.0

    def normal(a, b):
        return math.erfc(abs(a - b) / math.sqrt(2 * (a + b))) if a + b else 1.0

    assert mcnemar.ONE_SIDED in _failures(exercises.check_exact_mcnemar, one_sided)
    assert mcnemar.UNCAPPED in _failures(exercises.check_exact_mcnemar, uncapped)
    assert mcnemar.NORMAL in _failures(exercises.check_exact_mcnemar, normal)


# --------------------------------------------------------------------------- group size
def test_constant_groups_accepts_the_formula_and_names_the_halves():
    check = exercises.check_constant_group_probability
    assert check(lambda p, g: p**g + (1 - p) ** g, verbose=False).passed
    assert group_size.ALL_WRONG_ONLY in _failures(check, lambda p, g: (1 - p) ** g)
    assert group_size.ALL_RIGHT_ONLY in _failures(check, lambda p, g: p**g)
    assert group_size.COMPLEMENT in _failures(check, lambda p, g: 1 - p**g - (1 - p) ** g)


# --------------------------------------------------------------------------- chapter 10
def test_reported_difference_accepts_the_reference_and_names_mistakes():
    from verifiable_grpo.exercises import selection

    assert exercises.check_reported_difference(selection.reported_difference, verbose=False).passed

    def picks_on_test_always(test, validation, warm_test, select_on_test):
        return selection.reported_difference(test, validation, warm_test, True)

    text = _failures(exercises.check_reported_difference, picks_on_test_always)
    assert selection.WRONG_SELECTION in text

    def forgets_the_warm_start(test, validation, warm_test, select_on_test):
        return selection.reported_difference(test, validation, 0 * warm_test, select_on_test)

    assert selection.NO_BASELINE in _failures(
        exercises.check_reported_difference, forgets_the_warm_start
    )


# --------------------------------------------------------------------------- every other mistake
def _sequence_weights(train, sample, mask, cap, *, per_token=False, leak=False):
    """Sequence-level masked IS written out, with the slips the checker names."""
    active = torch.ones_like(mask) if leak else mask
    log_ratio = torch.where(active, train - sample, torch.zeros_like(train))
    ratio = log_ratio.exp() if per_token else log_ratio.sum(1, keepdim=True).exp()
    return torch.where(active & (ratio <= cap), ratio.expand_as(train), torch.zeros_like(train))


def _segments(ids):
    return torch.tensor(ids)


def _reported(test, validation, warm, select_on_test, *, lowest=False, report_validation=False):
    chooser = (test if select_on_test else validation).mean(1)
    pick = int(chooser.argmin() if lowest else chooser.argmax())
    return float(((validation if report_validation else test)[pick] - warm).mean())


# Each seeded mistake no other test names, made here the way a learner would make it: the
# checker must name it (and, through conftest's fixture, with its margin).
OTHER_MISTAKES = [
    (
        "check_group_advantages",
        lambda r, eps: r - r.mean(1, keepdim=True),
        advantages.NO_STD,
    ),
    (
        "check_grpo_loss",
        lambda c, o, a, m, k, g, e, b: -good_grpo(c, o, a, m, -k, g, e, b),
        grpo_loss.SIGN,
    ),
    (
        "check_sft_loss",
        lambda lp, m: -lp.mean(),
        sft_loss.ALL_POSITIONS,
    ),
    (
        "check_reported_difference",
        lambda t, v, w, s: _reported(t, v, w, s, lowest=True),
        "picked the lowest mean",
    ),
    (
        "check_reported_difference",
        lambda t, v, w, s: _reported(t, v, w, s, report_validation=True),
        "reported the validation difference",
    ),
    (
        "kl_gradients.check_bias_corrected_k3",
        lambda c, r: torch.expm1(c - r) - (c - r),
        "the KL term has the wrong sign",
    ),
    (
        "cispo_loss.check_cispo_loss",
        lambda c, o, a, cap: -torch.exp(c - o).clamp(max=cap) * a[:, None],
        "the loss needs log p itself",
    ),
    (
        "importance_correction.check_sequence_mask",
        lambda t, s, m, cap: _sequence_weights(t, s, m, cap, per_token=True),
        "looks like one ratio per token",
    ),
    (
        "importance_correction.check_sequence_mask",
        lambda t, s, m, cap: _sequence_weights(s, t, m, cap),
        "the ratio is train over sample",
    ),
    (
        "importance_correction.check_sequence_mask",
        lambda t, s, m, cap: _sequence_weights(t, s, m, cap, leak=True),
        "inactive tokens must get weight 0",
    ),
    (
        "packing_mask.check_packing_mask",
        lambda ids: (_segments(ids)[:, None] == _segments(ids)[None, :]) & (_segments(ids) >= 0),
        "looks like whole blocks",
    ),
    (
        "packing_mask.check_packing_mask",
        lambda ids: (_segments(ids)[:, None] == _segments(ids)[None, :]).tril(),
        "padding (segment -1) must attend nothing",
    ),
    (
        "kv_cache.check_kv_cache",
        lambda layers, heads, kv_heads, dim, sequences, tokens: (
            4 * kv_heads * dim * sequences * tokens
        ),
        "forgets that every layer has its own cache",
    ),
]


@pytest.mark.parametrize(
    "check, wrong, hint", OTHER_MISTAKES, ids=[h for _, _, h in OTHER_MISTAKES]
)
def test_every_other_seeded_mistake_is_named(check, wrong, hint):
    import importlib

    module, _, name = check.rpartition(".")
    owner = importlib.import_module(f"verifiable_grpo.exercises.{module}") if module else exercises
    assert hint in _failures(getattr(owner, name), wrong)
