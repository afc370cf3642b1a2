"""Our objectives against TRL 1.16's own GRPOTrainer._compute_loss, on identical tensors:
equal loss and equal gradients (float64) for every entry TRL can express, each arm's
GRPOConfig fields, and a clear refusal for what TRL cannot express."""

from __future__ import annotations

import math

import pytest
import torch

from verifiable_grpo.training import losses, objectives, trl_loss, trl_parity
from verifiable_grpo.training.objectives import OBJECTIVES, KLTerm

pytest.importorskip("trl")
pytestmark = pytest.mark.usefixtures("one_thread")

LENGTHS = [3, 5, 2, 7]
# The study's arms and TRL's reductions (the newer entries: test_trl_parity_newer.py).
EXPRESSIBLE = objectives.STUDY_ARMS + objectives.TRL_REDUCTIONS


def _tensors(seed, off_policy):
    generator = torch.Generator().manual_seed(seed)
    width = max(LENGTHS)
    mask = torch.arange(width)[None, :] < torch.tensor(LENGTHS)[:, None]
    old = -0.2 - 2 * torch.rand(4, width, dtype=torch.float64, generator=generator)
    shift = 0.3 * torch.randn(4, width, dtype=torch.float64, generator=generator)
    logp = old + shift if off_policy else old.clone()
    advantages = torch.randn(4, dtype=torch.float64, generator=generator)
    ref = old - 0.1 * torch.rand(4, width, dtype=torch.float64, generator=generator)
    return logp, old, advantages, mask, ref


def _grad(loss_fn, logp):
    current = logp.clone().requires_grad_(True)
    loss = loss_fn(current)
    loss.backward()
    return loss.detach(), current.grad


@pytest.mark.parametrize("off_policy", [False, True])
@pytest.mark.parametrize("name", EXPRESSIBLE)
def test_our_loss_and_gradient_equal_trls(name, off_policy):
    objective = OBJECTIVES[name]
    logp, old, advantages, mask, _ = _tensors(7, off_policy)
    ours, our_grad = _grad(
        lambda c: objectives.objective_loss(
            objective,
            objectives.TokenLogProbs(c, old, mask),
            advantages,
            None,
            objectives.Normalisation(group_size=4, max_length=8),
        )[0],
        logp,
    )
    theirs, their_grad = _grad(
        lambda c: trl_loss.trl_loss(
            objective, objectives.TokenLogProbs(c, old, mask), advantages, max_completion_length=8
        ),
        logp,
    )
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-12, abs=1e-15)
    torch.testing.assert_close(our_grad[mask], their_grad[mask], rtol=1e-12, atol=1e-15)
    assert (their_grad[~mask] == 0).all() and (our_grad[~mask] == 0).all()


def test_a_k3_term_equals_trls_without_its_bias_correction():
    objective = objectives.dataclasses.replace(
        OBJECTIVES["grpo"], name="grpo_k3", kl=KLTerm("k3", 0.04)
    )
    logp, old, advantages, mask, ref = _tensors(3, True)
    kl = lambda c: losses.sampled_kl_estimators(c, ref)["k3"]
    ours, our_grad = _grad(
        lambda c: objectives.objective_loss(
            objective,
            objectives.TokenLogProbs(c, old, mask),
            advantages,
            kl(c),
            objectives.Normalisation(group_size=4),
        )[0],
        logp,
    )
    theirs, their_grad = _grad(
        lambda c: trl_loss.trl_loss(
            objective, objectives.TokenLogProbs(c, old, mask, reference=ref), advantages
        ),
        logp,
    )
    assert trl_parity.trl_arm(objective).config["use_bias_correction_kl"] is False
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-12)
    torch.testing.assert_close(our_grad[mask], their_grad[mask], rtol=1e-12, atol=1e-15)


