"""A start stamp read back is believed only if it agrees with what lies outside it.

A stamp (core.preregistration) is a file in the run folder: anyone can edit it. On every
resume it is checked against three things it cannot change by itself:

- its form: a plain file (not a symlink) holding one JSON object with the four fields a
  stamp is written with; a recorded (non-exploratory) stamp says its tree was clean;
- git: the stamped commit exists in this repository, was committed no later than the
  stamp's time, and is the commit being resumed or one of its ancestors; the stamp's time
  is not in the future;
- the anchors (core.anchors): every seal written in the folder recorded the SHA-256 of
  the stamp it was written under; a stamp with another SHA-256 was edited or replaced,
  and a missing stamp under such seals was deleted. Either is refused, never rewritten.

Each refusal is one line naming the file and what to do.
"""

from __future__ import annotations

import datetime
import re
import subprocess
from pathlib import Path

from verifiable_grpo.core import anchors, files
from verifiable_grpo.core.config import ConfigError, repo_root

STAMP_FILE = "started.json"
FIELDS = {"git_commit", "clean_tree", "started_at", "exploratory"}
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def _refuse(path: Path, why: str) -> ConfigError:
    return ConfigError(
        [f"{path}: {why}; a start stamp is never rewritten: restore it or use a new --out"]
    )


def _git(root: Path | None, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=root or repo_root(), capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _form(path: Path) -> dict:
    if path.is_symlink() or not path.is_file():
        raise _refuse(path, "not a plain file (a symlink or a folder)")
    try:
        stamp = files.read_json(path)
    except (ValueError, OSError) as err:
        raise _refuse(path, f"unreadable ({err})") from err
    if not isinstance(stamp, dict) or not FIELDS <= set(stamp):
        raise _refuse(path, f"not a start stamp (one JSON object with {sorted(FIELDS)})")
    commit = stamp["git_commit"]
    if not isinstance(stamp["exploratory"], bool) or not isinstance(stamp["clean_tree"], bool):
        raise _refuse(path, "exploratory and clean_tree must be true or false")
    if commit is not None and not (isinstance(commit, str) and _COMMIT.fullmatch(commit)):
        raise _refuse(path, f"git_commit {files.shorten(commit, 80)!r} is not a commit id")
    if not stamp["exploratory"] and (commit is None or not stamp["clean_tree"]):
        raise _refuse(
            path, "a recorded stamp is taken on a clean, committed tree, this one says not"
        )
    return stamp


def _started_at(path: Path, stamp: dict) -> datetime.datetime:
    try:
        when = datetime.datetime.fromisoformat(str(stamp["started_at"]))
    except ValueError as err:
        raise _refuse(path, f"started_at {stamp['started_at']!r} is not a time") from err
    if when.tzinfo is None:
        raise _refuse(path, "started_at has no time zone")
    if when > datetime.datetime.now(datetime.timezone.utc):
        raise _refuse(path, f"started_at {stamp['started_at']} is in the future")
    return when


def _check_git(path: Path, stamp: dict, root: Path | None) -> None:
    commit = stamp["git_commit"]
    when = _started_at(path, stamp)
    if commit is None:
        return  # an exploratory run outside a repository: nothing to check against
    shown = commit[:12]
    found = _git(root, "show", "-s", "--format=%ct", f"{commit}^{{commit}}")
    if found is None or found.returncode != 0 or not found.stdout.strip().isdigit():
        raise _refuse(path, f"its commit {shown} does not exist in this repository")
    committed = datetime.datetime.fromtimestamp(int(found.stdout.strip()), datetime.timezone.utc)
    if committed > when:
        raise _refuse(
            path,
            f"its commit {shown} was committed at {committed.isoformat()}, after the stamp's "
            f"started_at {stamp['started_at']}",
        )
    ancestor = _git(root, "merge-base", "--is-ancestor", commit, "HEAD")
    if ancestor is None or ancestor.returncode != 0:
        raise _refuse(path, f"its commit {shown} is not the commit being resumed nor an ancestor")


def check_anchors(folder: Path, stamp_sha256: str | None) -> None:
    """Refuse a stamp whose SHA-256 differs from the one the folder's seals recorded (or a
    missing stamp, `stamp_sha256` None, where seals recorded one)."""
    for ledger, recorded in sorted(anchors.stamps_under(folder).items()):
        if recorded is None or recorded == stamp_sha256:
            continue
        path = Path(folder) / STAMP_FILE
        if stamp_sha256 is None:
            raise _refuse(path, f"missing, but {ledger} was sealed under a stamp (deleted?)")
        raise _refuse(
            path,
            f"its SHA-256 {stamp_sha256[:12]} differs from {recorded[:12]}, the stamp "
            f"{ledger} was sealed under (edited or replaced since)",
        )


def checked_stamp(folder: Path, root: Path | None = None) -> dict:
    """FOLDER's stamp after every check above; ConfigError (one line) otherwise."""
    path = Path(folder) / STAMP_FILE
    stamp = _form(path)
    _check_git(path, stamp, root)
    check_anchors(Path(folder), files.sha256_file(path))
    return stamp


def stamp_sha256(folder: Path) -> str | None:
    """The SHA-256 of FOLDER's stamp as it is now (None: none, or not a plain file)."""
    path = Path(folder) / STAMP_FILE
    return None if path.is_symlink() or not path.is_file() else files.sha256_file(path)
