"""Progress bars that honour TQDM_DISABLE at call time.

tqdm reads TQDM_* variables when it is imported, and its notebook bar (tqdm.auto inside
Jupyter) passes its own `disable` default, so setting the variable later has no effect.
Executed notebooks must not print bars (nbval compares their streams), hence this wrapper.
"""
from __future__ import annotations

import os


def disabled_by_environment() -> bool:
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")


def tqdm(*args, **kwargs):
    from tqdm.auto import tqdm as _tqdm

    kwargs["disable"] = bool(kwargs.get("disable", False)) or disabled_by_environment()
    return _tqdm(*args, **kwargs)
