"""A run folder cannot run code, and evidence altered after the fact is caught by its
SHA-256 however carefully its size and mtime were kept."""

from __future__ import annotations

import os
import shutil

import pytest
import torch

from shared_helpers import run_cli
from verifiable_grpo.core import checkpoint, files
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import load_config, read_json
from verifiable_grpo.training import sft


class _Payload:
    """Pickles as a call to os.system: what a crafted state file would hold."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _plant(path, marker):
    path.unlink(missing_ok=True)
    checkpoint.save_state(path, {"model": _Payload(marker)})


def _edit_keeping_size_and_mtime(path, change):
    stat = path.stat()
    data = bytearray(path.read_bytes())
    change(data)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size


# ------------------------------------------------------------------ states never run code
def test_a_state_with_a_pickled_callable_is_refused(tmp_path):
    marker = tmp_path / "PWNED"
    path = tmp_path / "crafted.pt.gz"
    _plant(path, marker)
    with pytest.raises(checkpoint.UnsafeStateError, match="crafted.pt.gz: refused to load"):
        checkpoint.load_state(path)
    assert not marker.exists()


@pytest.fixture(scope="module")
def warm_interrupted(tmp_path_factory):
    config = load_config("smoke").replaced(model={"source": "random"})
    out = tmp_path_factory.mktemp("warm") / "run"
    sft.ensure_learning_view(config, out)
    sft.run_sft_branch(config, out, "warmstart", "interrupt")
    return config, out


def test_resume_checks_the_recorded_sha256_before_unpickling(warm_interrupted, tmp_path):
    config, source = warm_interrupted
    out = tmp_path / "run"
    shutil.copytree(source, out)
    marker = tmp_path / "PWNED"
    _plant(out / "checkpoints" / "warmstart-interrupt.pt.gz", marker)
    with pytest.raises(files.DamagedFileError, match="warmstart-interrupt.pt.gz: SHA-256"):
        sft.run_sft_branch(config, out, "warmstart", "resume")
    (out / "learning" / "warmstart-interrupt.json").unlink()  # no record to check against:
    with pytest.raises(checkpoint.UnsafeStateError, match="refused to load"):  # still no code
        sft.run_sft_branch(config, out, "warmstart", "resume")
    assert not marker.exists()


def test_verify_resume_refuses_a_crafted_state(warm_interrupted, tmp_path):
    _, source = warm_interrupted
    out = tmp_path / "run"
    shutil.copytree(source, out)
    marker = tmp_path / "PWNED"
    for mode in ("continuous", "resume"):
        _plant(out / "checkpoints" / f"warmstart-{mode}.pt.gz", marker)
    with pytest.raises(checkpoint.UnsafeStateError):
        checkpoint.verify_resume(out, "warmstart")
    assert not marker.exists()


# ------------------------------------------------------------------ altered evidence is caught
def test_a_flipped_bit_in_a_finished_state_stops_the_run(smoke_reference, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(smoke_reference, out)
    path = out / "checkpoints" / "grpo-interrupt.pt.gz"
    _edit_keeping_size_and_mtime(path, lambda b: b.__setitem__(len(b) // 2, b[len(b) // 2] ^ 1))
    result = run_cli(["run", "--config", "smoke", "--out", str(out)])
    assert result.returncode == 2
    assert "grpo-interrupt.pt.gz changed after stage grpo-interrupt finished" in result.stderr
    assert "SHA-256" in result.stderr and "Traceback" not in result.stderr


def test_an_edited_result_stops_the_run(smoke_reference, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(smoke_reference, out)
    path = out / "results.json"
    text = path.read_bytes()
    assert b'"correct": 0' in text

    def edit(data):
        at = bytes(data).index(b'"correct": 0') + len(b'"correct": ')
        data[at : at + 1] = b"9"

    _edit_keeping_size_and_mtime(path, edit)
    result = run_cli(["run", "--config", "smoke", "--out", str(out)])
    assert result.returncode == 2 and "results.json changed after stage evaluate" in result.stderr


def test_an_edited_architecture_in_a_policy_is_refused(micro_model, random_config, tmp_path):
    from safetensors import safe_open
    from safetensors.torch import save_file

    model, _ = micro_model
    path = tmp_path / "policy.safetensors"
    model_lib.save_policy(model, path, {"branch": "test"})
    with safe_open(str(path), framework="pt") as handle:
        header = dict(handle.metadata())
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}
    header["model_config"] = header["model_config"].replace(
        '"rope_theta": 10000.0', '"rope_theta": 500.0'
    )
    assert '"rope_theta": 500.0' in header["model_config"]
    edited = tmp_path / "edited.safetensors"
    save_file(tensors, str(edited), metadata=header)  # same tensors: their digest still holds
    with pytest.raises(files.DamagedFileError, match="architecture in its metadata"):
        model_lib.reload_policy(edited, random_config)
    reloaded, _ = model_lib.reload_policy(path, random_config)
    assert model_lib.model_digest(reloaded) == model_lib.model_digest(model)


def test_a_damaged_state_is_named(tmp_path):
    path = tmp_path / "state.pt.gz"
    checkpoint.save_state(path, {"x": torch.arange(1000.0)})
    _edit_keeping_size_and_mtime(path, lambda b: b.__setitem__(len(b) // 2, b[len(b) // 2] ^ 1))
    with pytest.raises(files.DamagedFileError, match="state.pt.gz is damaged"):
        checkpoint.load_state(path)
    truncated = tmp_path / "cut.pt"
    checkpoint.save_state(truncated, {"x": torch.arange(1000.0)}, compress=False)
    truncated.write_bytes(truncated.read_bytes()[:200])
    with pytest.raises(files.DamagedFileError, match="cut.pt is damaged"):
        checkpoint.load_state(truncated)


def test_a_damaged_json_is_named(tmp_path):
    path = tmp_path / "record.json"
    path.write_text('{"a": 1')
    with pytest.raises(files.DamagedFileError, match="record.json is damaged"):
        read_json(path)


# ------------------------------------------------------------------ writes
def test_writes_never_follow_a_planted_symlink(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    (run / "x.json.tmp").symlink_to(outside)  # the old predictable temporary name
    files.save_json(run / "x.json", {"a": 1})
    assert outside.read_text() == "precious" and read_json(run / "x.json") == {"a": 1}
    (run / "y.json").symlink_to(outside)  # the target itself
    with pytest.raises(FileExistsError):
        files.save_json(run / "y.json", {"a": 2})
    assert outside.read_text() == "precious"


def test_an_interrupted_write_leaves_nothing_under_the_final_name(tmp_path):
    target = tmp_path / "state.pt"

    def writer(tmp):
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        files.write_with(target, writer)
    assert list(tmp_path.iterdir()) == []
