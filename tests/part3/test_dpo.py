"""Lab 4: the KL-regularised optimum (float64 invariants), the bandit table and the digit
DPO log to every digit the post-training module prints, and bad input."""

import math

import numpy as np
import pytest
import torch

from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.dpo_lab import dpo, dpo_bandit


def test_optimum_maximises_the_regularised_objective():
    log_ref = torch.tensor(dpo_bandit.REFERENCE, dtype=torch.float64).log()
    reward = torch.tensor(dpo_bandit.REWARD, dtype=torch.float64)
    beta = 0.5

    def objective(p):
        return float((p * reward).sum() - beta * (p * (p.log() - log_ref)).sum())

    best = dpo_bandit.kl_regularised_optimum(log_ref, reward, beta)
    # The maximum equals beta log Z (Z = sum pi_ref exp(r/beta)), and any other policy scores lower.
    partition = float((log_ref.exp() * (reward / beta).exp()).sum())
    assert objective(best) == pytest.approx(beta * math.log(partition), abs=1e-14)
    generator = torch.Generator().manual_seed(0)
    for _ in range(20):
        other = torch.softmax(
            best.log() + 0.1 * torch.randn(8, generator=generator, dtype=torch.float64), 0
        )
        assert objective(other) < objective(best)


def test_implicit_reward_of_the_optimum_is_the_true_reward_up_to_a_constant():
    beta = 2.0
    log_ref = torch.tensor(dpo_bandit.REFERENCE, dtype=torch.float64).log()
    reward = torch.tensor(dpo_bandit.REWARD, dtype=torch.float64)
    best = dpo_bandit.kl_regularised_optimum(log_ref, reward, beta)
    np.testing.assert_allclose(
        dpo_bandit.centred_implicit_reward(best, beta), (reward - reward.mean()).numpy(), atol=1e-14
    )


def test_bandit_reproduces_the_module_table():
    result = dpo_bandit.run_bandit()
    assert f"{result['agreement']:.3f}" == "0.679"
    printed = [
        " ".join(
            f"{row[k]:.4f}"
            for k in ("fitted_kl", "exact_kl", "fitted_reward", "exact_reward", "max_error")
        )
        for row in result["rows"]
    ]
    assert printed == [
        "2.4992 2.3783 1.8301 1.8014 0.0451",
        "0.9261 0.8989 1.2872 1.2747 0.0212",
        "0.2162 0.2153 0.8169 0.8165 0.0079",
        "0.0489 0.0489 0.5958 0.5961 0.0034",
    ]
    assert np.round(result["centred_implicit_reward"]["0.5"], 3).tolist() == [
        -0.672,
        -0.166,
        0.275,
        -0.515,
        -1.226,
        0.786,
        0.171,
        1.347,
    ]
    assert np.round(result["centred_true_reward"], 3).tolist() == [
        -0.688,
        -0.188,
        0.312,
        -0.488,
        -1.188,
        0.812,
        0.113,
        1.312,
    ]


def test_dpo_loss_hand_value():
    # margin = 0.5 * ((-1 - -2) - (-3 - -1)) = 1.5 -> loss = log(1 + e^-1.5)
    loss = dpo.dpo_loss(
        torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-2.0]), torch.tensor([-1.0]), 0.5
    )
    assert float(loss) == pytest.approx(math.log1p(math.exp(-1.5)), rel=1e-6)


def test_digit_dpo_reproduces_the_module_log():
    result = dpo.run_digit_dpo()
    assert result["policy_parameters"] == 24043
    assert result["reference"] == {"accuracy": 0.478125, "kl": 0.0, "length": 1.573125}
    assert result["reference_greedy_accuracy"] == 1.0
    assert result["on_policy_pairs"] == 2394
    assert result["example"] == [[0, 0], "0", "01"]
    assert [f"{v:.3f}" for v in result["reference_logp"].values()] == [
        "-0.768",
        "-3.092",
        "-26.365",
    ]
    keys = (
        "loss",
        "margin",
        "pair_accuracy",
        "chosen_ratio",
        "rejected_ratio",
        "accuracy",
        "kl",
        "length",
    )
    logged = {
        name: [" ".join(f"{r[k]:.3f}" for k in keys) for r in result[name][1:]]
        for name in ("on_policy", "off_policy")
    }
    assert logged["on_policy"] == [
        "0.487 0.626 0.944 0.331 -5.927 0.707 0.814 1.346",
        "0.397 0.989 0.975 0.496 -9.394 0.820 0.925 1.409",
        "0.330 1.289 0.986 0.567 -12.325 0.874 0.964 1.426",
    ]
    assert logged["off_policy"] == [
        "0.063 3.028 1.000 -0.960 -31.238 0.221 2.448 1.256",
        "0.028 4.065 1.000 -1.010 -41.658 0.215 2.500 1.249",
        "0.016 4.731 1.000 -0.926 -48.237 0.229 2.375 1.264",
    ]


@pytest.mark.parametrize("beta", [0, -0.1, float("nan"), True, "0.1"])
def test_bad_beta_is_refused(beta):
    with pytest.raises(ValueError, match="beta must be a positive number"):
        dpo_bandit.check_beta(beta)


def test_malformed_pairs_are_refused_before_training():
    prompts = torch.tensor([[1, 2]])
    good = dp.encode_responses(["3"])
    with pytest.raises(ValueError, match="identical chosen and rejected"):
        dpo.check_pairs(prompts, good, good.clone())
    with pytest.raises(ValueError, match=r"shape \(1, 5\)"):
        dpo.check_pairs(prompts, good, good[:, :3])
    with pytest.raises(ValueError, match=r"shape \(N, 2\)"):
        dpo.check_pairs(torch.tensor([1, 2]), good, good)
    with pytest.raises(ValueError, match="outside 0..10"):
        dpo.check_pairs(prompts, good, torch.full((1, 5), 11))
    with pytest.raises(ValueError, match="must be 1 to 4 digits"):
        dp.encode_responses(["12345"])
