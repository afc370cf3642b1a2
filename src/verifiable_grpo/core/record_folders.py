"""Replacing a record folder (a trimmed study, a sweep summary) without ever deleting what
the user did not mean to replace.

An export names its destination on the command line, so a slip (`--to .`, `--to ""`, the
study folder itself) must not cost a checkout or a week of runs. Before anything is
touched, `check_destination` refuses a destination that
- overlaps a source it reads (equal to it, inside it, or holding it),
- is the repository root, the working folder or the home folder, or a parent of one,
- is a symlink, or a file, or
- is a non-empty folder that is not a previous record of the same kind (a RecordKind:
  only the entries such a record holds, and the one it always holds).
`replace_folder` then writes the new record into a temporary sibling folder and swaps it
in by rename: a failure while writing leaves the old record as it was, and the old record
is removed only once the new one stands in its place.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from verifiable_grpo.core import files

RETIRED_PREFIX = ".old-"  # a replaced record in the instant between the swap and its removal


@dataclass(frozen=True)
class RecordKind:
    """What a record folder of one kind holds at its top level."""

    what: str  # how an error names it, e.g. "family study record"
    entries: frozenset[str]  # every top-level name such a record may hold
    marker: str  # the entry every such record holds


def _protected() -> list[Path]:
    """Folders an export must never replace, nor any parent of them."""
    from verifiable_grpo.core.config import repo_root

    places = [Path.cwd(), Path.home()]
    try:
        places.append(repo_root())
    except FileNotFoundError:
        pass
    return [p.resolve() for p in places]


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a in b.parents or b in a.parents


def is_record_of(folder: Path, kind: RecordKind) -> bool:
    """Whether `folder` is a previous record of this kind (only its entries, its marker)."""
    names = {p.name for p in folder.iterdir()}
    return kind.marker in names and names <= kind.entries


def check_destination(dest, kind: RecordKind, sources: Iterable = ()) -> Path:
    """`dest` as an absolute path, or a one-line ValueError saying why it is refused."""
    text = str(dest)
    if not text.strip() or text.strip() == ".":
        raise ValueError(f"destination {text!r} names the current folder; name a record folder")
    dest = Path(dest).absolute()
    if dest.is_symlink():
        raise ValueError(f"destination {dest} is a symlink; name the record folder itself")
    real = dest.resolve()
    for source in sources:
        if _overlaps(real, Path(source).resolve()):
            raise ValueError(
                f"destination {dest} overlaps {source}, which the export reads; "
                "record it in a folder of its own"
            )
    for place in _protected():
        if real == place or real in place.parents:
            raise ValueError(
                f"destination {dest} is {place} or a folder holding it; refused (an export "
                "replaces its destination whole)"
            )
    if dest.exists() and not dest.is_dir():
        raise ValueError(f"destination {dest} is a file, not a record folder")
    if dest.is_dir() and any(dest.iterdir()) and not is_record_of(dest, kind):
        raise ValueError(
            f"destination {dest} is a non-empty folder that is not a {kind.what} (one holds "
            f"{kind.marker} and only {sorted(kind.entries)}); refused, nothing was touched"
        )
    return dest


def replace_folder(
    dest, kind: RecordKind, write: Callable[[Path], object], sources: Iterable = ()
) -> Path:
    """Check `dest`, let `write(folder)` fill a fresh sibling folder, then swap it in."""
    sources = list(sources)
    dest = check_destination(dest, kind, sources)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{files.TEMP_PREFIX}{dest.name}.", dir=dest.parent))
    retired = None
    try:
        write(staging)
        check_destination(dest, kind, sources)  # still what it was when we started
        if dest.exists():
            retired = Path(
                tempfile.mkdtemp(prefix=f"{RETIRED_PREFIX}{dest.name}.", dir=dest.parent)
            )
            os.rename(dest, retired / "record")
        try:
            os.rename(staging, dest)
        except OSError:
            if retired is not None:
                os.rename(retired / "record", dest)  # put the old record back
                retired.rmdir()
                retired = None
            raise
        files.fsync_folder(dest.parent)
    finally:
        if staging.exists():
            shutil.rmtree(staging)  # our own temporary folder, never a symlink
    if retired is not None:
        shutil.rmtree(retired)  # the previous record of this kind, now replaced
    return dest
