"""A start stamp is believed only if git and the folder's anchored seals agree with it, and
a seal is believed only if its anchor does: each forgery below is refused in one line.

Held-out style: every test plays what a careless or a dishonest user would do to a real
folder (a git repository in tmp_path, real crash pairs), then resumes."""

from __future__ import annotations

import datetime
import json
import subprocess

import pytest
import torch

from verifiable_grpo.core import anchors, crash, files, preregistration, stamp_checks
from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part2 import adoption


def _git(root, *args) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.org")
    _git(root, "config", "user.name", "t")
    (root / "declared.py").write_text("RULE = 1\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "declare")
    return root


def _one_line(refusal) -> str:
    problems = refusal.value.problems
    assert len(problems) == 1 and "\n" not in problems[0]
    return problems[0]


def _sealed_folder(tmp_path, repo, exploratory=False):
    """A folder stamped at its start with one anchored crash pair written under the stamp."""
    folder = tmp_path / "out"
    preregistration.stamp_folder(folder, exploratory, repo)
    crash.save(folder, "grpo", {"weights": torch.arange(4.0)}, 1)
    return folder, folder / preregistration.STAMP_FILE


def _edit(path, **changes):
    stamp = files.read_json(path)
    stamp.update(changes)
    path.unlink()
    files.save_json(path, stamp)


def test_an_exploratory_stamp_relabelled_recorded_is_refused(repo, tmp_path):
    folder, path = _sealed_folder(tmp_path, repo, exploratory=True)
    _edit(path, exploratory=False)  # the tree was clean: the label is the only lie
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert "edited or replaced" in _one_line(refused)


def test_a_deleted_stamp_is_not_written_again(repo, tmp_path):
    folder, path = _sealed_folder(tmp_path, repo)
    path.unlink()
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert "missing, but" in _one_line(refused) and not path.exists()


def test_a_stamp_replaced_by_a_fresh_one_is_refused(repo, tmp_path):
    """Even a fresh, valid stamp of the same commit (here within the same second, written
    in another layout) is another file than the one the seals were written under."""
    folder, path = _sealed_folder(tmp_path, repo)
    path.unlink()
    path.write_text(json.dumps(preregistration.start_stamp(False, repo)))
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert "edited or replaced" in _one_line(refused)


def test_a_forged_time_is_refused(repo, tmp_path):
    folder, path = _sealed_folder(tmp_path, repo)
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    _edit(path, started_at=future.isoformat(timespec="seconds"))
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert "in the future" in _one_line(refused)
    _edit(path, started_at="2001-01-01T00:00:00+00:00")  # before its commit existed
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert "after the stamp's started_at" in _one_line(refused)


def test_a_forged_commit_is_refused(repo, tmp_path):
    folder, path = _sealed_folder(tmp_path, repo)
    _edit(path, git_commit="0" * 40)
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert "does not exist in this repository" in _one_line(refused)
    _edit(path, git_commit="--output=/tmp/x")  # never handed to git as an option
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert "is not a commit id" in _one_line(refused)


def test_a_stamped_commit_off_the_resumed_history_is_refused(repo, tmp_path):
    folder = tmp_path / "out"
    preregistration.stamp_folder(folder, True, repo)  # exploratory: resumes on any commit
    _git(repo, "checkout", "-qb", "side")
    (repo / "declared.py").write_text("RULE = 2\n")
    _git(repo, "commit", "-qam", "side rule")
    side = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-")
    path = folder / preregistration.STAMP_FILE
    _edit(path, git_commit=side)
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, True, repo)
    assert "not the commit being resumed nor an ancestor" in _one_line(refused)


@pytest.mark.parametrize("content", ["[]", "null", '"started"', "{}", "{"])
def test_a_stamp_that_is_not_a_stamp_is_refused(repo, tmp_path, content):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / preregistration.STAMP_FILE).write_text(content)
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert preregistration.STAMP_FILE in _one_line(refused)


def test_a_symlinked_stamp_is_refused_even_to_a_valid_stamp(repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    preregistration.stamp_folder(elsewhere, False, repo)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / preregistration.STAMP_FILE).symlink_to(elsewhere / preregistration.STAMP_FILE)
    with pytest.raises(ConfigError) as refused:
        preregistration.stamp_folder(folder, False, repo)
    assert "not a plain file" in _one_line(refused)


