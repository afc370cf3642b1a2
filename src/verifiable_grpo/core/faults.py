"""Fault injection for the crash tests: die (or signal ourselves) at a named point.

VERIFIABLE_GRPO_FAULT="point[#n][:signal]" makes the n-th arrival (default 1st) at
`fault_point("point")` send the signal (default KILL) to this process. Points are named
where a crash is most harmful (inside a state write, between a record and its marker).
Unset, a fault point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "VERIFIABLE_GRPO_FAULT"
_arrivals: dict[str, int] = {}


def _parse(spec: str) -> tuple[str, int, int]:
    name, _, sig = spec.partition(":")
    name, _, nth = name.partition("#")
    number = getattr(signal, f"SIG{sig.upper()}") if sig else signal.SIGKILL
    return name, int(nth or 1), int(number)


def fault_point(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    target, nth, number = _parse(spec)
    if target != name:
        return
    _arrivals[name] = _arrivals.get(name, 0) + 1
    if _arrivals[name] == nth:
        os.kill(os.getpid(), number)
