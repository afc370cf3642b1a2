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
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

LOCK_NAME = ".lock"


class RunFolderError(ValueError):
    """OUT cannot serve as a run folder: a file is in the way, or it cannot be written."""


class RunFolderBusyError(RunFolderError):
    """Another live process holds the run folder."""


def usable_folder(out: str | os.PathLike) -> Path:
    """OUT, created if needed; a one-line RunFolderError (before any compute) when an
    existing file is in the way or the place cannot be written (/proc, /sys, no rights)."""
    out = Path(out)
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
        probe.touch()
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


@contextlib.contextmanager
def locked(out: str | os.PathLike, command: str = "") -> Iterator[dict]:
    """Hold OUT/.lock; yields {"took_over": previous holder or None}. A folder this call
    created and left holding only the lock (a command refused before writing anything) is
    removed again, so a refusal leaves nothing behind."""
    fresh = not Path(out).exists()
    out = usable_folder(out)
    path = out / LOCK_NAME
    handle = open(path, "a+", encoding="utf-8")
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
