"""Crash-safe file writes and reads that name the file when it is damaged.

A write goes to a temporary file created exclusively (O_EXCL, unpredictable name) in the
target's own folder, is flushed and fsync'd, then renamed over the final name and the
folder fsync'd: a reader sees either nothing or the whole file, a planted symlink is
never followed, and a crash leaves at worst a `.tmp-*` file that is not evidence
(`remove_temporaries` clears those).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TEMP_PREFIX = ".tmp-"
# Bounds on what is read back (items 2 of the threat model in book/provenance.md): the
# biggest record a run writes is a few MB, and none nests deeper than a dozen levels.
MAX_JSON_BYTES = 32 << 20
MAX_DEPTH = 100
SHOWN_CHARS = 200  # a value quoted in an error message is cut to this length


class DamagedFileError(ValueError):
    """A file exists but cannot be read as what it should be (truncated, altered)."""


class OutsideFolderError(ValueError):
    """A path read from a record or note leads outside the folder it must stay in."""


class SymlinkInFolderError(OutsideFolderError):
    """A run folder holds a symlink: a write or a removal through it would land elsewhere."""


def refuse_symlinks(folder: str | os.PathLike, below: str | os.PathLike | None = None) -> None:
    """SymlinkInFolderError when `below` (default: the whole of `folder`) or any path
    between `folder` and it, or anything under it, is a symlink. A command calls this
    before it writes or removes anything in a run folder: no file this project writes is
    a symlink, so one found there was planted, and following it would write, truncate or
    delete outside the folder. `folder` itself may be a symlink (a run folder on another
    disk); nothing inside it may."""
    folder = Path(folder)
    target = folder if below is None else Path(below)
    rel = target.relative_to(folder)
    place = folder
    for part in rel.parts:
        place = place / part
        if place.is_symlink():
            raise _symlink_error(folder, place)
    if not target.is_dir():
        return
    for root, names, leaves in os.walk(target):  # os.walk never descends through a symlink
        for name in (*names, *leaves):
            if os.path.islink(os.path.join(root, name)):
                raise _symlink_error(folder, Path(root) / name)


def _symlink_error(folder: Path, place: Path) -> SymlinkInFolderError:
    return SymlinkInFolderError(
        f"{place} is a symlink inside the run folder {folder}; a run folder holds no "
        "symlinks (writing through one would change files elsewhere): remove it, or use "
        "another --out"
    )


def remove_tree(folder: str | os.PathLike, path: str | os.PathLike) -> None:
    """shutil.rmtree(`path`), a folder inside the run folder `folder`, refused (one line)
    when it or a folder on the way to it is a symlink: never delete through one."""
    path = Path(path)
    refuse_symlinks(folder, path)
    if path.exists():
        shutil.rmtree(path)


def inside(
    base: str | os.PathLike, rel: Any, what: str, allowed: tuple | list | None = None
) -> Path:
    """`base`/`rel` with every symlink resolved: a path a record or note names (relative to
    `base`) must stay inside `base` (or inside one of `allowed`), so that an edited record
    cannot make a command read, hash or load a file elsewhere. OutsideFolderError (one
    line) for an absolute path, a '..' that climbs out, or a symlink that leads out."""
    text = str(rel) if isinstance(rel, (str, os.PathLike)) else ""
    if not text or "\x00" in text:
        raise OutsideFolderError(f"{what}: {shorten(repr(rel))} is not a relative path")
    if Path(text).is_absolute():
        raise OutsideFolderError(
            f"{what}: {shorten(text)} is an absolute path; a record names its files "
            f"relative to {base}; refused"
        )
    target = (Path(base) / text).resolve()
    for root in allowed if allowed is not None else [base]:
        root = Path(root).resolve()
        if target == root or root in target.parents:
            return target
    where = " or ".join(str(r) for r in (allowed if allowed is not None else [base]))
    raise OutsideFolderError(
        f"{what}: {shorten(text)} leads outside {where} (through '..' or a symlink); refused"
    )


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


FULL_BELOW_BYTES = 1 << 20  # a folder with less room than this cannot take any record


def disk_full(folder: Path) -> bool:
    """Whether the filesystem holding `folder` has (almost) no room left for this user."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < FULL_BELOW_BYTES


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
    except OSError as err:
        err.folder = path.parent  # a full disk is reported naming the folder (core/refusals)
        raise
    except RuntimeError as err:  # torch.save reports a failed write so, errno lost
        if not disk_full(path.parent):
            raise
        raise OSError(errno.ENOSPC, f"no space left writing {path}", str(path.parent)) from err
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


def shorten(text: Any, limit: int = SHOWN_CHARS) -> str:
    """`text` as a string of at most about `limit` characters (an error quotes a value, never
    a whole file's worth of it)."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def check_size(path: str | os.PathLike, limit: int, what: str) -> None:
    """DamagedFileError when the file is bigger than `limit` bytes: refused before a byte of
    it is parsed."""
    size = os.stat(path).st_size
    if size > limit:
        raise DamagedFileError(
            f"{path}: {size:,} bytes, more than the {limit:,} a {what} of this project can "
            "reach; refused unread"
        )


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and mappings nest deeper than `limit` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def read_json(path: str | os.PathLike, limit: int = MAX_JSON_BYTES) -> Any:
    """JSON from a file; a truncated, altered, oversized or absurdly nested file is named in
    a one-line error."""
    check_size(path, limit, "JSON record")
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
        deep = too_deep(value)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DamagedFileError(
            f"{path} is damaged (not valid JSON: {shorten(err)}); it was truncated or altered"
        ) from err
    except RecursionError:  # the parser itself gave up on the nesting
        deep = True
    if deep:
        raise DamagedFileError(
            f"{path}: nested deeper than {MAX_DEPTH} levels, which no record of this project "
            "is; refused"
        )
    return value


def read_object(path: str | os.PathLike) -> dict:
    """A JSON record that must be an object ({...}): `[]`, `null`, a number or a string in
    its place is refused in one line naming the file (DamagedFileError), never a
    traceback from the first key a caller reads."""
    value = read_json(path)
    if not isinstance(value, dict):
        raise DamagedFileError(
            f"{path} holds a JSON {type(value).__name__}, not the object a record of this "
            "project is; it was altered: restore it or use a new --out"
        )
    return value


DIGEST_SUFFIX = ".sha256"


def save_cached_json(path: str | os.PathLike, value: Any) -> Path:
    """A result a rerun reuses instead of recomputing (a lift candidate's, a sweep
    setting's): written atomically, then its SHA-256 beside it (NAME.sha256)."""
    path = save_json(path, value)
    digest = sha256_file(path)
    write_bytes(path.with_name(path.name + DIGEST_SUFFIX), f"{digest}\n".encode(), True)
    return path


def read_cached_json(path: str | os.PathLike) -> Any:
    """A reused result, checked against the SHA-256 beside it; a result written before
    these digests (no NAME.sha256) is read as it is."""
    path = Path(path)
    beside = path.with_name(path.name + DIGEST_SUFFIX)
    if beside.is_file():
        with open(beside, encoding="utf-8") as handle:
            check_sha256(path, handle.read(100).strip(), "reused result")
    return read_json(path)


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
