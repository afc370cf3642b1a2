"""Seals anchored outside the file they certify: a folder's ledger of its seals' digests.

A seal (a crash note, a checkpoint record, a TRL checkpoint's digest list) certifies a
state by its SHA-256. On its own it certifies itself: whoever edits the state and writes a
new seal for it (the project's own `seal()` does) is believed. So every seal, once
written, is itself digested into FOLDER/anchors.json, next to the stamp's SHA-256 of the
run it belongs to (core.preregistration). A resume reads a seal only when the ledger holds
that seal's SHA-256:

- an entry that differs: the seal was rewritten after it was anchored; refused in one line;
- no entry: the seal was written but the process died before anchoring it (or it predates
  anchors): the caller treats it as cut short, as it treats a state without its seal, and
  never resumes from it;
- the ledger's `stamp_sha256` is the stamp the folder's first seal was written under;
  `preregistration.stamp_folder` refuses a stamp that differs from it, or a missing one.

This catches an accidental or careless edit, and a tampering that re-seals one file. A
local user who can write every file can recompute the ledger too (see the threat model
appendix): the anchors raise the cost of a forgery, they cannot make one impossible.
"""

from __future__ import annotations

import os
from pathlib import Path

from verifiable_grpo.core import files

LEDGER = "anchors.json"
SCHEMA = "verifiable-grpo-anchors-v1"


class ResealedError(files.DamagedFileError):
    """A seal whose SHA-256 differs from its anchor: rewritten after it was anchored."""


def _read(folder: Path) -> dict | None:
    path = folder / LEDGER
    if path.is_symlink():
        raise files.DamagedFileError(f"{path}: a symlink; an anchor ledger is a plain file")
    if not path.is_file():
        return None
    ledger = files.read_json(path)
    if (
        not isinstance(ledger, dict)
        or ledger.get("schema") != SCHEMA
        or not isinstance(ledger.get("seals"), dict)
    ):
        raise files.DamagedFileError(f"{path} is not a {SCHEMA} ledger")
    return ledger


def _name(folder: Path, seal: str | os.PathLike) -> str:
    """A seal's name in the ledger: its path relative to the ledger's folder."""
    path = Path(seal)
    return (path if not path.is_absolute() else path.relative_to(folder)).as_posix()


def anchor(folder: str | os.PathLike, seal: str | os.PathLike, stamp_sha256: str | None) -> dict:
    """Digest the seal (already written; a path inside FOLDER, or relative to it) into
    FOLDER/anchors.json. The ledger keeps the stamp it was first written under."""
    folder = Path(folder)
    ledger = _read(folder) or {"schema": SCHEMA, "stamp_sha256": stamp_sha256, "seals": {}}
    name = _name(folder, seal)
    ledger["seals"][name] = files.sha256_file(folder / name)
    files.save_json(folder / LEDGER, ledger, overwrite=True)
    return ledger


def forget(folder: str | os.PathLike, keep=None, drop=()) -> None:
    """Drop the entries of seals no longer kept (their pairs were removed; keep None: all
    kept), and those named in `drop` (a seal about to be written again)."""
    folder = Path(folder)
    ledger = _read(folder)
    if ledger is None:
        return
    kept = {
        name: sha
        for name, sha in ledger["seals"].items()
        if (keep is None or name in set(keep)) and name not in set(drop)
    }
    if kept != ledger["seals"]:
        files.save_json(folder / LEDGER, {**ledger, "seals": kept}, overwrite=True)


def is_anchored(folder: str | os.PathLike, seal: str | os.PathLike, what: str) -> bool:
    """True when the ledger holds this seal's SHA-256; False when it holds no entry for it
    (cut short before anchoring); ResealedError when it holds another."""
    folder = Path(folder)
    name = _name(folder, seal)
    ledger = _read(folder)
    recorded = ledger["seals"].get(name) if ledger else None
    if recorded is None:
        return False
    if files.sha256_file(folder / name) != recorded:
        raise ResealedError(
            f"{folder / name}: this {what}'s seal was rewritten after it was anchored in "
            f"{folder / LEDGER} (a state edited and sealed again?); restore it, or move the "
            "folder aside and start the run again"
        )
    return True


def stamps_under(folder: str | os.PathLike) -> dict[Path, str | None]:
    """Every ledger under `folder` with the stamp SHA-256 its first seal was written under."""
    found = {}
    for root, _dirs, names in os.walk(folder):
        if LEDGER in names:
            ledger = _read(Path(root))
            found[Path(root) / LEDGER] = ledger.get("stamp_sha256") if ledger else None
    return found


def stamp_of(folder: str | os.PathLike) -> str | None:
    """The stamp SHA-256 recorded by FOLDER's ledger (None: no ledger, or no stamp)."""
    ledger = _read(Path(folder))
    return ledger.get("stamp_sha256") if ledger else None


def has_ledger(folder: str | os.PathLike) -> bool:
    return (Path(folder) / LEDGER).is_file()
