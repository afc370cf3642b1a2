"""Crash-safe file writes and reads that name the file when it is damaged.

A write goes to a temporary file created exclusively (O_EXCL, unpredictable name) in the
target's own folder, is flushed and fsync'd, then renamed over the final name and the
folder fsync'd: a reader sees either nothing or the whole file, a planted symlink is
never followed, and a crash leaves at worst a `.tmp-*` file that is not evidence
(`remove_temporaries` clears those).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TEMP_PREFIX = ".tmp-"


class DamagedFileError(ValueError):
    """A file exists but cannot be read as what it should be (truncated, altered)."""


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some filesystems do not open folders; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary path next to `path`; on success it becomes `path`.

    Refuses an existing target unless overwrite. On any exception (KeyboardInterrupt
    included) the temporary file is removed and nothing appears under the final name.
    """
    path = Path(path)
    if not overwrite and (path.exists() or path.is_symlink()):
        raise FileExistsError(
            f"{path} exists; evidence is never overwritten (use a new --out folder)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{path.name}.", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        if not overwrite and (path.exists() or path.is_symlink()):
            raise FileExistsError(
                f"{path} appeared while it was being written; evidence is never overwritten"
            )
        os.replace(tmp, path)
        fsync_folder(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_bytes(path: str | os.PathLike, data: bytes, overwrite: bool = False) -> Path:
    with atomic_target(path, overwrite) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_with(
    path: str | os.PathLike, writer: Callable[[Path], None], overwrite: bool = False
) -> Path:
    """Let `writer(tmp_path)` produce the file, then publish it atomically."""
    with atomic_target(path, overwrite) as tmp:
        writer(tmp)
    return Path(path)


def save_json(path: str | os.PathLike, value: Any, overwrite: bool = False) -> Path:
    """Write JSON atomically; refuses to replace evidence unless told to."""
    text = json.dumps(value, indent=1, sort_keys=False) + "\n"
    return write_bytes(path, text.encode("utf-8"), overwrite)


def read_json(path: str | os.PathLike) -> Any:
    """JSON from a file; a truncated or altered file is named in the error."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DamagedFileError(
            f"{path} is damaged (not valid JSON: {err}); it was truncated or altered"
        ) from err


def check_sha256(path: str | os.PathLike, expected: str | None, what: str = "file") -> None:
    """DamagedFileError unless the file's SHA-256 is the recorded one (None: no check)."""
    if expected is None:
        return
    found = sha256_file(path)
    if found != expected:
        raise DamagedFileError(
            f"{path}: SHA-256 {found[:16]}... differs from the recorded "
            f"{expected[:16]}... ({what} altered or damaged after it was "
            "written); use a new --out or restore the file"
        )


def remove_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete the `.tmp-*` leftovers of writes that a crash cut short; returns them."""
    removed = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    for root, _, names in os.walk(folder):
        for name in names:
            if name.startswith(TEMP_PREFIX):
                path = Path(root) / name
                path.unlink()
                removed.append(path)
    return removed
