"""A recorded run stamps its commit at its start and refuses a dirty tree."""

from __future__ import annotations

import subprocess

import pytest

from verifiable_grpo.core import files, preregistration
from verifiable_grpo.core.config import ConfigError


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.org")
    _git(root, "config", "user.name", "t")
    (root / ".gitignore").write_text("runs/\n")
    (root / "declared.py").write_text("RULE = 1\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "declare")
    return root


def test_a_clean_tree_is_stamped_with_its_commit(repo):
    stamp = preregistration.start_stamp(False, repo)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    assert stamp["git_commit"] == head.stdout.strip()
    assert stamp["clean_tree"] is True and stamp["exploratory"] is False
    assert stamp["started_at"].endswith("+00:00")


@pytest.mark.parametrize("change", ["edit", "untracked"])
def test_an_uncommitted_declaration_is_refused_unless_exploratory(repo, change):
    if change == "edit":
        (repo / "declared.py").write_text("RULE = 2\n")
    else:
        (repo / "candidate.py").write_text("NEW = 1\n")
    with pytest.raises(ConfigError, match="--exploratory"):
        preregistration.start_stamp(False, repo)
    stamp = preregistration.start_stamp(True, repo)
    assert stamp["clean_tree"] is False and stamp["exploratory"] is True
    assert preregistration.label("run", stamp) == "run (exploratory)"


def test_ignored_run_folders_do_not_make_the_tree_dirty(repo):
    (repo / "runs").mkdir()
    (repo / "runs" / "x.json").write_text("{}")
    assert preregistration.start_stamp(False, repo)["clean_tree"] is True


def test_a_folder_keeps_its_first_stamp_and_refuses_another_commit(repo, tmp_path):
    folder = tmp_path / "out"
    first = preregistration.stamp_folder(folder, False, repo)
    assert preregistration.stamp_folder(folder, False, repo) == first
    assert files.read_json(folder / preregistration.STAMP_FILE) == first
    (repo / "declared.py").write_text("RULE = 3\n")
    _git(repo, "commit", "-qam", "another rule")
    with pytest.raises(ConfigError, match="resume it on its own commit"):
        preregistration.stamp_folder(folder, False, repo)
    with pytest.raises(ConfigError, match="started as recorded"):
        preregistration.stamp_folder(folder, True, repo)
