"""A path a record or note names stays inside its run folder: a crash note, a GRPO note's
evidence, an inference audit, a stage marker and the treatment lock's warm start are
refused in one line when they name an absolute path, climb out with '..' or pass through
a symlink that leads out, even when the file there has the recorded SHA-256."""

from __future__ import annotations

import pytest
import torch

from verifiable_grpo.core import crash, files
from verifiable_grpo.core.checkpoint import save_state
from verifiable_grpo.core.config import repo_root
from verifiable_grpo.evaluation.evaluate import check_inference, inference_dir
from verifiable_grpo.part1 import pipeline
from verifiable_grpo.part2 import lock as lock_lib


@pytest.fixture
def outside(tmp_path):
    """A valid state file outside the run folder, and the run folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    saved = save_state(elsewhere / "state.pt", {"x": torch.ones(3)}, compress=False)
    return elsewhere / "state.pt", saved["sha256"], tmp_path / "run"


def _named(kind: str, target, folder) -> str:
    """The path a tampered record holds, of each kind, leading to `target`."""
    if kind == "absolute":
        return str(target)
    if kind == "dotdot":
        return "../" * len(folder.relative_to(target.parent.parent).parts) + (
            f"{target.parent.name}/{target.name}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "link.pt").symlink_to(target)
    return "link.pt"


KINDS = ("absolute", "dotdot", "symlink")
SAID = {"absolute": "is an absolute path", "dotdot": "leads outside", "symlink": "leads outside"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_crash_note_cannot_point_outside(kind, outside):
    target, sha, run = outside
    crash.save(run, "grpo-continuous", {"x": torch.zeros(3)}, 1)
    folder = crash.crash_folder(run, "grpo-continuous")
    note_path = folder / "state-000001.json"
    note = files.read_json(note_path)
    note.update(state=_named(kind, target, folder), sha256=sha)  # the hash would pass
    files.save_json(note_path, note, overwrite=True)
    # a symlink in the crash folder is refused before the note is read (files.refuse_symlinks)
    said = {**SAID, "symlink": "is a symlink inside the run folder"}[kind]
    with pytest.raises(files.OutsideFolderError, match=said) as refused:
        crash.latest(run, "grpo-continuous")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("kind", KINDS)
def test_an_inference_audit_cannot_point_outside(kind, outside):
    target, sha, run = outside
    folder = inference_dir(run, "grpo")
    folder.mkdir(parents=True)
    entry = {"file": _named(kind, target, folder), "sha256": sha}
    files.save_json(folder / "audit.json", {"files": {"greedy": entry}})
    with pytest.raises(files.OutsideFolderError, match=SAID[kind]):
        check_inference(run, "grpo")


@pytest.mark.parametrize("kind", KINDS)
def test_a_stage_marker_cannot_point_outside(kind, outside):
    target, sha, run = outside
    run.mkdir(parents=True, exist_ok=True)
    rel = _named(kind, target, run)
    marker = {"stage": "grpo-continuous", "outputs": {rel: {"sha256": sha, "bytes": 1}}}
    with pytest.raises(files.OutsideFolderError, match=SAID[kind]):
        pipeline._check_marker(run, marker)


def test_the_lock_warm_start_stays_in_data(tmp_path):
    root = repo_root()
    assert lock_lib.warm_start_path({"path": lock_lib.WARM_START}).is_file()
    for path, said in (
        ("/etc/hostname", "is an absolute path"),
        ("../outside.safetensors", "leads outside"),
        ("configs/part2/lock.json", "leads outside"),  # in the repository, not in data/
        ("data/../configs/part2/lock.json", "leads outside"),
    ):
        with pytest.raises(files.OutsideFolderError, match=said):
            lock_lib.warm_start_path({"path": path})
    assert (root / "data").is_dir()


def test_a_path_inside_is_returned_resolved(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.json").write_text("{}")
    assert files.inside(tmp_path, "a/./b.json", "test") == (tmp_path / "a/b.json").resolve()
    for bad in ("", None, 3, "a/\x00b"):
        with pytest.raises(files.OutsideFolderError, match="is not a relative path"):
            files.inside(tmp_path, bad, "test")