def test_two_micro_batches_separate_bnpo_from_dapo():
    """Notes T5: micro-batches (o1, o2) = 8 tokens and (o3, o4) = 9 tokens, on policy."""
    a = 0.5 / (math.sqrt(1 / 3) + 1e-4)
    logp, _, _, mask, _ = _tensors(0, False)
    advantages = torch.tensor([a, -a, a, -a], dtype=torch.float64)
    split = [[0, 1], [2, 3]]
    weights = {}
    for name in ("bnpo", "dapo_token", "grpo"):
        _, grad = _grad(
            lambda c, name=name: trl_loss.trl_loss(
                OBJECTIVES[name],
                objectives.TokenLogProbs(c, c.detach(), mask),
                advantages,
                micro_batches=split,
            ),
            logp,
        )
        weights[name] = -grad
    # bnpo: Â / (8 tokens x 2 micro-batches), Â / (9 x 2); dapo: Â / 17 everywhere.
    assert weights["bnpo"][0, :3].tolist() == pytest.approx([0.054117] * 3, abs=1e-6)
    assert weights["bnpo"][2, :2].tolist() == pytest.approx([0.048104] * 2, abs=1e-6)
    assert weights["dapo_token"][mask].abs().tolist() == pytest.approx([0.050934] * 17, abs=1e-6)
    grpo_rows = [weights["grpo"][i, 0].item() for i in range(4)]
    assert grpo_rows == pytest.approx([0.072156, -0.043294, 0.108234, -0.030924], abs=1e-6)
    # Ours: bnpo per micro-batch / 2, dapo with the generation batch's 17 tokens.
    current = logp.clone().requires_grad_(True)
    ours = sum(
        objectives.objective_loss(
            OBJECTIVES["bnpo"],
            objectives.TokenLogProbs(current[i], current[i].detach(), mask[i]),
            advantages[i],
            None,
            objectives.Normalisation(group_size=2),
        )[0]
        / 2
        for i in (torch.tensor(s) for s in split)
    )
    ours.backward()
    torch.testing.assert_close(-current.grad, weights["bnpo"], rtol=1e-12, atol=1e-15)


def test_trls_group_advantages_are_ours_with_the_sample_std():
    from trl.trainer.utils import nanstd

    rewards = torch.tensor(
        [[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0] * 4], dtype=torch.float64
    )
    theirs = (rewards - rewards.mean(1, keepdim=True)) / (nanstd(rewards, dim=1)[:, None] + 1e-4)
    ours = objectives.advantages(OBJECTIVES["grpo"], rewards).values
    # TRL's Bessel factor count / (count - 1) is computed in float32 (integer counts): its
    # advantages are off by ~1.5e-8 relative even in float64; ours are exact.
    torch.testing.assert_close(ours, theirs, rtol=1e-7, atol=0)
    assert ours[0, 0].item() == 0.5 / (math.sqrt(1 / 3) + 1e-4)
    assert ours[0, 0].item() == pytest.approx(0.86588, abs=1e-5)


def test_each_study_arm_has_its_trl_configuration():
    arms = trl_parity.trl_arms()
    assert arms["grpo"].config == {
        "loss_type": "grpo",
        "scale_rewards": "group",
        "importance_sampling_level": "token",
        "epsilon": 0.2,
        "epsilon_high": 0.2,
        "beta": 0.0,
    }
    assert arms["drgrpo"].config["scale_rewards"] == "none"
    assert arms["drgrpo"].config["loss_type"] == "grpo"  # not TRL's dr_grpo
    assert arms["dapo"].config["epsilon_high"] == 0.28
    assert arms["dapo"].config["loss_type"] == "grpo"  # not TRL's dapo
    assert "at most 10 generation batches" in arms["dapo"].subclass
    assert arms["gspo"].config["importance_sampling_level"] == "sequence"
    assert "rescue budget 4" in arms["aero"].subclass
    assert arms["grpo"].subclass is None and arms["gspo"].subclass is None
    assert any("inert on-policy" in n for n in arms["gspo"].notes + arms["dapo"].notes)
    assert trl_parity.trl_arm(OBJECTIVES["dr_grpo"]).config["loss_type"] == "dr_grpo"
    assert trl_parity.trl_arm(OBJECTIVES["dapo_token"]).config["loss_type"] == "dapo"


def test_what_trl_cannot_express_is_refused_by_name():
    logp, old, advantages, mask, _ = _tensors(0, False)
    with pytest.raises(
        trl_parity.NotExpressibleInTRL, match="part1: TRL 1.16.0 has no exact prefix KL"
    ):
        trl_loss.trl_loss(
            OBJECTIVES["part1"], objectives.TokenLogProbs(logp, old, mask), advantages
        )
    population = objectives.dataclasses.replace(
        OBJECTIVES["grpo"],
        name="population",
        advantages=objectives.AdvantageRule("group_std", 0, 1e-8),
    )
    with pytest.raises(ValueError, match="population: TRL 1.16.0 divides by the sample std"):
        trl_parity.trl_arm(population)
