"""One process per run folder: an exclusive lock on OUT/.lock.

The lock is an flock held for the whole command, so the kernel releases it when the
holder dies, however it dies; the file keeps the holder's PID and start time so that a
second command can say who holds it, and a lock left by a dead holder is taken over.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from verifiable_grpo.core import files

LOCK_NAME = ".lock"


class RunFolderError(ValueError):
    """OUT cannot serve as a run folder: a file is in the way, or it cannot be written."""


class RunFolderBusyError(RunFolderError):
    """Another live process holds the run folder."""


# Linux filesystems (ext4, xfs, tmpfs) take names of at most 255 bytes, and the kernel
# paths of at most 4,096; a longer --out fails at its first write, so it is refused first.
NAME_MAX = 255
PATH_MAX = 4096


def check_out_path(out: str | os.PathLike) -> Path:
    """--out as a Path, refused in one line (RunFolderError) when a name in it is longer
    than the filesystem takes, or when it is a folder that holds a symlink (a planted one:
    writing or removing through it would change files elsewhere; files.refuse_symlinks)."""
    out = Path(out)
    whole = len(os.fsencode(str(out.absolute())))
    longest = max((len(os.fsencode(part)) for part in out.parts), default=0)
    if longest > NAME_MAX or whole > PATH_MAX:
        raise RunFolderError(
            f"--out {files.shorten(str(out), 80)}: a name of {longest} bytes or a path of "
            f"{whole} (the filesystem takes names up to {NAME_MAX}, paths up to {PATH_MAX}); "
            "choose a shorter folder"
        )
    if out.is_dir():
        files.refuse_symlinks(out)
    return out


def usable_folder(out: str | os.PathLike) -> Path:
    """OUT, created if needed; a one-line RunFolderError (before any compute) when an
    existing file is in the way or the place cannot be written (/proc, /sys, no rights)."""
    out = check_out_path(out)
    for place in (out, *out.parents):
        if place.exists():
            if not place.is_dir():
                raise RunFolderError(
                    f"--out {out}: {place} is a file, not a folder; pass a folder path"
                )
            break
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        probe.unlink()
    except OSError as err:
        raise RunFolderError(
            f"--out {out} cannot be written here ({type(err).__name__}: "
            f"{err.strerror or err}); pass a folder you can write"
        ) from None
    return out


def _holder(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:  # a holder note is a few hundred bytes
            holder = json.loads(handle.read(1 << 16) or "{}")
        return holder if isinstance(holder, dict) else {}
    except (OSError, ValueError, RecursionError):
        return {}


def _open_lock(path: Path):
    """OUT/.lock opened for reading and writing, created if absent, never truncated here.
    O_NOFOLLOW: a planted symlink is refused, not followed to the file it names; a .lock
    that is not a plain file of its own (a folder, a fifo, a hard link to another file)
    is refused too, in one line, before a byte of it changes."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise RunFolderError(
            f"{path} cannot serve as the folder's lock ({err.strerror or err}: a symlink or "
            "not a plain file); refused untouched: remove it, or use another --out"
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise RunFolderError(
            f"{path} is not a plain file of its own (a special file or a hard link to "
            "another file); refused untouched: remove it, or use another --out"
        )
    return os.fdopen(fd, "a+", encoding="utf-8")


@contextlib.contextmanager
def locked(out: str | os.PathLike, command: str = "") -> Iterator[dict]:
    """Hold OUT/.lock; yields {"took_over": previous holder or None}. A folder this call
    created and left holding only the lock (a command refused before writing anything) is
    removed again, so a refusal leaves nothing behind."""
    fresh = not Path(out).exists()
    out = usable_folder(out)  # checks that nothing in it is a planted symlink
    path = out / LOCK_NAME
    handle = _open_lock(path)
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(path)
            raise RunFolderBusyError(
                f"{out} is in use by another process (PID {holder.get('pid', '?')} on "
                f"{holder.get('host', '?')}, started {holder.get('started_at', '?')}, "
                f"command {holder.get('command', '?')!r}); wait for it to finish or use "
                "another --out"
            ) from None
        previous = _holder(path) or None  # still there: its holder died without cleaning up
        if previous is None and os.fstat(handle.fileno()).st_size:
            raise RunFolderError(
                f"{path} holds something other than a lock note of this project; refused "
                "untouched (remove it if it is yours, or use another --out)"
            )
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "command": command,
                }
            )
        )
        handle.flush()
        try:
            yield {"took_over": previous}
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            if fresh and [p.name for p in out.iterdir()] == [LOCK_NAME]:
                path.unlink()  # still holding the flock: nobody else is inside
                out.rmdir()
    finally:
        handle.close()  # closing releases the flock


PARENT_ENV = "VERIFIABLE_GRPO_PARENT_PID"  # set by a parent for its worker commands


def exit_with_parent(parent: int | None = None, poll_seconds: float = 1.0) -> None:
    """Exit this process (status 70) within `poll_seconds` of its parent's death (kill -9
    included), from a daemon thread; `parent` defaults to $VERIFIABLE_GRPO_PARENT_PID, and
    without either nothing is watched."""
    if parent is None:
        parent = int(os.environ.get(PARENT_ENV, "0") or 0)
    if not parent:
        return

    def watch():
        while True:
            if os.getppid() != parent:
                os._exit(70)
            time.sleep(poll_seconds)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()
