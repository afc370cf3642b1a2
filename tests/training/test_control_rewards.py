"""The control rewards: the random coin ignores the answer and is reproducible from the
seed and the rollout id; the format reward pays a wrong number in good JSON and nothing
for a malformed answer; the verifier's groups pass unchanged."""

from __future__ import annotations

import pytest

from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.task import small_sums, verifier
from verifiable_grpo.training import control_rewards
from verifiable_grpo.training.grpo_record import group_record, history_entry

PROBLEM = small_sums.problem_of("+", 3, 4)  # the answer is 7


def _group(texts, iteration=0, prompt=0):
    group_id = f"grpo/iteration-{iteration:04d}/prompt-{prompt:02d}"
    responses = []
    for member, text in enumerate(texts):
        verdict = verifier.score_generated_json(text, "eos", PROBLEM)
        responses.append(
            {
                "rollout_id": f"{group_id}/response-{member:02d}",
                "text": text,
                "finish_reason": "eos",
                "response_tokens": 5,
                "tokenization_valid": True,
                "verifier": verdict,
            }
        )
    rewards = [float(r["verifier"]["reward"]) for r in responses]
    return {
        "group_id": group_id,
        "document_id": "ss-train-0000",
        "responses": responses,
        "rewards": rewards,
        "zero_variance": len(set(rewards)) == 1,
    }


RIGHT, WRONG, MALFORMED = '{"final_stock": 7}', '{"final_stock": 9}', "seven"


def _config(smoke_config, reward, seed=1234, rate=0.5):
    return smoke_config.replaced(seed=seed, grpo={"reward": reward, "reward_rate": rate})


def test_the_verifier_arm_leaves_the_groups_as_they_were(smoke_config):
    groups = [_group([RIGHT, WRONG, MALFORMED])]
    assert smoke_config.grpo.reward == "verifier"  # absent from every profile: the default
    assert control_rewards.rewarded(groups, smoke_config) is groups


def test_the_format_reward_pays_a_wrong_number_and_refuses_malformed(smoke_config):
    config = _config(smoke_config, "format")
    (group,) = control_rewards.rewarded([_group([RIGHT, WRONG, MALFORMED, WRONG])], config)
    assert group["rewards"] == [1.0, 1.0, 0.0, 1.0]
    assert group["verifier_rewards"] == [1.0, 0.0, 0.0, 0.0]
    assert group["reward_kind"] == "format" and not group["zero_variance"]
    (same,) = control_rewards.rewarded([_group([WRONG, RIGHT])], config)
    assert same["zero_variance"]  # both well formed: constant under this reward


def test_the_random_reward_ignores_the_answer_and_is_reproducible(smoke_config):
    config = _config(smoke_config, "random")
    texts = [RIGHT, WRONG, MALFORMED, RIGHT, WRONG, MALFORMED, RIGHT, WRONG]
    first = control_rewards.rewarded([_group(texts, iteration=3, prompt=1)], config)[0]
    other_answers = control_rewards.rewarded([_group(texts[::-1], iteration=3, prompt=1)], config)
    assert first["rewards"] == other_answers[0]["rewards"]  # same ids, other answers
    again = control_rewards.rewarded([_group(texts, iteration=3, prompt=1)], config)[0]
    assert again["rewards"] == first["rewards"]  # a resumed run gets the same coins
    reseeded = control_rewards.rewarded([_group(texts, 3, 1)], _config(smoke_config, "random", 7))
    later = control_rewards.rewarded([_group(texts, iteration=4, prompt=1)], config)
    assert {tuple(reseeded[0]["rewards"]), tuple(later[0]["rewards"])} != {tuple(first["rewards"])}


@pytest.mark.parametrize("rate", [0.5, 0.2])
def test_the_coin_lands_at_its_declared_rate(rate):
    coins = [control_rewards.coin(1234, f"grpo/iteration-{i:04d}/p/r", rate) for i in range(4000)]
    assert set(coins) == {0.0, 1.0}
    assert abs(sum(coins) / len(coins) - rate) < 0.03  # 4,000 coins: sd about 0.008


def test_a_control_run_records_how_often_it_was_right(smoke_config):
    config = _config(smoke_config, "format")
    group = control_rewards.rewarded([_group([RIGHT, WRONG])], config)[0]
    group.update(advantages=[1.0, -1.0], reward_std=0.0)
    assert group_record(group)["verifier_rewards"] == [1.0, 0.0]
    update = {k: 0.0 for k in ("mean_exact_kl", "mean_entropy", "clip_low_fraction")}
    update.update(clip_high_fraction=0.0, grad_norm=0.0, learning_rate=1e-6, loss=0.0)
    entry = history_entry(0, [group], "d", {"max_abs_difference": 0.0}, [update])
    assert entry["mean_reward"] == 1.0 and entry["mean_verifier_reward"] == 0.5
    plain = _group([RIGHT, WRONG]) | {"advantages": [1.0, -1.0], "reward_std": 0.5}
    entry = history_entry(0, [plain], "d", {"max_abs_difference": 0.0}, [update])
    assert "mean_verifier_reward" not in entry  # a verifier run's record keeps its keys
    assert "verifier_rewards" not in group_record(plain)


def test_the_schema_names_an_unknown_reward_and_a_rate_outside_zero_one(smoke_config):
    with pytest.raises(ConfigError, match="grpo.reward"):
        smoke_config.replaced(grpo={"reward": "length"})
    with pytest.raises(ConfigError, match="grpo.reward_rate"):
        smoke_config.replaced(grpo={"reward": "random", "reward_rate": 1.5})


def test_a_random_reward_run_resumes_bit_for_bit(tmp_path, learning_view_dir, one_thread):
    """Interrupted and resumed under the random reward, the run ends in the same state as
    an uninterrupted one: the coins depend on seed and rollout id only."""
    import shutil

    from verifiable_grpo.core import checkpoint
    from verifiable_grpo.core import model as model_lib
    from verifiable_grpo.core.config import load_config
    from verifiable_grpo.core.runfolder import MODES
    from verifiable_grpo.training import grpo

    config = load_config("smoke").replaced(
        model={"source": "random"}, grpo={"reward": "random", "reward_rate": 0.5}
    )
    shutil.copytree(learning_view_dir, tmp_path / "learning-data")
    model, _ = model_lib.load_base(config)
    model_lib.save_policy(model, tmp_path / "checkpoints/warmstart-resume.safetensors", {})
    records = {
        mode: grpo.run_grpo_branch(config, tmp_path, mode=mode, progress=False) for mode in MODES
    }
    states = {m: checkpoint.load_state(tmp_path / "checkpoints" / f"grpo-{m}.pt.gz") for m in MODES}
    assert checkpoint.compare_states(states["continuous"], states["resume"]) == []
    groups = [g for h in records["continuous"]["history"] for g in h["groups"]]
    assert {g["reward_kind"] for g in groups} == {"random"}
    assert all("mean_verifier_reward" in h for h in records["continuous"]["history"])
