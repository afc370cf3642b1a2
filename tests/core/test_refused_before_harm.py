"""Nothing a user types destroys data (issue 44's attacks, held out as the careless or
careful user tried them): an export's destination is checked before anything is touched
and swapped in, never deleted first; a planted `.lock` or `crash` symlink is refused
before a byte changes on either side of it; a dry run starts, locks and writes nothing;
an option a backend does not read is refused. Every case works in tmp_path, and the
exports run against a scratch repository root, never the checkout."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
import torch

from verifiable_grpo import cli
from verifiable_grpo.core import crash, files, record_folders, runlock
from verifiable_grpo.core.config import repo_root

KIND = record_folders.RecordKind("test record", frozenset({"a.json", "runs"}), "a.json")


def _refused(argv, capsys) -> str:
    try:
        code = cli.main(argv)
    except SystemExit as stopped:
        code = stopped.code
    err = capsys.readouterr().err
    assert code == 2, f"{argv}: exit {code}; {err}"
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(("error", "usage"))
    return err


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def scratch_root(tmp_path, monkeypatch):
    """A scratch repository root (what `--to ""` or `.` would name) with the lock in it,
    and a study folder S in it: a regression deletes tmp_path, not the checkout."""
    root = tmp_path / "root"
    (root / "configs").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "configs" / "tiny.yaml").write_bytes((repo_root() / "configs/tiny.yaml").read_bytes())
    (root / "lock.json").write_bytes((repo_root() / "configs/part2/lock.json").read_bytes())
    study = root / "S"
    study.mkdir()
    files.save_json(study / "study.json", {"lock_sha256": "0" * 64})
    monkeypatch.setenv("VERIFIABLE_GRPO_ROOT", str(root))
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize("to", ["", ".", "S", "S/runs", "..", "{root}", "{root}/.."])
def test_export_refuses_a_destination_it_would_destroy(to, scratch_root, capsys):
    before = _tree(scratch_root)
    argv = ["family", "export", "--lock", "lock.json", "--out", "S"]
    _refused([*argv, "--to", to.format(root=scratch_root)], capsys)
    assert _tree(scratch_root) == before


def test_export_refuses_a_folder_that_is_not_a_record(scratch_root, capsys):
    (scratch_root / "mine").mkdir()
    (scratch_root / "mine" / "thesis.tex").write_text("a week of work")
    argv = ["family", "export", "--lock", "lock.json", "--out", "S", "--to", "mine"]
    assert "not a family study record" in _refused(argv, capsys)
    assert (scratch_root / "mine" / "thesis.tex").read_text() == "a week of work"


def test_a_destination_overlapping_a_source_is_refused(tmp_path):
    source = tmp_path / "study"
    (source / "runs").mkdir(parents=True)
    for dest in (source, source / "runs", tmp_path):
        with pytest.raises(ValueError, match="overlaps"):
            record_folders.check_destination(dest, KIND, [source])
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="symlink"):
        record_folders.check_destination(link, KIND, [source])


def test_a_record_is_swapped_in_and_a_failed_write_keeps_the_old_one(tmp_path):
    dest = tmp_path / "record"
    record_folders.replace_folder(dest, KIND, lambda f: (f / "a.json").write_text("1"))
    assert (dest / "a.json").read_text() == "1"

    def half(folder):
        (folder / "a.json").write_text("2")
        raise OSError(errno.EIO, "the disk went away")

    with pytest.raises(OSError):
        record_folders.replace_folder(dest, KIND, half)
    assert (dest / "a.json").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record"]  # no temporary left
    record_folders.replace_folder(dest, KIND, lambda f: (f / "a.json").write_text("3"))
    assert _tree(dest) == {"a.json": b"3"}


# ------------------------------------------------------------------ the folder lock
def _planted(tmp_path, kind: str) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    lock = out / runlock.LOCK_NAME
    if kind == "symlink":
        lock.symlink_to(notes)
    elif kind == "hard link":
        os.link(notes, lock)
    elif kind == "folder":
        lock.mkdir()
    else:
        lock.write_text("not a lock note")
    return out


@pytest.mark.parametrize("kind", ["symlink", "hard link", "folder", "foreign"])
def test_a_lock_that_is_not_ours_is_refused_untouched(kind, tmp_path):
    out = _planted(tmp_path, kind)
    with pytest.raises((runlock.RunFolderError, files.SymlinkInFolderError)) as refused:
        with runlock.locked(out, "test"):
            pytest.fail("the lock was taken")
    assert "\n" not in str(refused.value)
    if kind in ("symlink", "hard link"):  # refused by the open itself too (O_NOFOLLOW)
        with pytest.raises(runlock.RunFolderError):
            runlock._open_lock(out / runlock.LOCK_NAME)
    assert (tmp_path / "notes.txt").read_text() == "my notes"


def test_the_lock_is_refused_through_the_command_line(tmp_path, capsys):
    out = _planted(tmp_path, "symlink")
    assert "symlink" in _refused(["learn", "band-screen", "--out", str(out)], capsys)
    assert (tmp_path / "notes.txt").read_text() == "my notes"


# ------------------------------------------------------------------ run-folder symlinks
@pytest.fixture
def crash_link(tmp_path):
    """OUT/crash planted as a symlink to a folder outside the run, holding a file."""
    outside = tmp_path / "outside" / "warmstart-continuous"
    outside.mkdir(parents=True)
    (outside / "keep.txt").write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    (out / crash.CRASH_DIR).symlink_to(tmp_path / "outside")
    return out, outside


def test_crash_states_are_never_written_or_removed_through_a_symlink(crash_link):
    out, outside = crash_link
    with pytest.raises(files.SymlinkInFolderError):
        crash.save(out, "warmstart-continuous", {"x": torch.zeros(2)}, 1)
    with pytest.raises(files.SymlinkInFolderError):
        crash.clear(out, "warmstart-continuous")
    assert _tree(outside) == {"keep.txt": b"keep"}


def test_a_stage_refuses_a_run_folder_holding_a_symlink(crash_link, capsys):
    out, outside = crash_link
    err = _refused(["warmstart", "--config", "smoke", "--out", str(out)], capsys)
    assert "crash is a symlink" in err
    assert _tree(outside) == {"keep.txt": b"keep"}


# ------------------------------------------------------------------ dry runs, options
LOCK = "configs/part2/lock.json"


def test_a_dry_run_writes_nothing(tmp_path, capsys):
    out = tmp_path / "study"
    argv = ["family", "study", "--lock", LOCK, "--out", str(out), "--seeds", "11", "--dry-run"]
    assert cli.main(argv) == 0
    assert "on_policy" in capsys.readouterr().out
    assert not out.exists()


@pytest.mark.parametrize(
    "extra", [["--devices", "0"], ["--shard", "0/2"], ["--retries", "3"], ["--config", "x"]]
)
def test_an_option_the_default_backend_does_not_read_is_refused(extra, tmp_path, capsys):
    out = tmp_path / "study"
    err = _refused(["family", "study", "--lock", LOCK, "--out", str(out), *extra], capsys)
    assert extra[0] in err and "refused rather than ignored" in err
    assert not out.exists()


def test_device_names_are_checked():
    from verifiable_grpo.part2.trl import study as trl_study

    assert [s.devices for s in trl_study.parse_slots("0,GPU-1a2b", {}, 1)] == [["0"], ["GPU-1a2b"]]
    for spec in ("foo", "0,../x", "-1"):
        with pytest.raises(Exception, match="is not a device"):
            trl_study.parse_slots(spec, {}, 1)


def test_a_full_disk_is_one_line_and_keeps_the_file(tmp_path, monkeypatch, capsys):
    path = files.save_json(tmp_path / "record.json", {"kept": True})

    def full(_tmp):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as raised:
        files.write_with(path, full, overwrite=True)
    assert files.read_json(path) == {"kept": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]
    monkeypatch.setattr(cli, "_main", lambda argv: (_ for _ in ()).throw(raised.value))
    err = _refused(["data"], capsys)
    assert "no space left" in err and str(tmp_path) in err


def test_every_attack_of_the_threat_model_names_a_test_that_exists():
    page = (repo_root() / "book/provenance.md").read_text()
    block = page.split("<!-- attacks-refused -->")[1].split("<!-- /attacks-refused -->")[0]
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", block)
    assert len(named) == block.count("\n| ") - 1  # one test per attack, the header aside
    for path, test in named:
        assert f"def {test}(" in (repo_root() / path).read_text(), f"{path}::{test}"


def test_a_torch_write_failing_on_a_full_disk_is_a_full_disk(tmp_path, monkeypatch):
    def torch_like(_tmp):
        raise RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")

    monkeypatch.setattr(files, "disk_full", lambda folder: True)
    with pytest.raises(OSError) as raised:
        files.write_with(tmp_path / "state.pt", torch_like)
    assert raised.value.errno == errno.ENOSPC and list(tmp_path.iterdir()) == []
    monkeypatch.setattr(files, "disk_full", lambda folder: False)
    with pytest.raises(RuntimeError):  # any other failure keeps its own error
        files.write_with(tmp_path / "state.pt", torch_like)
