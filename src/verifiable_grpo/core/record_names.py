"""Current key names for records written before the zero-variance fraction had one name.

Part II's study and Part I's sweep were recorded when their code called the zero-variance
fraction `zvf`; the code now says `zero_variance_fraction` everywhere. Recorded files are
evidence and are never rewritten, so every reader of a record that may hold the old keys
passes it through `with_current_names` once, and the rest of the code knows one name.
"""

from __future__ import annotations

from typing import Any

# old key -> current key, wherever the key appears in a record
RENAMED_KEYS = {
    "zvf": "zero_variance_fraction",
    "zvf_drawn": "zero_variance_fraction_drawn",
    "mean_zvf": "mean_zero_variance_fraction",
    "mean_zvf_drawn": "mean_zero_variance_fraction_drawn",
    "zvf_logged": "zero_variance_fraction_logged",
    "zvf_iid": "zero_variance_fraction_iid",
}


def with_current_names(record: Any) -> Any:
    """A copy of `record` (JSON: dicts, lists, scalars) with every old key renamed.

    A dict that holds both an old key and its current name is refused: one of the two
    values would be lost silently."""
    if isinstance(record, list):
        return [with_current_names(item) for item in record]
    if not isinstance(record, dict):
        return record
    renamed = {}
    for key, value in record.items():
        new = RENAMED_KEYS.get(key, key)
        if new != key and new in record:
            raise ValueError(f"record holds both {key!r} and {new!r}: which one is meant?")
        renamed[new] = with_current_names(value)
    return renamed
