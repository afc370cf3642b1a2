"""A folder sealed by the SHA-256 of every file in it, checked before anything is read back.

Some states are written by other libraries as a folder of files: TRL's checkpoint-N
(adapter, optimizer, scheduler, RNG streams, trainer state), the SmolLM2 FP32 folder
(weights and tokenizer). They carry no digest of their own, so a flipped byte would load
silently. `seal` writes, once the folder is complete, a record listing each file's size
and SHA-256 (atomically, last: a folder without its record was cut short); `verify` checks
the folder against it and refuses, in one line naming the file, a changed, missing or
added file and a symlink (which could point anywhere).
"""

from __future__ import annotations

import os
from pathlib import Path

from verifiable_grpo.core import files

SCHEMA = "verifiable-grpo-folder-digests-v1"


def _listing(folder: Path, record: str) -> dict[str, Path]:
    """Every entry under `folder` by its relative POSIX name (the record itself left out)."""
    found = {}
    for root, dirs, names in os.walk(folder):
        for name in [*names, *(d for d in dirs if (Path(root) / d).is_symlink())]:
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            if rel != record:
                found[rel] = path
    return found


def seal(folder: str | os.PathLike, record: str, why: str = "") -> Path:
    """Write FOLDER/record: {file: {"sha256", "bytes"}} for every file now in the folder."""
    folder = Path(folder)
    entries = {}
    for rel, path in sorted(_listing(folder, record).items()):
        if path.is_symlink() or not path.is_file():
            raise files.DamagedFileError(f"{path}: not a plain file; a sealed folder holds files")
        entries[rel] = {"sha256": files.sha256_file(path), "bytes": path.stat().st_size}
    return files.save_json(
        folder / record, {"schema": SCHEMA, "why": why, "files": entries}, overwrite=True
    )


def is_sealed(folder: str | os.PathLike, record: str) -> bool:
    return (Path(folder) / record).is_file()


def verify(folder: str | os.PathLike, record: str, what: str) -> dict:
    """The record of a folder whose every file matches it; DamagedFileError (one line, naming
    the first file that does not) otherwise."""
    folder = Path(folder)
    path = folder / record
    if not path.is_file():
        raise files.DamagedFileError(
            f"{folder}: no {record}; this {what} was not sealed when it was written"
        )
    sealed = files.read_json(path)
    listed = sealed.get("files") if isinstance(sealed, dict) else None
    if not isinstance(listed, dict) or sealed.get("schema") != SCHEMA:
        raise files.DamagedFileError(f"{path} is not a {SCHEMA} record")
    present = _listing(folder, record)
    for rel, entry in sorted(listed.items()):
        where = present.get(rel)
        if where is None:
            raise files.DamagedFileError(
                f"{folder / rel}: missing from the {what}, which listed it when it was written"
            )
        _check_entry(where, entry, what)
    for rel in sorted(set(present) - set(listed)):
        raise files.DamagedFileError(
            f"{folder / rel}: not part of the {what} when it was written (added later); "
            "remove it or use a new --out folder"
        )
    return sealed


def _check_entry(path: Path, entry: dict, what: str) -> None:
    if path.is_symlink() or not path.is_file():
        raise files.DamagedFileError(f"{path}: not a plain file; the {what} holds files only")
    size = path.stat().st_size
    if size != entry.get("bytes") or files.sha256_file(path) != entry.get("sha256"):
        raise files.DamagedFileError(
            f"{path}: its SHA-256 differs from the one recorded when the {what} was written "
            "(altered or damaged since); restore it, remove the folder, or use a new --out"
        )
