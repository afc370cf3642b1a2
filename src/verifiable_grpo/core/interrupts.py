"""SIGINT and SIGTERM: finish the step in flight, save, and stop with one clear line.

The first signal only sets a flag; training loops call `check()` at their safe points
(after an iteration or an update is saved) and `StopRequested` unwinds to the command,
which prints what was kept and how to continue. A second signal stops at once
(KeyboardInterrupt): the step in flight is abandoned, and the atomic writers remove their
temporary files on the way out.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

_requested: list[str] = []


class StopRequested(Exception):
    """A stop was asked for (SIGINT/SIGTERM) and a safe point was reached."""

    def __init__(self, signal_name: str, where: str = ""):
        self.signal_name, self.where = signal_name, where
        super().__init__(f"{signal_name} received; stopped {where}".strip())

    def __reduce__(self):  # raised in a worker process, re-raised by the parent
        return (StopRequested, (self.signal_name, self.where))

    @property
    def exit_code(self) -> int:  # the shell convention: 128 + signal number
        return 128 + int(getattr(signal, self.signal_name))


def _handler(number, frame) -> None:
    name = signal.Signals(number).name
    if _requested:
        raise KeyboardInterrupt(f"second {name}: stopping at once")
    _requested.append(name)


def requested() -> str | None:
    return _requested[0] if _requested else None


def check(where: str = "") -> None:
    """At a safe point: raise StopRequested if a stop was asked for."""
    if _requested:
        raise StopRequested(_requested[0], where)


@contextlib.contextmanager
def graceful_stop() -> Iterator[None]:
    """Install the handlers for the duration of a command (main thread only)."""
    previous = {}
    try:
        for number in (signal.SIGINT, signal.SIGTERM):
            previous[number] = signal.signal(number, _handler)
    except ValueError:  # not the main thread (a notebook worker): leave signals alone
        previous = {}
    _requested.clear()
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _requested.clear()


def die_with_parent() -> None:
    """In a child, before exec: SIGTERM when its parent dies (kill -9 included), so no
    launch trains on unwatched (Linux prctl PR_SET_PDEATHSIG; elsewhere a no-op)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
