"""Labels out of reach while inference runs: an audit hook refuses any `open` under the
folders a `labels_out_of_reach` block names, and `assert_no_labels` refuses answer
material where inference reads or writes. evaluate.generate_policy uses both.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

_FORBIDDEN: list[str] = []
_HOOK_INSTALLED = False


def _audit_open(event: str, args) -> None:
    if event != "open" or not _FORBIDDEN:
        return
    target = args[0]
    if isinstance(target, int):
        return
    try:
        path = os.path.abspath(os.fsdecode(target))
    except (TypeError, ValueError):
        return
    for folder in _FORBIDDEN:
        if path == folder or path.startswith(folder + os.sep):
            raise PermissionError(
                f"inference tried to open {path}: labels are out of reach "
                "until every inference file is written"
            )


@contextlib.contextmanager
def labels_out_of_reach(*folders):
    """While active, any `open` under these folders raises PermissionError (sys.addaudithook;
    the hook stays installed but is inert outside this context)."""
    global _HOOK_INSTALLED
    if not _HOOK_INSTALLED:
        sys.addaudithook(_audit_open)
        _HOOK_INSTALLED = True
    added = [os.path.abspath(os.fspath(f)) for f in folders]
    _FORBIDDEN.extend(added)
    try:
        yield
    finally:
        for folder in added:
            _FORBIDDEN.remove(folder)


def assert_no_labels(folder) -> None:
    """ValueError if answer material sits where inference reads or writes."""
    folder = Path(folder)
    if not folder.exists():
        return
    found = [
        str(p)
        for p in folder.rglob("*")
        if p.name in ("gold.json", "labels") or "labels" in p.relative_to(folder).parts
    ]
    if found:
        raise ValueError(
            f"{folder} holds label material {sorted(found)[:5]}; inference must "
            "not see answers (move them out before generating)"
        )
