"""Registry entries on Part I's loop (grpo.objective): the transplant, the refusals, the
behaviour correction's denominator across the updates of one rollout set, and the
bfloat16 sampler that makes a mismatch on purpose."""

from __future__ import annotations

import copy

import pytest
import torch

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core import schedule
from verifiable_grpo.core.config import ConfigError, load_config
from verifiable_grpo.training import batched_rollout, grpo, objectives, rollout
from verifiable_grpo.training.objectives import OBJECTIVES, on_part1

pytestmark = pytest.mark.usefixtures("one_thread")


def test_absent_objective_is_part1_and_adding_the_key_changes_no_profile_hash():
    config = load_config("tiny")
    assert "objective" not in config["grpo"]
    assert objectives.objective_from_config(config).sha256() == OBJECTIVES["part1"].sha256()
    named = config.replaced(grpo={"objective": "part1"})
    assert objectives.objective_from_config(named).sha256() == OBJECTIVES["part1"].sha256()


def _trainable_on_part1(name: str) -> bool:
    try:
        on_part1(OBJECTIVES[name])
    except ValueError:
        return False
    return True


# Every registry entry Part I's loop accepts, read from the registry: a new entry is covered
# with no list to edit.
ON_PART1 = [
    name for name in OBJECTIVES if name not in ("part1", "grpo") and _trainable_on_part1(name)
]


@pytest.mark.parametrize("name", ON_PART1)
def test_an_entry_on_part1_changes_only_its_own_axes(name):
    entry, part1, arm = OBJECTIVES[name], OBJECTIVES["part1"], OBJECTIVES["grpo"]
    moved = on_part1(entry)
    for axis in objectives.TRANSPLANTED_AXES:
        own = getattr(entry, axis) != getattr(arm, axis)
        expected = getattr(entry if own else part1, axis)
        assert getattr(moved, axis) == expected, axis
    assert moved.kl == part1.kl  # the exact prefix KL stays
    assert moved.sha256() != part1.sha256()


def test_the_grpo_arm_on_part1_is_part1_and_own_samplers_are_refused():
    assert on_part1(OBJECTIVES["grpo"]).sha256() == OBJECTIVES["part1"].sha256()
    for name in ("dapo", "aero"):
        with pytest.raises(ValueError, match="sampler"):
            on_part1(OBJECTIVES[name])


def test_an_unknown_objective_is_refused_before_anything_is_read(tmp_path):
    config = load_config("smoke").replaced(grpo={"objective": "cispoo"})
    with pytest.raises(ConfigError, match=r"grpo.objective: unknown objective 'cispoo'.*cispo"):
        grpo.run_grpo_branch(config, tmp_path / "nothing-here", progress=False)
    assert not (tmp_path / "nothing-here").exists()


def test_a_bfloat16_sampler_needs_the_batched_path():
    config = load_config("smoke")
    with pytest.raises(ConfigError, match="sampling.precision: bfloat16 sampling needs batched"):
        config.replaced(sampling={"batched": False, "precision": "bfloat16"})
    with pytest.raises(ConfigError, match="sampling.precision"):
        config.replaced(sampling={"batched": False, "precision": "float16"})


def _micro(learning_view_dir, precision="float32"):
    from verifiable_grpo.task import data

    config = load_config("smoke").replaced(
        model={"source": "random"},
        sampling={"batched": True, "use_kv_cache": True, "precision": precision},
        grpo={"share_prompts": False},
        tokens={"max_response": 12},  # a random policy rarely stops: keep it short
    )
    policy, tokenizer = model_lib.load_base(config)
    examples = data.read_examples(learning_view_dir, "train")[:2]
    generator = torch.Generator().manual_seed(0)
    sampler = batched_rollout.Sampler(policy, tokenizer, config, generator)
    groups = batched_rollout.sample_groups(sampler, examples, 4, ["p0", "p1"])
    for group in groups:
        group["advantages"] = [1.0, -1.0, 1.0, -1.0]
    return config, policy, groups


def test_bfloat16_sampling_captures_log_probs_the_float32_trainer_does_not_share(learning_view_dir):
    _, policy, groups = _micro(learning_view_dir, "bfloat16")
    rows = [r for g in groups for r in g["responses"]]
    gap = rollout.verify_captured_logprobs(policy, rows, 10.0)["max_abs_difference"]
    assert 1e-4 < gap < 1.0  # float32 sampling agrees to ~1e-6 (test_batched)


def test_a_correction_keeps_the_trainers_rollout_log_probs_for_the_second_update(learning_view_dir):
    config, policy, groups = _micro(learning_view_dir)
    config = config.replaced(grpo={"objective": "grpo_tis"})
    objective = objectives.objective_from_config(config)
    reference = copy.deepcopy(policy).requires_grad_(False)

    def two_updates(memo, chosen=objective):
        model = copy.deepcopy(policy)
        optimizer = torch.optim.AdamW(model_lib.unique_parameters(model), lr=0.05)
        scheduler = schedule.make_scheduler(optimizer, 2, 0.0, 1.0)
        return [
            grpo.grpo_update(
                grpo.Trainee(model, reference, optimizer, scheduler),
                groups,
                config,
                grpo.UpdateOptions(chosen, reference_memo=memo),
            )
            for _ in range(2)
        ]

    kept = two_updates({})
    assert kept[0]["ratio_min"] == kept[0]["ratio_max"] == 1.0
    assert kept[1]["ratio_max"] - kept[1]["ratio_min"] > 1e-3  # measured against update 1's
    forgotten = two_updates(None)  # no memo: every update its own denominator
    assert forgotten[1]["ratio_min"] == forgotten[1]["ratio_max"] == 1.0
    for update in kept:  # same numerics in sampler and trainer: weights within rounding of 1
        assert abs(update["behaviour_weight_max"] - 1) < 1e-4
        assert abs(update["behaviour_weight_min"] - 1) < 1e-4
        assert update["behaviour_weight_zero_fraction"] == 0.0
    plain = two_updates({}, OBJECTIVES["part1"])
    assert "behaviour_weight_mean" not in plain[0]  # Part I's telemetry keeps its keys
