"""The registry's newer axes and entries on tiny hand-computed cases: the surrogate kinds
(cispo, gmpo, sapo, reinforce), the baselines (leave-one-out, batch-normalised, none),
the behaviour corrections (TIS / MIS), bnpo per micro-batch, and the hashes staying put."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from verifiable_grpo.training import baselines, mismatch, objectives, surrogates
from verifiable_grpo.training.objectives import (
    OBJECTIVES,
    AdvantageRule,
    BehaviourCorrection,
    Surrogate,
)

pytestmark = pytest.mark.usefixtures("one_thread")

LENGTHS = [3, 5, 2, 7]
SAMPLE_A = 0.5 / (math.sqrt(1 / 3) + 1e-4)
PART1_SHA256 = "ef2bf299651059b242217fa904f06a7dc3a7a4503c51b6bff6ebe586d9852c38"


def _weights(name, advantages, delta=None, objective=None, **kwargs):
    """w = d(-loss)/d log p per token (NaN on padding), and the loss, for one group of 4."""
    objective = objective or OBJECTIVES[name]
    width = max(LENGTHS)
    mask = torch.arange(width)[None, :] < torch.tensor(LENGTHS)[:, None]
    old = -1.0 - torch.rand(
        4, width, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    old = torch.where(mask, old, torch.tensor(float("nan"), dtype=torch.float64))
    delta = torch.zeros(4, width, dtype=torch.float64) if delta is None else delta
    current = (old.nan_to_num(0.0) + delta).requires_grad_(True)
    loss, audit = objectives.objective_loss(
        objective,
        objectives.TokenLogProbs(current, old, mask),
        torch.tensor(advantages, dtype=torch.float64),
        None,
        objectives.Normalisation(group_size=4, **kwargs),
    )
    loss.backward()
    weights = (-current.grad).where(mask, torch.tensor(float("nan"), dtype=torch.float64))
    return weights, loss, audit, current.detach(), mask


def _row(weights, i):
    return weights[i, : LENGTHS[i]].tolist()


# --------------------------------------------------------------------------- hashes
def test_the_new_axes_at_their_defaults_change_no_hash():
    part1 = OBJECTIVES["part1"]
    assert part1.sha256() == PART1_SHA256
    explicit = dataclasses.replace(part1, surrogate=Surrogate(), correction=BehaviourCorrection())
    assert explicit.sha256() == PART1_SHA256
    assert "surrogate" not in part1.mechanics() and "correction" not in part1.mechanics()
    cispo = OBJECTIVES["cispo"].mechanics()
    assert cispo["surrogate"] == {
        "kind": "cispo",
        "cap": 5.0,
        "temperature_positive": None,
        "temperature_negative": None,
    }
    assert OBJECTIVES["grpo_mis"].mechanics()["correction"] == {
        "kind": "sequence_mask",
        "clip_min": None,
        "clip_max": 3.0,
    }
    # A surrogate differs from the default only in its kind: its own hash.
    assert dataclasses.replace(part1, surrogate=Surrogate("reinforce")).sha256() != PART1_SHA256


def test_a_field_grown_on_a_new_part_keeps_every_hash_and_the_lock(monkeypatch):
    from verifiable_grpo.core.config import resolve
    from verifiable_grpo.part2 import lock as lock_lib

    grown = dataclasses.make_dataclass(
        "SurrogateGrown", [("delta", float | None, None)], bases=(Surrogate,), frozen=True
    )
    before = {name: entry.sha256() for name, entry in OBJECTIVES.items()}
    regrown = {
        name: dataclasses.replace(entry, surrogate=grown(**dataclasses.asdict(entry.surrogate)))
        for name, entry in OBJECTIVES.items()
    }
    assert {name: entry.sha256() for name, entry in regrown.items()} == before
    committed = json.loads(resolve("configs/part2/lock.json").read_text())
    assert lock_lib.lock_differences(committed) == []  # the real registry
    monkeypatch.setattr(lock_lib.objectives, "OBJECTIVES", regrown)
    assert lock_lib.lock_differences(committed) == []  # and the grown one
    two_sided = dataclasses.replace(regrown["grpo"], surrogate=grown(delta=4.0))
    assert two_sided.mechanics()["surrogate"] == {
        "kind": "clipped_ratio",
        "cap": None,
        "temperature_positive": None,
        "temperature_negative": None,
        "delta": 4.0,
    }


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Surrogate("cispo"), "cispo: cap must be a positive number"),
        (lambda: Surrogate("clipped_ratio", cap=2.0), "clipped_ratio takes no cap"),
        (lambda: Surrogate("sapo", temperature_positive=1.0), "both temperatures must be positive"),
        (lambda: Surrogate("gmpo", temperature_negative=1.0), "gmpo takes no temperatures"),
        (lambda: Surrogate("ppo2"), "surrogate 'ppo2' is unknown"),
        (lambda: BehaviourCorrection("token_mask"), "needs clip_min or clip_max"),
        (lambda: BehaviourCorrection("none", clip_max=3.0), "none takes no bounds"),
        (lambda: BehaviourCorrection("token_mask", 4.0, 2.0), "clip_min must be below"),
        (lambda: BehaviourCorrection("token_clip", clip_max=2.0), "'token_clip' is unknown"),
        (lambda: AdvantageRule("leave_one_out", 0, 1e-8), "leave_one_out advantage rule takes no"),
        (lambda: AdvantageRule("batch_normalised", 0, 1e-8, (1.0, 1.0)), "takes no prior"),
        (
            lambda: dataclasses.replace(OBJECTIVES["gmpo"], ratio="sequence"),
            "takes the token ratio",
        ),
    ],
)
def test_a_bad_new_spec_is_refused_by_name(build, message):
    with pytest.raises(ValueError, match=message):
        build()


# --------------------------------------------------------------------------- baselines
def test_the_leave_one_out_baseline():
    values, mean = baselines.leave_one_out_advantages([[1.0, 0.0, 0.0], [2.0, 2.0, 2.0]])
    assert values[0].tolist() == pytest.approx([1.0, -0.5, -0.5], rel=1e-12)
    assert values[1].tolist() == [0.0, 0.0, 0.0] and mean[0].item() == pytest.approx(1 / 3)
    # = G / (G - 1) x (r - mean)
    rewards = torch.tensor([[0.3, 1.0, 0.0, 0.7]], dtype=torch.float64)
    centred, _ = baselines.centred_advantages(rewards)
    torch.testing.assert_close(baselines.leave_one_out_advantages(rewards)[0], centred * 4 / 3)
    with pytest.raises(ValueError, match="at least 2 responses"):
        baselines.leave_one_out_advantages([[1.0]])


def test_the_batch_normalised_baseline_uses_the_whole_batch():
    rewards = torch.tensor([[1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    result = objectives.advantages(OBJECTIVES["reinforce_pp"], rewards)
    # centred [[.5, -.5], [0, 0]], population std over the four: sqrt(0.5 / 4)
    a = 0.5 / (math.sqrt(0.125) + 1e-8)
    assert result.values.tolist() == [pytest.approx([a, -a], rel=1e-12), [0.0, 0.0]]
    assert a == pytest.approx(1.41421, abs=1e-5)
    groups = [
        {"rewards": [1.0, 0.0], "zero_variance": False},
        {"rewards": [1.0, 1.0], "zero_variance": True},
    ]
    with pytest.raises(ValueError, match="use batch_with_advantages"):
        objectives.with_advantages(groups[0], OBJECTIVES["reinforce_pp"])
    scored = objectives.batch_with_advantages(groups, OBJECTIVES["reinforce_pp"])
    assert scored[0]["advantages"] == pytest.approx([a, -a], rel=1e-12)
    assert scored[1]["advantages"] == [0.0, 0.0] and scored[1]["reward_mean"] == 1.0
    # Per group, the same function gives each group its own rule's numbers.
    per_group = objectives.batch_with_advantages(groups, OBJECTIVES["grpo"])
    assert per_group[0]["advantages"] == pytest.approx([0.70700, -0.70700], abs=1e-5)


def test_no_baseline_gives_the_reward_itself():
    result = objectives.advantages(OBJECTIVES["reinforce"], [[1.0, 0.0, 1.0, 1.0]])
    assert result.values.tolist() == [[1.0, 0.0, 1.0, 1.0]] and result.std is None
    # A constant group is NOT silent without a baseline: every token is pushed up.
    assert objectives.advantages(OBJECTIVES["reinforce"], [[1.0] * 4]).values.tolist() == [
        [1.0] * 4
    ]


# --------------------------------------------------------------------------- surrogates
def test_cispo_keeps_a_gradient_where_the_clip_would_remove_it():
    a = SAMPLE_A
    delta = torch.full((4, 7), 0.22, dtype=torch.float64)  # every ratio 1.246
    delta[3] = -0.5  # o4 (A < 0): ratio 0.61
    delta[0, 1] = math.log(6.0)  # above the cap 5
    weights, loss, audit, current, mask = _weights("cispo", [a, -a, a, -a], delta)
    r = math.exp(0.22)
    # Token sum / all 17 tokens of the generation batch; the weight is sg(min(rho, 5)).
    assert _row(weights, 0) == pytest.approx([r * a / 17, 5 * a / 17, r * a / 17], rel=1e-12)
    assert _row(weights, 3) == pytest.approx([-math.exp(-0.5) * a / 17] * 7, rel=1e-12)
    assert _row(weights, 2)[0] == pytest.approx(0.063467, abs=1e-6)
    # grpo on the same tokens gives the positive responses no gradient at all.
    grpo, *_ = _weights("grpo", [a, -a, a, -a], delta)
    assert _row(grpo, 0) == [0.0] * 3 and _row(grpo, 3) == [0.0] * 7
    assert audit["capped_fraction"] == pytest.approx(1 / 17) and audit["active_clip_fraction"] == 0
    ratio = torch.exp(delta).clamp(max=5.0)
    expected = (
        sum(
            float(-(ratio[i, :n] * [a, -a, a, -a][i] * current[i, :n]).sum())
            for i, n in enumerate(LENGTHS)
        )
        / 17
    )
    assert loss.item() == pytest.approx(expected, rel=1e-12)


def test_gmpo_uses_the_geometric_mean_and_clips_in_log_space():
    a = SAMPLE_A
    delta = torch.zeros(4, 7, dtype=torch.float64)
    delta[0, 0] = 0.3  # o1 (A > 0): inside [-0.4, 0.4]
    delta[2, 0] = 0.6  # o3 (A > 0): clipped to 0.4, that token loses its gradient
    delta[1, 0] = -0.6  # o2 (A < 0): clipped to -0.4, loses its gradient
    delta[3, 0] = 0.6  # o4 (A < 0): not clipped (pessimistic side for A < 0)
    weights, loss, audit, *_ = _weights("gmpo", [a, -a, a, -a], delta)
    s1, s3 = math.exp(0.3 / 3), math.exp(0.4 / 2)
    s2, s4 = math.exp(-0.4 / 5), math.exp(0.6 / 7)
    assert _row(weights, 0) == pytest.approx([a * s1 / 12] * 3, rel=1e-12)
    assert _row(weights, 2) == pytest.approx([0.0, a * s3 / 8], rel=1e-12, abs=0)
    assert _row(weights, 1) == pytest.approx([0.0] + [-a * s2 / 20] * 4, rel=1e-12, abs=0)
    assert _row(weights, 3) == pytest.approx([-a * s4 / 28] * 7, rel=1e-12)
    assert loss.item() == pytest.approx(-a * (s1 - s2 + s3 - s4) / 4, rel=1e-12)
    assert audit["geometric_ratio_per_response"].tolist() == pytest.approx([s1, s2, s3, s4])
    assert audit["active_clip_fraction"] == pytest.approx(2 / 17)


def test_sapo_fades_the_gradient_smoothly():
    a = SAMPLE_A
    delta = torch.full((4, 7), math.log(1.5), dtype=torch.float64)  # every ratio 1.5
    weights, loss, _, _, _ = _weights("sapo", [a, -a, a, -a], delta)

    def weight(tau, sign, n):
        sigma = 1 / (1 + math.exp(-tau * 0.5))
        return 4 * sigma * (1 - sigma) * 1.5 * sign * a / (4 * n)

    assert _row(weights, 0) == pytest.approx([weight(1.0, 1, 3)] * 3, rel=1e-12)
    assert _row(weights, 1) == pytest.approx([weight(1.05, -1, 5)] * 5, rel=1e-12)
    assert _row(weights, 0)[0] == pytest.approx(0.101742, abs=1e-6)
    # grpo's hard clip: the positive responses get nothing at ratio 1.5.
    grpo, *_ = _weights("grpo", [a, -a, a, -a], delta)
    assert _row(grpo, 0) == [0.0] * 3
    gate = lambda tau: 4 / tau / (1 + math.exp(-tau * 0.5))
    assert loss.item() == pytest.approx(-a * (gate(1.0) - gate(1.05)) / 2, rel=1e-12)
    # On policy (ratio 1) the gate's slope is 1: grpo's weights exactly.
    on, *_ = _weights("sapo", [a, -a, a, -a])
    on_grpo, *_ = _weights("grpo", [a, -a, a, -a])
    torch.testing.assert_close(on, on_grpo, rtol=1e-12, atol=0, equal_nan=True)


def test_reinforce_ignores_the_ratio():
    delta = torch.randn(4, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    rewards = [1.0, 0.0, 1.0, 1.0]
    weights, loss, _, current, mask = _weights("reinforce", rewards, delta)
    for i, n in enumerate(LENGTHS):
        assert _row(weights, i) == pytest.approx([rewards[i] / (4 * n)] * n, rel=1e-12)
    expected = -sum(rewards[i] * float(current[i, :n].mean()) for i, n in enumerate(LENGTHS)) / 4
    assert loss.item() == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------- corrections
def test_behaviour_weights_truncate_and_mask_as_trl_does():
    trainer = torch.tensor([[0.5, -0.2, 1.5, 0.0]], dtype=torch.float64)
    sampler = torch.tensor([[0.0, 0.0, 0.0, float("nan")]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True, False]])
    e = math.exp
    cases = {
        ("token_truncate", None, 3.0): [e(0.5), e(-0.2), 3.0, 0.0],
        ("token_mask", None, 3.0): [e(0.5), e(-0.2), 0.0, 0.0],
        ("token_mask", 0.9, 3.0): [e(0.5), 0.0, 0.0, 0.0],
        ("token_truncate", 0.9, None): [e(0.5), 0.9, e(1.5), 0.0],
        ("sequence_truncate", None, 3.0): [3.0, 3.0, 3.0, 0.0],
        ("sequence_mask", None, 3.0): [0.0, 0.0, 0.0, 0.0],
        ("sequence_mask", None, 7.0): [e(1.8)] * 3 + [0.0],
    }
    for (mode, low, high), expected in cases.items():
        got = surrogates.behaviour_weights(trainer, sampler, mask, mode, low, high)
        assert got[0].tolist() == pytest.approx(expected, rel=1e-12), mode
    # The mismatch chapter's measurements use this very function (TRL's default cap 3).
    assert mismatch.importance_weights(trainer, sampler, mask)[0].tolist() == [0.0] * 4
    with pytest.raises(ValueError, match="not one of"):
        surrogates.behaviour_weights(trainer, sampler, mask, "token_clip")


def test_a_corrected_entry_divides_by_the_trainer_and_weighs_each_token():
    a = SAMPLE_A
    gap = torch.zeros(4, 7, dtype=torch.float64)
    gap[0, 0], gap[1, :] = 1.5, 0.3  # trainer - sampler, per token
    _, _, _, current, mask = _weights("grpo", [a, -a, a, -a])
    sampler = current - gap
    weights = {}
    for name in ("grpo_tis", "grpo_mis", "grpo"):
        logp = current.clone().requires_grad_(True)
        loss, audit = objectives.objective_loss(
            OBJECTIVES[name],
            objectives.TokenLogProbs(logp, sampler, mask),
            torch.tensor([a, -a, a, -a], dtype=torch.float64),
            None,
            objectives.Normalisation(group_size=4),
        )
        loss.backward()
        weights[name] = -logp.grad
    # TIS: the ratio is 1 (trainer / trainer), each token weighted by min(exp(gap), 3).
    assert weights["grpo_tis"][0, :3].tolist() == pytest.approx(
        [3.0 * a / 12, a / 12, a / 12], rel=1e-12
    )
    assert weights["grpo_tis"][1, :5].tolist() == pytest.approx([-math.exp(0.3) * a / 20] * 5)
    # MIS (sequence, cap 3): o2's summed gap 1.5 -> 4.48 > 3, the whole response is dropped;
    # o1's exp(1.5) too; o3 and o4 keep weight 1.
    assert weights["grpo_mis"][1, :5].tolist() == [0.0] * 5
    assert weights["grpo_mis"][0, :3].tolist() == [0.0] * 3
    assert weights["grpo_mis"][2, :2].tolist() == pytest.approx([a / 8] * 2, rel=1e-12)
    # Uncorrected, the sampler is the ratio's denominator: o1's first token is clipped.
    assert weights["grpo"][0, 0].item() == 0.0
    # An explicit trainer_old (a second update) is the ratio's denominator.
    later = current.clone().requires_grad_(True)
    loss, audit = objectives.objective_loss(
        OBJECTIVES["grpo_tis"],
        objectives.TokenLogProbs(later, sampler, mask),
        torch.tensor([a, -a, a, -a], dtype=torch.float64),
        None,
        objectives.Normalisation(group_size=4),
        trainer_old=current - 0.5,
    )
    assert audit["ratios"][mask].tolist() == pytest.approx([math.exp(0.5)] * 17)


# --------------------------------------------------------------------------- micro-batches
def test_bnpo_per_step_and_per_micro_batch():
    lengths = [[3, 5], [2, 7]]
    assert objectives.response_weights(OBJECTIVES["bnpo"], lengths) == [[1 / 17] * 2] * 2
    assert objectives.response_weights(OBJECTIVES["bnpo"], lengths, micro_batches=2) == [
        [1 / 16] * 2,
        [1 / 18] * 2,
    ]
    assert objectives.response_weights(OBJECTIVES["bnpo"], lengths, micro_batches=4) == [
        [1 / 12, 1 / 20],
        [1 / 8, 1 / 28],
    ]
    # The other reductions do not depend on the split.
    for name in ("grpo", "dapo_token", "cispo"):
        assert objectives.response_weights(
            OBJECTIVES[name], lengths, micro_batches=2
        ) == objectives.response_weights(OBJECTIVES[name], lengths)
    with pytest.raises(ValueError, match="dividing the 4 responses"):
        objectives.response_weights(OBJECTIVES["bnpo"], lengths, micro_batches=3)


def test_masked_normalize_sums_active_entries_over_a_constant():
    from verifiable_grpo.training import losses

    values = torch.tensor([[1.0, 2.0, float("nan")], [3.0, float("inf"), 4.0]])
    mask = torch.tensor([[True, True, False], [True, False, True]])
    assert losses.masked_normalize(values, mask, 4.0).item() == 2.5
    assert losses.masked_normalize(values, mask, 2.0, dim=1).tolist() == [1.5, 3.5]
    assert losses.masked_normalize(values, mask, 2.0, dim=0).tolist() == [2.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="normalize_constant must be positive"):
        losses.masked_normalize(values, mask, 0.0)
