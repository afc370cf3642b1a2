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
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

LOCK_NAME = ".lock"


class RunFolderBusyError(RuntimeError):
    """Another live process holds the run folder."""


def _holder(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def locked(out: str | os.PathLike, command: str = "") -> Iterator[dict]:
    """Hold OUT/.lock; yields {"took_over": previous holder or None}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
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
                "another --out") from None
        previous = _holder(path) or None  # still there: its holder died without cleaning up
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "started_at": datetime.now(timezone.utc).isoformat(
                                     timespec="seconds"), "command": command}))
        handle.flush()
        try:
            yield {"took_over": previous}
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
    finally:
        handle.close()  # closing releases the flock
