"""Lab 5: sample-std advantages, k3 and the mixed-group probability by hand; expert
iteration and the three GRPO runs to every digit the post-training module prints."""
import math

import pytest
import torch

from verifiable_grpo.part3 import digit_policy as dp
from verifiable_grpo.part3 import expert_iteration, group_relative as gr


def test_sample_std_advantages_by_hand():
    rewards = torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    advantage, sd = gr.group_advantages_sample_std(rewards)
    # mean 1/2, sample std sqrt(1/3): advantages +-(1/2) / (sqrt(1/3) + 1e-6)
    expect = 0.5 / (math.sqrt(1 / 3) + 1e-6)
    assert advantage[0].tolist() == pytest.approx([expect, -expect, expect, -expect], rel=1e-15)
    assert advantage[1].tolist() == [0.0, 0.0, 0.0, 0.0]          # the explicit zero branch
    assert sd.tolist() == pytest.approx([math.sqrt(1 / 3), 0.0], rel=1e-15)


def test_k3_by_hand_and_non_negative():
    log_u = torch.tensor([math.log(0.8), 0.0, math.log(3.0)], dtype=torch.float64)
    values = gr.k3(log_u).tolist()
    assert values == pytest.approx([0.8 - math.log(0.8) - 1, 0.0, 3 - math.log(3) - 1], rel=1e-14)
    assert round(values[0], 4) == 0.0231                            # the module's example


def test_mixed_group_probability():
    assert gr.mixed_group_probability(0.5, 2) == 0.5
    assert gr.mixed_group_probability(0.0, 8) == 0.0
    assert gr.mixed_group_probability(0.9, 8) == pytest.approx(1 - 0.9 ** 8 - 0.1 ** 8, abs=1e-16)
    with pytest.raises(ValueError, match="probability"):
        gr.mixed_group_probability(1.5, 4)
    with pytest.raises(ValueError, match="positive integer"):
        gr.mixed_group_probability(0.5, 0)


def test_substring_verifier_accepts_what_exact_refuses():
    prompts = torch.tensor([[7, 8], [7, 8]])
    targets = dp.encode_responses(["1514", "15"])
    assert gr.verifier_rewards(prompts, targets).tolist() == [0.0, 1.0]
    assert gr.verifier_rewards(prompts, targets, substring=True).tolist() == [1.0, 1.0]


def test_bad_settings_are_refused():
    reference = dp.DigitPolicy()
    with pytest.raises(ValueError, match="beta must be a number >= 0"):
        gr.train_grpo(reference, -0.1)
    with pytest.raises(ValueError, match="group_size must be an integer >= 2"):
        gr.train_grpo(reference, 0.04, group_size=1)
    with pytest.raises(ValueError, match="rounds must be a positive integer"):
        expert_iteration.expert_iteration(reference, rounds=0)


def _log(run):
    keys = ("sampled_reward", "zero_variance", "accuracy", "kl", "length", "verifier_reward")
    return [" ".join(f"{r[k]:.3f}" for k in keys) for r in run["records"][1:]]


def test_lab5_reproduces_the_module_figures():
    result = gr.run_lab(variants=False)
    rounds = [(r["accepted"], r["covered_prompts"], f"{r['accept_rate']:.3f}", f"{r['accuracy']:.3f}",
               f"{r['kl']:.3f}") for r in result["expert_iteration"]]
    assert rounds == [(357, 100, "0.446", "0.973", "0.649"), (774, 100, "0.967", "0.993", "0.726"),
                      (788, 100, "0.985", "0.994", "0.734")]
    small, large, flawed = result["grpo"]
    assert _log(small) == ["0.762 0.031 0.756 0.249 1.469 0.756", "0.828 0.219 0.857 0.393 1.461 0.857",
                           "0.922 0.469 0.909 0.507 1.455 0.909", "0.945 0.625 0.946 0.583 1.452 0.946",
                           "0.977 0.812 0.958 0.611 1.454 0.958", "0.969 0.750 0.963 0.629 1.455 0.963"]
    assert _log(large) == ["0.727 0.031 0.731 0.183 1.497 0.731", "0.766 0.156 0.806 0.272 1.482 0.806",
                           "0.883 0.375 0.843 0.329 1.492 0.843", "0.902 0.469 0.863 0.361 1.489 0.863",
                           "0.875 0.312 0.864 0.360 1.491 0.864", "0.863 0.219 0.870 0.376 1.489 0.870"]
    assert _log(flawed) == ["0.773 0.031 0.695 0.167 1.571 0.776", "0.828 0.281 0.752 0.345 1.603 0.868",
                            "0.934 0.562 0.788 0.487 1.614 0.921", "0.965 0.719 0.815 0.578 1.644 0.953",
                            "0.984 0.875 0.762 0.650 1.741 0.962", "0.965 0.781 0.778 0.647 1.741 0.976"]
    assert flawed["accepted_but_wrong"] == [([0, 0], "09", "0"), ([0, 0], "009", "0"), ([0, 0], "012", "0"),
                                            ([0, 0], "0109", "0"), ([0, 0], "010", "0")]
