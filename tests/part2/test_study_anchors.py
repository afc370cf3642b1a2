"""A family run (default backend) resumes only from an anchored checkpoint and on the
inputs it started with: a checkpoint changed and re-recorded, or prompts data changed and
re-manifested between `--stop-after 1` and the resume, is refused before any step."""

from __future__ import annotations

import shutil

import pytest

from verifiable_grpo.core import anchors, checkpoint, files
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2 import study

pytestmark = pytest.mark.usefixtures("one_thread")
RUN = lock_lib.LockedRun("grpo", 131, "on_policy")


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A smoke lock and a study folder whose one run stopped after its first step."""
    folder = tmp_path_factory.mktemp("family-anchors")
    lock = lock_lib.build_lock(
        lock_lib.LockChoices(
            "smoke",
            budget={"steps": 2, "prompts_per_step": 2, "checkpoint_every_steps": 1},
            evaluation={"problems": 2, "draws": 1},
            seeds=[131, 23],
        )
    )
    lock_path = lock_lib.write_lock(lock, folder / "lock.json")
    assert study.run_arm(lock_path, folder / "out", RUN, stop_after=1) is None
    return lock_path, folder / "out"


def _copy(stopped, tmp_path):
    lock_path, out = stopped
    shutil.copytree(out, tmp_path / "out")
    return lock_path, tmp_path / "out", study.run_dir(tmp_path / "out", *_where())


def _where():
    return RUN.regime, RUN.arm, RUN.seed


def test_a_stopped_run_anchors_its_checkpoint(stopped):
    _, out = stopped
    ledger = files.read_json(study.run_dir(out, *_where()) / "checkpoints" / anchors.LEDGER)
    assert set(ledger["seals"]) == {"checkpoint-0001.json"} and ledger["stamp_sha256"] is None


def test_a_changed_checkpoint_with_a_rewritten_record_is_refused(stopped, tmp_path):
    lock_path, out, run = _copy(stopped, tmp_path)
    target = run / "checkpoints" / "checkpoint-0001.pt"
    state = checkpoint.load_state(target)
    name = next(k for k, v in state["model"].items() if v.is_floating_point())
    state["model"][name] = state["model"][name] + 1.0
    target.unlink()
    saved = checkpoint.save_state(target, state, compress=False)
    record = {"step": 1, "sha256": saved["sha256"], "bytes": saved["bytes"]}
    files.save_json(target.with_suffix(".json"), record, overwrite=True)
    with pytest.raises(anchors.ResealedError, match="rewritten after it was anchored"):
        study.run_arm(lock_path, out, RUN)
    assert not (run / "run_manifest.json").exists()


def test_prompts_data_changed_and_remanifested_is_refused_on_resume(stopped, tmp_path):
    lock_path, out, run = _copy(stopped, tmp_path)
    learning = out / "learning-data"
    pages = learning / "train" / "pages.json"
    edited = files.read_json(pages)
    edited[0]["statement"] += " "
    pages.unlink()
    files.save_json(pages, edited)
    manifest = files.read_json(learning / "MANIFEST.json")
    manifest["files"]["train/pages.json"].update(
        sha256=files.sha256_file(pages), bytes=pages.stat().st_size
    )
    files.save_json(learning / "MANIFEST.json", manifest, overwrite=True)
    with pytest.raises(ValueError, match="learning_data_sha256"):
        study.run_arm(lock_path, out, RUN)
    assert not (run / "run_manifest.json").exists()
