"""The Part III quiz: its keyed answers agree with the package's own computations and
recorded runs, and the checker refuses malformed answers."""

import pytest
import torch

from verifiable_grpo.exercises import quiz
from verifiable_grpo.models import accounting as acc
from verifiable_grpo.part3 import labs, ppo_rlhf
from verifiable_grpo.part3.expert_iteration_lab.group_relative import mixed_group_probability
from verifiable_grpo.part3.merge_lab import merging
from verifiable_grpo.part3.reward_lab.best_of_n import kl_bound

Q = quiz.PART3


def keyed(i):
    question = Q[i - 1]
    return question.choices[quiz.LETTERS.index(question.answer)]


def test_numeric_answers_are_the_package_numbers():
    full = acc.TrainingSetup(method="full")
    assert keyed(1) == f"{7e9 * sum(acc.trained_bytes_per_parameter(full).values()) / 1e9:.0f} GB"
    tiny = acc.ModelShape("t", 1000, 512, 4, 8, 8, 2048, tied=False)
    saving = 1 - acc.flops_per_token(tiny, 1, "lora") / acc.flops_per_token(tiny, 1, "full")
    assert 0.33 < saving < 1 / 3 + 1e-12 and "one third" in keyed(2)
    assert keyed(5) == f"{mixed_group_probability(0.95, 8):.3f}"
    assert keyed(9) == f"{kl_bound(64):.3f}"
    assert torch.equal(merging.adapter_merge_example()["average_of_products"], 0.5 * torch.eye(2))
    assert keyed(7) == "0.5 · I"
    case = next(c for c in ppo_rlhf.clip_cases(0.2) if c["advantage"] < 0 and c["ratio"] == 0.5)
    assert case["gradient"] == 0 and keyed(8).startswith("zero")


def test_recorded_answers():
    off = labs.recorded("dpo")["metrics"]["digits"]["off_policy"][-1]
    assert f"{off['accuracy']:.3f}" in keyed(4)
    flawed = next(r for r in labs.recorded("expert-iteration")["metrics"]["grpo"] if r["substring"])
    last = flawed["records"][-1]
    assert (
        keyed(6)
        == f"acceptance {last['verifier_reward']:.3f} and exact accuracy {last['accuracy']:.3f}"
    )


def test_checker():
    perfect = [q.answer for q in Q]
    assert quiz.check_quiz(Q, perfect) == {
        "right": len(Q),
        "wrong": [],
        "picked": {},
        "skipped": [],
        "of": len(Q),
    }
    answers = ["A" if q.answer != "a" else "b" for q in Q]
    answers[1] = None
    result = quiz.check_quiz(Q, answers)
    assert result["right"] == 0 and result["skipped"] == [2] and len(result["wrong"]) == len(Q) - 1
    assert "0 of 10 right" in quiz.report(result)
    assert result["picked"][1] == answers[0].lower() and 2 not in result["picked"]
    named = quiz.report(result, Q).splitlines()
    assert len(named) == len(Q) and f"question 1: ({answers[0].lower()}) " in named[1]
    assert repr(Q[0].choices[quiz.LETTERS.index(answers[0].lower())]) in named[1]
    with pytest.raises(ValueError, match="answers for"):
        quiz.check_quiz(Q, perfect[:-1])
    with pytest.raises(ValueError, match="answer 3 must be one of"):
        quiz.check_quiz(Q, perfect[:2] + ["e"] + perfect[3:])
    with pytest.raises(ValueError, match="needs 4 choices"):
        quiz.Question("?", ("x", "y", "z", "w"), "e")
    assert quiz.render(Q[:1]).startswith("1. Full fine-tuning")


def test_part1_and_part2_answers_follow_the_config_and_the_code():
    from verifiable_grpo.core.config import load_config
    from verifiable_grpo.part2.analysis import iid_zero_variance_fraction
    from verifiable_grpo.task.verifier import parse_generated_json
    from verifiable_grpo.training.losses import exact_prefix_kl, group_advantages
    from verifiable_grpo.training.objectives import OBJECTIVES

    def key(bank, i):
        q = bank[i - 1]
        return q.choices[quiz.LETTERS.index(q.answer)]

    g = load_config("qwen")["grpo"]
    assert (
        key(quiz.PART1, 1) == f"{g['iterations'] * g['prompts_per_iteration'] * g['group_size']:,}"
    )
    assert key(quiz.PART1, 2) == f"{g['iterations'] * g['updates_per_rollout']:,}"
    rewards = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    assert group_advantages(rewards)[0][0, 0].item() == pytest.approx(1.0, abs=1e-6)
    assert key(quiz.PART1, 4) == f"±{group_advantages(rewards, correction=1)[0][0, 0].item():.3f}"
    assert (
        parse_generated_json('{"final_stock": 5}', "length")["reason"] == "completion_without_eos"
    )
    logits = torch.randn(2, 3, 7)
    assert (exact_prefix_kl(logits, torch.randn(2, 3, 7)) >= 0).all() and "whole vocabulary" in key(
        quiz.PART1, 6
    )
    assert key(quiz.PART2, 1) == f"{iid_zero_variance_fraction(0.5, 4):.3f}"
    dapo = OBJECTIVES["dapo"].clip
    assert key(quiz.PART2, 2) == f"[{1 - dapo.low:.1f}, {1 + dapo.high:.2f}]"
    assert OBJECTIVES["gspo"].ratio == "sequence" and OBJECTIVES["grpo"].ratio == "token"
    assert OBJECTIVES["drgrpo"].advantages.kind == "centred"
    assert key(quiz.PART1, 7) == f"[{1 - g['clip_epsilon']:.1f}, {1 + g['clip_epsilon']:.1f}]"
    assert f"{g['verify_tolerance']:.0e}".replace("e-0", "e-") in key(quiz.PART1, 8)


def test_part2_answers_follow_the_registry_and_the_estimators():
    from verifiable_grpo.part2 import demos
    from verifiable_grpo.training.kl_gradients import estimator_losses
    from verifiable_grpo.training.objectives import OBJECTIVES

    def key(i):
        q = quiz.PART2[i - 1]
        return q.choices[quiz.LETTERS.index(q.answer)]

    # float64 rounding only: 1e-12 is a million times below the off-policy difference
    assert max(demos.placebo_gradients(shift=0.0).values()) < 1e-12 and key(5).startswith("nothing")
    assert max(demos.placebo_gradients(shift=0.3).values()) > 1e-6  # off policy they do act
    assert all(OBJECTIVES[arm].kl.coefficient == 0 for arm in demos.STUDY_ARMS) and key(
        6
    ).startswith("0:")
    assert key(7) == f"{1 / (1 - 0.75):g}"
    current = torch.log_softmax(torch.randn(200), 0)
    values = estimator_losses(current, torch.log_softmax(torch.randn(200), 0))
    assert (values["k3"] >= 0).all() and (values["k1"] < 0).any() and key(8).startswith("k3")
