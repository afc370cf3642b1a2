"""Every state the learning commands reload is checked before use: the GRPO state a sweep,
lift or fixed-prompt run scores (against its learning record), the warm start it starts
from, a reused result or prompt selection (against the SHA-256 beside it), and the SmolLM2
FP32 folder (against its seal). One flipped byte in each is refused in one line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from verifiable_grpo.core import files
from verifiable_grpo.core.checkpoint import save_state
from verifiable_grpo.core.config import load_config
from verifiable_grpo.core.runfolder import RunFolder
from verifiable_grpo.models import smollm2 as loader
from verifiable_grpo.part1 import smollm2_candidate, sweep


def _flip(path, where: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * where)] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory):
    """A sweep folder as a finished training leaves it: the dataset, the recorded warm start,
    a GRPO state and the learning record that lists its SHA-256."""
    config = sweep.setting_config(load_config("tiny"), sweep.SETTINGS[0])
    folder = tmp_path_factory.mktemp("sweep") / "lr3e-5"
    sweep.prepare_folder(folder, config)
    run = RunFolder(folder)
    saved = save_state(run.state("grpo", "continuous"), {"model": {"w": torch.ones(4)}})
    files.save_json(run.record("grpo", "continuous"), {"costs": {"state_sha256": saved["sha256"]}})
    return config, folder


def test_a_flipped_byte_in_the_trained_state_is_refused(trained_folder, tmp_path):
    config, folder = trained_folder
    state = RunFolder(folder).state("grpo", "continuous")
    kept = state.read_bytes()
    _flip(state)
    try:
        with pytest.raises(files.DamagedFileError, match="differs from the recorded"):
            sweep.train_and_score(config, folder, progress=False)
    finally:
        state.write_bytes(kept)


def test_a_flipped_byte_in_the_warm_start_is_refused(trained_folder):
    config, folder = trained_folder
    policy = RunFolder(folder).policy("warmstart")
    kept = policy.read_bytes()
    _flip(policy, 0.9)
    try:
        with pytest.raises(files.DamagedFileError, match="differs from the recorded"):
            sweep.train_and_score(config, folder, progress=False)
    finally:
        policy.write_bytes(kept)


def test_a_reused_result_is_checked_against_its_digest(tmp_path):
    path = files.save_cached_json(tmp_path / "result.json", {"success": [0.25, 0.5]})
    assert files.read_cached_json(path) == {"success": [0.25, 0.5]}
    path.write_text(path.read_text().replace("0.25", "0.75"))  # same size, other number
    with pytest.raises(files.DamagedFileError, match="reused result altered"):
        files.read_cached_json(path)
    legacy = tmp_path / "legacy.json"  # written before the digests: read as it is
    files.save_json(legacy, {"a": 1})
    assert files.read_cached_json(legacy) == {"a": 1}


def test_a_flipped_byte_in_the_smollm2_folder_is_refused(tmp_path):
    cache = tmp_path / "smollm2-fp32"
    cache.mkdir()
    files.save_json(cache / "source.json", {"gguf_file": "x.gguf"})
    (cache / "model.safetensors").write_bytes(bytes(range(256)) * 4)
    assert loader.verify_cache(cache) == cache  # written before seals: sealed on first use
    assert files.read_json(cache / loader.SEAL)["why"].startswith("sealed on first use")
    _flip(cache / "model.safetensors")
    with pytest.raises(files.DamagedFileError, match="model.safetensors: its SHA-256 differs"):
        loader.verify_cache(cache)
    config = SimpleNamespace(model=SimpleNamespace(path=str(cache)))  # what it reads
    with pytest.raises(files.DamagedFileError, match="SmolLM2 FP32 folder"):
        smollm2_candidate.check_weights(config)
