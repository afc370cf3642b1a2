"""The inputs a run reads but did not write, checked by SHA-256 before they are used.

A run's own files are sealed as it writes them (core.folder_digests, core.anchors). Its
inputs are not: the base model's weights and tokenizer, and a prompts data file. So:

- a base folder that ships a BUILD.json (the tiny base: data/tiny-base) is checked
  against the SHA-256 list in it each time it is loaded, so a flipped byte in its weights
  is refused in one line naming the file instead of training;
- a run records its inputs' digests with its checkpoints, and a resume compares them
  before any compute (part2/trl/backend), so a prompts file edited between a stopped run
  and its continuation is refused.

Hashing the tiny base takes a few milliseconds, a larger base longer: a file's digest is
cached per process by (path, size, modification time), so a process that loads the same
base several times hashes it once; a file rewritten in place gets a new modification
time and is hashed again.
"""

from __future__ import annotations

import os
from pathlib import Path

from verifiable_grpo.core import files

BUILD_RECORD = "BUILD.json"
_CACHE: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file, cached by (resolved path, size, mtime in ns)."""
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _CACHE:
        _CACHE[key] = files.sha256_file(path)
    return _CACHE[key]


def verify_build(folder: str | os.PathLike) -> str | None:
    """Check every file BUILD.json lists in FOLDER against its SHA-256; the SHA-256 of
    BUILD.json itself (None when the folder ships none: a hub cache, a random model's
    tokenizer folder). files.DamagedFileError, naming the file, otherwise."""
    folder = Path(folder)
    record = folder / BUILD_RECORD
    if not record.is_file():
        return None
    build = files.read_json(record)
    listed = build.get("files_sha256") if isinstance(build, dict) else None
    if not isinstance(listed, dict):
        raise files.DamagedFileError(f"{record}: no files_sha256 list; not a base's build record")
    for name, expected in sorted(listed.items()):
        path = files.inside(folder, name, f"{record}: files_sha256")
        if path.is_symlink() or not path.is_file():
            raise files.DamagedFileError(f"{path}: listed in {record} but not a plain file")
        if file_sha256(path) != expected:
            raise files.DamagedFileError(
                f"{path}: its SHA-256 differs from the one {record} lists (the base model was "
                "altered or damaged); restore the file, e.g. `git checkout -- "
                f"{path.name}` in {folder}"
            )
    return file_sha256(record)


def check_unchanged(recorded: dict, now: dict, where) -> None:
    """ValueError (one line) naming the first input whose digest differs between what a
    run recorded at `where` (a checkpoint) and what it would read today."""
    changed = sorted(k for k in set(recorded) | set(now) if recorded.get(k) != now.get(k))
    if changed:
        raise ValueError(
            f"{where}: the run's input {changed[0]} changed since this checkpoint was written "
            "(its SHA-256 differs); a run continues on the inputs it started with: restore "
            "them, or use a new --out folder"
        )