def test_a_run_outside_its_recorded_stamp_vouches_for_nothing(repo, tmp_path):
    folder = tmp_path / "out"
    preregistration.stamp_folder(folder, False, repo)
    stamp_sha = stamp_checks.stamp_sha256(folder)
    assert preregistration.vouched_stamp_sha256(folder, repo) == stamp_sha
    (repo / "declared.py").write_text("RULE = 9\n")  # a dirty tree: a `family run` here ...
    assert preregistration.vouched_stamp_sha256(folder, repo) is None  # ... anchors no stamp
    assert preregistration.vouched_stamp_sha256(tmp_path / "unstamped", repo) is None


def _run_with(out, stamp_sha256):
    """A finished run folder whose checkpoint ledger names `stamp_sha256` (False: none)."""
    run = out / "runs" / "on_policy" / "grpo-seed-11"
    (run / "checkpoints").mkdir(parents=True)
    files.save_json(run / "run_manifest.json", {"arm": "grpo"})
    if stamp_sha256 is not False:
        files.save_json(run / "checkpoints" / "checkpoint-0001.json", {"step": 1})
        anchors.anchor(run / "checkpoints", "checkpoint-0001.json", stamp_sha256)
    return run


@pytest.mark.parametrize("made_under", ["no ledger", "no stamp", "another stamp"])
def test_a_recorded_study_adopts_no_run_made_outside_its_stamp(repo, tmp_path, made_under):
    out = tmp_path / "study"
    stamp = preregistration.stamp_folder(out, False, repo)
    _run_with(out, {"no ledger": False, "no stamp": None, "another stamp": "f" * 64}[made_under])
    with pytest.raises(ConfigError) as refused:
        adoption.refuse_unstamped_runs(out, stamp)
    assert "grpo-seed-11: this run was made" in _one_line(refused)
    adoption.refuse_unstamped_runs(out, {**stamp, "exploratory": True})  # claims nothing


def test_a_recorded_study_adopts_its_own_runs(repo, tmp_path):
    out = tmp_path / "study"
    stamp = preregistration.stamp_folder(out, False, repo)
    _run_with(out, stamp_checks.stamp_sha256(out))
    adoption.refuse_unstamped_runs(out, stamp)


# ------------------------------------------------------------------ seals (Part I crash)
def _tamper_state_and_update_note(folder):
    """Edit the crash state and write its new SHA-256 and size into the note."""
    stage = crash.crash_folder(folder, "grpo")
    state_path, note_path = stage / "state-000001.pt", stage / "state-000001.json"
    state_path.unlink()
    torch.save({"weights": torch.full((4,), 7.0)}, state_path)
    note = files.read_json(note_path)
    note.update(sha256=files.sha256_file(state_path), bytes=state_path.stat().st_size)
    files.save_json(note_path, note, overwrite=True)


def test_an_edited_crash_state_with_an_updated_note_is_refused(repo, tmp_path):
    folder, _ = _sealed_folder(tmp_path, repo)
    state, _ = crash.latest(folder, "grpo")
    assert torch.equal(state["weights"], torch.arange(4.0))
    _tamper_state_and_update_note(folder)
    with pytest.raises(anchors.ResealedError, match="rewritten after it was anchored") as err:
        crash.latest(folder, "grpo")
    assert "\n" not in str(err.value)


def test_a_crash_pair_whose_anchor_was_removed_is_never_resumed(repo, tmp_path):
    """The ledger deleted with the state edited: the pair counts as cut short, so the stage
    starts again rather than continue from weights nobody can vouch for."""
    folder, _ = _sealed_folder(tmp_path, repo)
    _tamper_state_and_update_note(folder)
    (crash.crash_folder(folder, "grpo") / anchors.LEDGER).unlink()
    assert crash.latest(folder, "grpo") is None


def test_an_older_anchored_pair_is_used_when_the_newest_was_cut_short(tmp_path):
    folder = tmp_path / "out"
    crash.save(folder, "grpo", {"weights": torch.zeros(2)}, 1)
    stage = crash.crash_folder(folder, "grpo")
    kept = {p.name: p.read_bytes() for p in stage.iterdir() if p.name.startswith("state-")}
    crash.save(folder, "grpo", {"weights": torch.ones(2)}, 2)
    for name, data in kept.items():  # as if the kill came before the older pair's removal
        (stage / name).write_bytes(data)
    anchors.anchor(stage, "state-000001.json", None)
    anchors.forget(stage, drop={"state-000002.json"})  # ... and before the newest's anchor
    state, note = crash.latest(folder, "grpo")
    assert note["position"] == 1 and torch.equal(state["weights"], torch.zeros(2))
