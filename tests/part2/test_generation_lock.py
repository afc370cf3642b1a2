"""vLLM generation as a lock choice: the importance-sampling correction is stated, never a
TRL default, and a run whose TRL settings differ from its lock is refused in one line
before any model loads."""

import copy

import pytest
import yaml

from verifiable_grpo import cli
from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.part2 import generation_lock, vllm_lock
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import run_config

SMOKE = "configs/part2/trl-smoke.yaml"
CARD = "configs/part2/card-qwen3-8b-gsm8k.yaml"


def test_the_vllm_lock_is_pinned_and_states_its_correction():
    lock, sha = lock_lib.read_lock(vllm_lock.PATH)
    assert sha == vllm_lock.PINNED_SHA256 == lock_lib.read_pin(vllm_lock.PATH)["lock_sha256"]
    assert lock == vllm_lock.build()
    lock_lib.check_lock(lock, path=vllm_lock.PATH)
    fields = generation_lock.trl_fields(lock["generation"])
    assert fields == {
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_importance_sampling_correction": True,
        "vllm_importance_sampling_mode": "sequence_mask",
        "vllm_importance_sampling_clip_max": 3.0,
        "vllm_importance_sampling_clip_min": None,
    }
    edited = copy.deepcopy(lock)
    edited["generation"]["importance_sampling"]["clip_max"] = 2.0
    with pytest.raises(ConfigError, match="generation.importance_sampling.clip_max is 2.0"):
        lock_lib.check_lock(edited, path=vllm_lock.PATH)


def test_the_committed_lock_means_generate_without_correction():
    lock, _ = lock_lib.read_lock()
    assert "generation" not in lock  # pre-registered before the choice existed
    card = run_config.load_run_config(CARD)
    assert generation_lock.check_run(lock, card, "plain") == {
        "use_vllm": False,
        "vllm_importance_sampling_correction": False,
    }


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"engine": "vllm", "vllm_mode": "colocate"}, "correction: state it"),
        (
            {
                "engine": "vllm",
                "vllm_mode": "colocate",
                "importance_sampling": {"correction": True},
            },
            "importance_sampling.mode",
        ),
        (
            {
                "engine": "vllm",
                "vllm_mode": "colocate",
                "importance_sampling": {"correction": True, "mode": "sequence_mask"},
            },
            "clip_max: state it",
        ),
        ({"engine": "transformers", "importance_sampling": {"correction": True}}, "nothing else"),
        ({"engine": "sglang", "importance_sampling": {"correction": False}}, "engine"),
    ],
)
def test_a_generation_section_must_state_everything(spec, message):
    with pytest.raises(ValueError, match=message):
        generation_lock.check_generation(spec)


def test_pins_devices_and_arms_that_differ_from_the_lock_are_refused():
    committed, _ = lock_lib.read_lock()
    vllm, _ = lock_lib.read_lock(vllm_lock.PATH)
    card = run_config.load_run_config(CARD)  # pins use_vllm: false, as the card ran
    with pytest.raises(ConfigError, match="trl_pins.use_vllm is False but the treatment lock"):
        generation_lock.check_run(vllm, card, "plain")
    pinned = copy.deepcopy(card)
    pinned["trl_pins"]["vllm_importance_sampling_correction"] = True
    with pytest.raises(ConfigError, match="trl_pins.vllm_importance_sampling_correction"):
        generation_lock.check_run(committed, pinned, "plain")
    free = copy.deepcopy(card)
    del free["trl_pins"]["use_vllm"]
    assert generation_lock.check_run(vllm, free, "plain")["use_vllm"] is True
    with pytest.raises(ConfigError, match="dynamic sampler assembles its own batch"):
        generation_lock.check_run(vllm, free, "dynamic")
    smoke = run_config.load_run_config(SMOKE)
    del smoke["trl_pins"]["use_vllm"]
    with pytest.raises(ConfigError, match="needs device: cuda"):
        generation_lock.check_run(vllm, smoke, "plain")


def test_grpo_config_holds_the_locked_fields_or_is_refused(tmp_path):
    lock, _, config, fields = trl_backend.check_request(
        "configs/part2/lock.json", SMOKE, lock_lib.LockedRun("gspo", 11, "on_policy")
    )
    layout = run_config.step_layout(config, 1)
    args = trl_backend.grpo_config(
        trl_backend.TrainerRequest(config, fields, "gspo", 11, 1, tmp_path), layout
    )
    assert args.use_vllm is False
    assert args.vllm_importance_sampling_correction is False  # TRL's default is True
    assert args.importance_sampling_level == "sequence"
    with pytest.raises(ConfigError, match="GRPOConfig.epsilon is 0.2 after TRL's checks"):
        generation_lock.check_effective(args, {"epsilon": 3e-4})


def test_a_run_pinning_vllm_against_the_lock_is_refused_in_one_line(tmp_path, capsys):
    config = yaml.safe_load(resolve(SMOKE).read_text())
    config["trl_pins"]["use_vllm"] = True
    path = tmp_path / "smoke-vllm.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    argv = ["family", "run", "--backend", "trl", "--config", str(path), "--out", str(out)]
    assert cli.main([*argv, "--arm", "grpo", "--seed", "11"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "trl_pins.use_vllm is True" in err
    assert not out.exists()
