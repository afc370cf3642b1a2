"""A GRPO branch on the micro random policy with a working family's thinking prompt and
the answer+format reward: the rewards are the declared terms' weighted totals, each term's
mean is logged apart, the verifier's rewards are kept, and the run's signals are there."""

from __future__ import annotations

import shutil

import pytest

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import ConfigError, load_config
from verifiable_grpo.training import grpo, reward_terms

pytestmark = pytest.mark.usefixtures("one_thread")


def _config(**grpo_changes):
    return load_config("smoke").replaced(
        model={"source": "random"},
        data={"prompt": "CarrySums-v1/think-then-answer"},
        tokens={"max_prompt": 640, "max_response": 8, "max_total": 648},
        grpo={"iterations": 2, "interrupt_at": 1, "reward": "answer+format", **grpo_changes},
    )


def test_a_thinking_branch_logs_its_reward_terms_apart(tmp_path, learning_view_dir):
    config = _config()
    shutil.copytree(learning_view_dir, tmp_path / "learning-data")
    model, _ = model_lib.load_base(config)
    model_lib.save_policy(
        model, tmp_path / "checkpoints/warmstart-resume.safetensors", {"branch": "warmstart"}
    )
    record = grpo.run_grpo_branch(config, tmp_path, mode="continuous", progress=False)
    for entry in record["history"]:
        assert set(entry["mean_reward_terms"]) == {"answer", "format"}
        assert set(entry["signals"]["hack_shares"]) >= {"unclosed_block", "truncated"}
        signals = entry["signals"]
        assert 0.0 <= signals["hack_shares"]["truncated"] <= 1.0
        # Part I's advantages are all 0 exactly when every group is silent
        assert signals["loss_zero_by_construction"] is (signals["silent_group_share"] == 1.0)


def test_the_reward_hook_keeps_the_verifier_and_weighs_the_terms():
    config = _config()
    example = {
        "document_id": "d",
        "problem": {"initial": 7, "deliveries": [5, 0], "withdrawals": [3, 0]},
    }
    right = '<think>7 + 5 = 12. 12 - 3 = 9.</think>\n{"final_stock": 9}'
    group = {
        "document_id": "d",
        "rewards": [0.0, 1.0],
        "zero_variance": False,
        "responses": [
            {"text": right, "finish_reason": "eos"},
            {"text": '{"final_stock": 9}', "finish_reason": "eos"},
        ],
    }
    (out,) = reward_terms.rewarded([group], config, [example])
    assert out["rewards"] == pytest.approx([1.1, 1.0], abs=1e-12)
    assert out["verifier_rewards"] == [0.0, 1.0] and out["zero_variance"] is False
    verifier = config.replaced(grpo={"reward": "verifier"})
    assert reward_terms.rewarded([group], verifier, [example]) == [group]


def test_answer_and_format_needs_a_working_prompt():
    with pytest.raises(ValueError, match="FAMILY/TEMPLATE"):
        reward_terms.rewarded([], _config().replaced(data={"prompt": "one-turn"}), [])
    with pytest.raises(ConfigError):
        load_config("smoke").replaced(grpo={"reward": "no-such-reward"})
