"""PPO-RLHF pieces on one episode: hand-computed values, limits of GAE, clip cases."""

import pytest
import torch

from verifiable_grpo.part3 import ppo_rlhf as ppo


def test_kl_shaped_rewards_by_hand():
    rewards = ppo.kl_shaped_rewards(1.0, [-1.0, -2.0], [-1.5, -1.0], beta=0.1)
    assert rewards.tolist() == pytest.approx([-0.05, 1.1])
    with pytest.raises(ValueError, match="differ in length"):
        ppo.kl_shaped_rewards(1.0, [-1.0], [-1.0, -2.0], 0.1)
    with pytest.raises(ValueError, match="beta must be non-negative"):
        ppo.kl_shaped_rewards(1.0, [-1.0], [-1.0], -0.1)


def test_gae_limits():
    rewards, values = [0.0, 0.0, 1.0], [0.2, 0.5, 0.7]
    one_step = ppo.gae(rewards, values, gamma=1.0, lam=0.0)
    assert one_step["advantages"].tolist() == pytest.approx([0.3, 0.2, 0.3])  # the deltas
    monte_carlo = ppo.gae(rewards, values, gamma=1.0, lam=1.0)
    assert monte_carlo["advantages"].tolist() == pytest.approx([0.8, 0.5, 0.3])  # return - V
    assert monte_carlo["returns"].tolist() == pytest.approx([1.0, 1.0, 1.0])
    discounted = ppo.gae([0.0, 1.0], [0.0, 0.0], gamma=0.5, lam=1.0)
    assert discounted["advantages"].tolist() == pytest.approx([0.5, 1.0])
    with pytest.raises(ValueError, match="lam must lie in"):
        ppo.gae(rewards, values, lam=1.5)


def test_clip_cases_stop_pushing_only_past_the_helpful_boundary():
    cases = {(c["advantage"], c["ratio"]): c for c in ppo.clip_cases(0.2)}
    assert (
        cases[(1.0, 1.5)]["objective"] == pytest.approx(1.2) and cases[(1.0, 1.5)]["gradient"] == 0
    )
    assert cases[(1.0, 0.5)]["gradient"] == 1.0  # a helpful move below the interval still pushes
    assert cases[(-1.0, 0.5)]["gradient"] == 0 and cases[(-1.0, 0.5)]["objective"] == pytest.approx(
        -0.8
    )
    assert cases[(-1.0, 1.5)]["gradient"] == -1.0  # a harmful move stays penalised


def test_tabular_step_moves_towards_positive_advantages():
    episode = ppo.Episode([0, 1, 2], [1.0, -1.0, 0.0], [1.0, 0.0, 0.5], [0.0, 0.0, 0.0])
    out = ppo.tabular_ppo_step(torch.zeros(3, 4), episode)
    ratios = out["ratio_after"]
    assert ratios[0] > 1 > ratios[1] and ratios[2] == pytest.approx(1.0)
    assert out["value_loss_after"] < out["value_loss"]
    with pytest.raises(ValueError, match="one action, advantage"):
        ppo.tabular_ppo_step(
            torch.zeros(3, 4), ppo.Episode([0, 1], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0])
        )


def test_models_in_memory():
    kept = ppo.models_in_memory(16, 2, 10)
    assert sum(kept["PPO-RLHF"].values()) == 360 and sum(kept["GRPO"].values()) == 180
    with pytest.raises(ValueError):
        ppo.models_in_memory(16, 2, 0)
