"""A TRL checkpoint is sealed when written and verified before a resume: a flipped byte in
any state file, a pickled object behind a matching seal, or an added file is refused in
one line naming the file (exit 2, nothing trained); an unsealed folder is set aside."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import yaml

from verifiable_grpo import cli
from verifiable_grpo.core import files, folder_digests
from verifiable_grpo.core.config import resolve
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import checkpoints as trl_checkpoints

LOCK = "configs/part2/lock.json"
SMOKE = "configs/part2/trl-smoke.yaml"
RUN = "runs/on_policy/grpo-seed-11"
KINDS = (
    "adapter_model.safetensors",
    "optimizer.pt",
    "scheduler.pt",
    "rng_state.pth",
    "trainer_state.json",
)


class Gadget:
    """Not tensors or plain data: weights_only=True must refuse to build it."""


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A TRL smoke run stopped after its first step: one sealed checkpoint."""
    out = tmp_path_factory.mktemp("trl-sealed")
    assert (
        trl_backend.run_arm_trl(
            LOCK, SMOKE, out, lock_lib.LockedRun("grpo", 11, "on_policy"), stop_after=1
        )
        is None
    )
    return out


def _copy(stopped, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(stopped, out)
    return out, out / RUN / "checkpoints" / "checkpoint-1"


def _rerun(out, capsys) -> str:
    argv = ["family", "run", "--backend", "trl", "--config", SMOKE, "--lock", LOCK]
    argv += ["--out", str(out), "--arm", "grpo", "--seed", "11", "--regime", "on_policy"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_the_checkpoint_lists_every_state_file(stopped):
    sealed = files.read_json(stopped / RUN / "checkpoints/checkpoint-1" / trl_checkpoints.DIGESTS)
    assert set(KINDS) | {"family_telemetry.json"} <= set(sealed["files"])


@pytest.mark.parametrize("name", KINDS)
def test_a_flipped_byte_in_any_state_file_is_refused(name, stopped, tmp_path, capsys):
    out, checkpoint = _copy(stopped, tmp_path)
    target = checkpoint / name
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    err = _rerun(out, capsys)
    assert f"checkpoint-1/{name}: its SHA-256 differs" in err
    assert not (out / RUN / "run_manifest.json").exists()


def test_a_pickled_state_behind_a_matching_seal_is_refused(stopped, tmp_path, capsys):
    out, checkpoint = _copy(stopped, tmp_path)
    (checkpoint / "rng_state.pth").unlink()
    torch.save({"python": Gadget()}, checkpoint / "rng_state.pth")
    trl_checkpoints.seal(checkpoint)  # as if whoever swapped it also rewrote the seal
    trl_checkpoints.anchor(checkpoint)  # ... and its anchor (core.anchors)
    err = _rerun(out, capsys)
    assert "rng_state.pth: refused to load" in err and "weights_only=False" not in err


def test_an_added_file_is_refused(stopped, tmp_path, capsys):
    out, checkpoint = _copy(stopped, tmp_path)
    (checkpoint / "scaler.pt").write_bytes(b"planted")
    assert "scaler.pt: not part of the TRL checkpoint" in _rerun(out, capsys)


def test_an_unsealed_checkpoint_is_set_aside_not_resumed(stopped, tmp_path):
    out, checkpoint = _copy(stopped, tmp_path)
    (checkpoint / trl_checkpoints.DIGESTS).unlink()  # a crash between TRL's save and the seal
    assert trl_checkpoints.newest_verified(out / RUN) is None
    assert not checkpoint.exists()
    kept = list((out / RUN / "aborted").glob("checkpoint-1-*/checkpoints/checkpoint-1"))
    assert len(kept) == 1 and (kept[0] / "optimizer.pt").is_file()


def test_a_symlink_in_a_sealed_folder_is_refused(tmp_path):
    folder = tmp_path / "sealed"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"a")
    folder_digests.seal(folder, "seal.json")
    (folder / "a.bin").unlink()
    (folder / "a.bin").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(files.DamagedFileError, match="not a plain file"):
        folder_digests.verify(folder, "seal.json", "folder")


# --------------------------------------------------- anchors and inputs (issue 44, 6 and 7)
def test_a_tensor_changed_and_sealed_again_with_seal_is_refused(stopped, tmp_path, capsys):
    """The project's own seal() certifies whatever is in the folder; the anchor beside the
    checkpoints does not move with it, so the resume refuses before TRL reads a byte."""
    out, checkpoint = _copy(stopped, tmp_path)
    target = checkpoint / "adapter_model.safetensors"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0x01
    target.write_bytes(bytes(data))
    trl_checkpoints.seal(checkpoint)
    err = _rerun(out, capsys)
    assert "checkpoint-digests.json: this TRL checkpoint's seal was rewritten" in err
    assert not (out / RUN / "run_manifest.json").exists()


def _config_with(tmp_path, **changes) -> Path:
    """The smoke run configuration with its prompts data (and optionally its base) copied
    into tmp_path, so that a test may edit them."""
    config = yaml.safe_load(Path(SMOKE).read_text())
    prompts = tmp_path / "prompts.jsonl"
    shutil.copy(resolve(config["data"]["train"]), prompts)
    config["data"].update(train=str(prompts), test=str(prompts))
    config["model"].update(changes)
    path = tmp_path / "trl-copy.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _flip_base(tmp_path) -> Path:
    base = tmp_path / "base"
    shutil.copytree(resolve("data/tiny-base"), base)
    weights = base / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    return base


def test_a_flipped_byte_in_the_trl_base_is_refused_before_training(tmp_path, capsys):
    config = _config_with(tmp_path, name_or_path=str(_flip_base(tmp_path)))
    argv = ["family", "run", "--backend", "trl", "--config", str(config), "--lock", LOCK]
    argv += ["--out", str(tmp_path / "out"), "--arm", "grpo", "--seed", "11"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "model.safetensors: its SHA-256 differs" in err
    assert not list((tmp_path / "out").rglob("checkpoint-*"))


def test_prompts_data_edited_between_stop_after_and_resume_is_refused(tmp_path, capsys):
    config = _config_with(tmp_path)
    out = tmp_path / "out"
    run = lock_lib.LockedRun("grpo", 11, "on_policy")
    assert trl_backend.run_arm_trl(LOCK, str(config), out, run, stop_after=1) is None
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(prompts.read_text().replace("?", "? ", 1))
    capsys.readouterr()  # the first run's progress
    argv = ["family", "run", "--backend", "trl", "--config", str(config), "--lock", LOCK]
    argv += ["--out", str(out), "--arm", "grpo", "--seed", "11"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "input prompts test (data.test) changed since" in err, err
    assert not (out / RUN / "run_manifest.json").exists()
