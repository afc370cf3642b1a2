"""Progress bars that honour TQDM_DISABLE at call time and stay small in log files.

tqdm reads TQDM_* variables when it is imported, and its notebook bar (tqdm.auto inside
Jupyter) passes its own `disable` default, so setting the variable later has no effect.
Executed notebooks must not print bars (nbval compares their streams), hence this wrapper.

A bar redraws itself up to ten times a second. On a terminal that overwrites one line; in a
log file every redraw is appended (about 1 MB for the tiny pipeline), so a bar whose stream
is not a terminal redraws at most every LOG_INTERVAL seconds unless the caller says otherwise.
"""

from __future__ import annotations

import os
import sys

LOG_INTERVAL = 30.0  # seconds between redraws of a bar written to a file or a pipe


def disabled_by_environment() -> bool:
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def tqdm(*args, **kwargs):
    from tqdm.auto import tqdm as _tqdm

    kwargs["disable"] = bool(kwargs.get("disable", False)) or disabled_by_environment()
    notebook_widget = _tqdm.__module__ == "tqdm.notebook"  # redraws in place, like a terminal
    stream = kwargs.get("file") or sys.stderr
    if "mininterval" not in kwargs and not notebook_widget and not _is_terminal(stream):
        kwargs["mininterval"] = LOG_INTERVAL
    return _tqdm(*args, **kwargs)
