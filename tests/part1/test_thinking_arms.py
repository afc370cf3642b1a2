"""The comparison's runs at smoke scale: the micro random policy on the tiny tokenizer,
both arms, one seed, two iterations; each arm's gain paired by problem."""

from __future__ import annotations

import pytest

from verifiable_grpo.part1 import thinking_arms, thinking_comparison
from verifiable_grpo.task.thinking_template import ANSWER_ONLY, THINK_THEN_ANSWER

pytestmark = pytest.mark.usefixtures("one_thread")


def test_both_arms_run_and_pair_at_smoke_scale(tmp_path, random_config):
    declared = thinking_comparison.load()
    declared["grpo"].update(iterations=2, prompts_per_iteration=2, group_size=2)
    declared["test"].update(problems=2, draws=2)
    base = random_config.replaced(tokens={"max_prompt": 640, "max_response": 6, "max_total": 646})
    result = thinking_arms.run(declared, tmp_path, [1], base)
    for arm in (ANSWER_ONLY, THINK_THEN_ANSWER):
        seed = result["arms"][arm]["seeds"]["1"]
        assert seed["gain"]["problems"] == 2
        assert len(seed["trained_rows"]) == len(result["arms"][arm]["untrained_rows"]) == 4
        assert len(seed["history"]) == 2
    think = result["arms"][THINK_THEN_ANSWER]["seeds"]["1"]["history"][0]
    assert set(think["mean_reward_terms"]) == {"answer", "format"}
    answer = result["arms"][ANSWER_ONLY]["seeds"]["1"]["history"][0]
    assert "mean_reward_terms" not in answer  # the verifier's reward, as every earlier run
    assert set(result["think_minus_answer_only"]["1"]) == {"gain_difference", "wall_time_ratio"}


def test_the_arm_profiles_differ_only_in_template_and_reward():
    declared = thinking_comparison.load()
    a = thinking_arms.arm_config(declared, ANSWER_ONLY, 1)
    t = thinking_arms.arm_config(declared, THINK_THEN_ANSWER, 1)
    assert a.grpo.reward == "verifier" and t.grpo.reward == "answer+format"
    assert a.data.prompt == "CarrySums-v1/answer-only"
    for key in ("iterations", "group_size", "learning_rate", "prompts_per_iteration"):
        assert getattr(a.grpo, key) == getattr(t.grpo, key) == declared["grpo"][key]
    assert t.tokens.max_response > a.tokens.max_response
