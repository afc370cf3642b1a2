"""The base model's BUILD.json is checked each time the base is loaded: a flipped byte in
its weights or tokenizer is refused in one line naming the file, before any training; the
check hashes each file once per process unless the file changes."""

from __future__ import annotations

import os
import shutil

import pytest

from verifiable_grpo.core import files, input_digests
from verifiable_grpo.core import model_sources as S
from verifiable_grpo.core.config import load_config, resolve


def _flipped_copy(tmp_path, name: str):
    base = tmp_path / "base"
    shutil.copytree(resolve("data/tiny-base"), base)
    target = base / name
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    return base


def test_the_shipped_base_matches_its_build_record():
    record = files.read_json(resolve("data/tiny-base/BUILD.json"))
    assert input_digests.verify_build(resolve("data/tiny-base")) == files.sha256_file(
        resolve("data/tiny-base/BUILD.json")
    )
    assert "model.safetensors" in record["files_sha256"]


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json"])
def test_a_flipped_byte_in_the_base_is_refused_on_load(tmp_path, name):
    base = _flipped_copy(tmp_path, name)
    config = load_config("tiny").replaced(model={"path": str(base)})
    with pytest.raises(files.DamagedFileError, match=f"{name}: its SHA-256 differs") as err:
        S.load_source(config)
    assert "\n" not in str(err.value)


def test_a_base_without_a_build_record_is_loaded_unchecked(tmp_path):
    folder = tmp_path / "hub-cache"
    folder.mkdir()
    assert input_digests.verify_build(folder) is None


def test_a_file_is_hashed_again_only_when_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"question": "1+1?", "answer": "#### 2"}\n')
    first = input_digests.file_sha256(path)
    calls = []
    monkeypatch.setattr(files, "sha256_file", lambda p: calls.append(p) or "recomputed")
    assert input_digests.file_sha256(path) == first and calls == []  # cached
    path.write_text('{"question": "1+2?", "answer": "#### 3"}\n')
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert input_digests.file_sha256(path) == "recomputed" and calls == [path]


def test_a_build_record_cannot_name_a_file_outside_its_folder(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    files.save_json(base / "BUILD.json", {"files_sha256": {"../secret": "0" * 64}})
    with pytest.raises(files.OutsideFolderError, match="leads outside"):
        input_digests.verify_build(base)
