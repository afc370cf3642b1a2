"""Lab 5: sample-std advantages, k3 and the mixed-group probability by hand; expert
iteration and the three GRPO runs to every digit the post-training module prints."""

import math

import pytest
import torch

from verifiable_grpo.part3 import labs
from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.expert_iteration_lab import expert_iteration
from verifiable_grpo.part3.expert_iteration_lab import group_relative as gr
from verifiable_grpo.part3.expert_iteration_lab.settings import ExpertIterationSettings
from verifiable_grpo.training.objectives import OBJECTIVES, KLTerm


def test_sample_std_advantages_by_hand():
    rewards = torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    advantage, sd = gr.group_advantages_sample_std(rewards)
    # mean 1/2, sample std sqrt(1/3): advantages +-(1/2) / (sqrt(1/3) + 1e-6)
    expect = 0.5 / (math.sqrt(1 / 3) + 1e-6)
    assert advantage[0].tolist() == pytest.approx([expect, -expect, expect, -expect], rel=1e-15)
    assert advantage[1].tolist() == [0.0, 0.0, 0.0, 0.0]  # the explicit zero branch
    assert sd.tolist() == pytest.approx([math.sqrt(1 / 3), 0.0], rel=1e-15)


def test_k3_by_hand_and_non_negative():
    log_u = torch.tensor([math.log(0.8), 0.0, math.log(3.0)], dtype=torch.float64)
    values = gr.k3(log_u).tolist()
    assert values == pytest.approx([0.8 - math.log(0.8) - 1, 0.0, 3 - math.log(3) - 1], rel=1e-14)
    assert round(values[0], 4) == 0.0231  # the module's example


def test_mixed_group_probability():
    assert gr.mixed_group_probability(0.5, 2) == 0.5
    assert gr.mixed_group_probability(0.0, 8) == 0.0
    assert gr.mixed_group_probability(0.9, 8) == pytest.approx(1 - 0.9**8 - 0.1**8, abs=1e-16)
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
        gr.train_grpo(reference, gr.GrpoSettings(-0.1))
    with pytest.raises(ValueError, match="group_size must be an integer >= 2"):
        gr.train_grpo(reference, gr.GrpoSettings(0.04, group_size=1))
    with pytest.raises(ValueError, match="rounds must be a positive integer"):
        expert_iteration.expert_iteration(reference, expert_iteration.ExpertSettings(rounds=0))


# Lab 5 samples thousands of tokens from a GRU whose logits differ in the last bits between
# CPUs (Intel and AMD kernels, ATen's default or AVX-512 paths). One flipped draw late in a
# run moves the rows after it: on an Intel Xeon the substring-verifier run ended 0.018 from
# the record in accuracy and length, every earlier row and both other runs equal. The
# record (data/recorded/part3/expert-iteration.json, which the chapter prints and which
# holds the module's figures, tests/part3/test_recorded.py) is therefore compared within
# these tolerances, about three times the largest gap seen; the findings the chapter draws
# from it are checked below as comparisons with wide margins.
LAB5_TOLERANCE = dict(
    sampled_reward=0.06,
    zero_variance=0.2,
    accuracy=0.06,
    kl=0.06,
    length=0.06,
    verifier_reward=0.06,
)


@pytest.fixture(scope="module")
def lab5():
    return gr.run_lab(ExpertIterationSettings(variants=False))


def test_lab5_reruns_the_record_within_kernel_tolerance(lab5):
    recorded = labs.recorded("expert-iteration")["metrics"]
    for mine, theirs in zip(lab5["expert_iteration"], recorded["expert_iteration"], strict=True):
        assert mine["covered_prompts"] == theirs["covered_prompts"] == 100
        assert abs(mine["accepted"] - theirs["accepted"]) <= 16, mine["round"]  # 2 % of 800
        assert abs(mine["accuracy"] - theirs["accuracy"]) <= LAB5_TOLERANCE["accuracy"]
        assert abs(mine["kl"] - theirs["kl"]) <= LAB5_TOLERANCE["kl"]
    for run, record in zip(lab5["grpo"], recorded["grpo"], strict=True):
        assert (run["beta"], run["substring"]) == (record["beta"], record["substring"])
        for mine, theirs in zip(run["records"], record["records"], strict=True):
            assert mine["iteration"] == theirs["iteration"]
            for key, tolerance in LAB5_TOLERANCE.items():
                if theirs.get(key) is not None:
                    assert abs(mine[key] - theirs[key]) <= tolerance, (mine["iteration"], key)


def test_lab5_findings_hold_on_any_cpu(lab5):
    rounds = lab5["expert_iteration"]
    assert rounds[0]["accepted"] < rounds[1]["accepted"] <= rounds[2]["accepted"]
    small, large, flawed = (run["records"][-1] for run in lab5["grpo"])
    # A smaller KL weight drifts further and ends more accurate (0.963 against 0.870).
    assert small["kl"] > large["kl"] and small["accuracy"] > large["accuracy"] + 0.05
    # The substring verifier is gamed: its reward runs well above the true accuracy, and
    # answers grow longer than the honest run's.
    assert flawed["verifier_reward"] > flawed["accuracy"] + 0.1
    assert flawed["length"] > small["length"] + 0.1
    wrong = lab5["grpo"][2]["accepted_but_wrong"]
    assert len(wrong) >= 3
    prompts = torch.tensor([p for p, _, _ in wrong])
    targets = dp.encode_responses([text for _, text, _ in wrong])
    assert gr.verifier_rewards(prompts, targets, substring=True).tolist() == [1.0] * len(wrong)
    assert gr.verifier_rewards(prompts, targets).tolist() == [0.0] * len(wrong)


def test_the_loop_runs_registry_axes_and_refuses_what_it_has_no_arithmetic_for():
    lab = gr.lab_objective(0.04)
    assert (lab.advantages, lab.kl) == (gr.LAB_ADVANTAGES, KLTerm("k3", 0.04))
    gr.check_objective(lab)
    for axis, value in (
        ("ratio", "sequence"),
        ("surrogate", OBJECTIVES["cispo"].surrogate),
        ("advantages", OBJECTIVES["rloo"].advantages),
        ("kl", KLTerm("exact_prefix", 0.02)),
    ):
        with pytest.raises(ValueError, match=f"objective lab5_grpo: {axis}"):
            gr.check_objective(gr.lab_objective(0.04, **{axis: value}))
