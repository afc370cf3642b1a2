"""The exercise: constructed groups (exact zeros for constant groups), the protection of the
main artifacts, and the bookkeeping of the two group sizes."""

import json
import shutil

import pytest

from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import exercise
from verifiable_grpo.task import verifier


# ------------------------------------------------------------------ constructed groups
@pytest.mark.parametrize("size", [2, 4, 8])
def test_constant_groups_give_exactly_zero_advantages_and_gradients(size):
    for value in (0.0, 1.0):
        group = exercise.constructed_group([value] * size)
        assert group["advantages"] == [0.0] * size
        assert group["population_std"] == 0.0
        assert group["surrogate_loss"] == 0.0
        assert all(g == 0.0 for row in group["token_gradients"] for g in row)
        assert group["all_gradients_zero"] and group["constant_group"]
        assert group["source"] == "constructed, not model outputs"


@pytest.mark.parametrize("size", [2, 4, 8])
def test_alternating_group_matches_a_hand_computation(size):
    group = exercise.constructed_group([1.0, 0.0] * (size // 2))
    a = 0.5 / (0.5 + 1e-8)  # population std of {1, 0} is 0.5
    assert group["advantages"] == pytest.approx([a, -a] * (size // 2), abs=1e-15)
    assert group["population_std"] == 0.5
    # ratio 1 everywhere: loss = -mean(A) = 0; d loss / d logp = -A / (G * T) per token
    assert group["surrogate_loss"] == pytest.approx(0.0, abs=1e-15)
    tokens = exercise.TOKENS_PER_CONSTRUCTED_RESPONSE
    for advantage, row in zip(group["advantages"], group["token_gradients"]):
        assert row == pytest.approx([-advantage / (size * tokens)] * tokens, abs=1e-15)
    assert not group["all_gradients_zero"]


def test_constructed_groups_cover_every_group_size():
    groups = exercise.constructed_groups(load_config("tiny"))
    assert sorted({g["group_size"] for g in groups}) == [2, 4, 8]
    assert len(groups) == 9
    assert all(g["source"] == exercise.CONSTRUCTED_LABEL for g in groups)
    with pytest.raises(ValueError, match="even"):
        exercise.constructed_reward_patterns(3)


# ------------------------------------------------------------------ protection
@pytest.fixture
def main_run(tmp_path):
    """Stand-ins for every protected file of a finished main run."""
    config_copy = tmp_path / "smoke.yaml"
    shutil.copyfile(load_config("smoke").path, config_copy)
    config = load_config(config_copy)  # the same profile, loaded from the copy
    out = tmp_path / "run"
    for label, path in exercise.main_artifacts(config, out).items():
        if label != "config":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"artifact": label}))
    return config, out


def test_protection_records_and_passes_when_nothing_changed(main_run):
    config, out = main_run
    record = exercise.protect(config, out)
    assert len(record["files"]) == 2 + 3 * 5
    assert record["verifier_sha256"]
    assert exercise.check_protected(config, out)["files"] == record["files"]
    assert exercise.protect(config, out)["files"] == record["files"]  # continued: re-checked


@pytest.mark.parametrize(
    "label",
    [
        "results.json",
        "checkpoints/grpo-resume.safetensors",
        "inference/sft/sample.json",
        "resume-warmstart.json",
        "config",
    ],
)
def test_protection_fails_when_a_main_artifact_is_touched(main_run, label):
    config, out = main_run
    exercise.protect(config, out)
    path = exercise.main_artifacts(config, out)[label]
    path.write_bytes(path.read_bytes() + b" ")
    with pytest.raises(ValueError, match="protected main artifacts changed") as error:
        exercise.check_protected(config, out)
    assert str(path) in str(error.value)


def test_protection_fails_when_the_verifier_changes(main_run, tmp_path, monkeypatch):
    config, out = main_run
    copy_of_verifier = tmp_path / "verifier.py"
    shutil.copyfile(verifier.__file__, copy_of_verifier)
    monkeypatch.setattr(verifier, "__file__", str(copy_of_verifier))
    exercise.protect(config, out)
    copy_of_verifier.write_text(copy_of_verifier.read_text() + "\n# edited\n")
    with pytest.raises(ValueError, match="verifier"):
        exercise.check_protected(config, out)


def test_protection_needs_a_finished_main_run(main_run):
    config, out = main_run
    (out / "results.json").unlink()
    with pytest.raises(FileNotFoundError, match="finish the main run"):
        exercise.protect(config, out)
    assert not (out / "exercise" / "protected.json").exists()


# ------------------------------------------------------------------ budgets
def test_budget_counts_prompts_and_rollouts():
    history = [
        {"document_ids": ["a", "b"], "groups": [{"rewards": [0, 1]}, {"rewards": [1, 1]}]},
        {"document_ids": ["c", "d"], "groups": [{"rewards": [0, 0]}, {"rewards": [0, 1]}]},
    ]
    record = {"history": history, "updates": 4, "timings": {"total_seconds": 3.5}}
    assert exercise.budget(record) == {
        "iterations": 2,
        "updates": 4,
        "prompts": 4,
        "rollouts": 8,
        "seconds": 3.5,
    }
