"""The checks a schema field carries (type ranges, choices) and the `key` that declares a
field: shared by the profile schema (core/config_schema.py) and the Part III labs' settings
(part3/lab_settings.py), so every settings file is refused with the same words.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Check:
    """A range or choice; `text` completes "must be ..."."""

    text: str
    ok: Callable[[Any], bool]


def _why(text: str, why: str) -> str:
    return f"{text} ({why})" if why else text


def at_least(low, why: str = "") -> Check:
    return Check(_why(f">= {low}", why), lambda v: v >= low)


def above(low) -> Check:
    return Check(f"> {low}", lambda v: v > low)


def span(low, high) -> Check:
    """Integers low..high, both included."""
    return Check(f"in {low}..{high}", lambda v: low <= v <= high)


def closed(low, high) -> Check:
    return Check(f"in [{low}, {high}]", lambda v: low <= v <= high)


def open_between(low, high) -> Check:
    return Check(f"in ({low}, {high})", lambda v: low < v < high)


def one_of(*choices) -> Check:
    return Check("one of " + ", ".join(map(str, choices)), lambda v: v in choices)


def exactly(value, why: str) -> Check:
    return Check(f"{value} ({why})", lambda v: v == value)


FULL_VOCABULARY = "sampling is temperature 1 over the full vocabulary: top_k 0, top_p 1.0"
NON_EMPTY = Check("non-empty", lambda v: len(v) > 0)
DISTINCT = Check("without repeats", lambda v: len(set(v)) == len(v))
FOLDER_NAME = Check(
    "a plain name (letters, digits, '.', '_', '-'; it names runs/<profile>)",
    lambda v: re.fullmatch(r"[A-Za-z0-9_.-]+", v) is not None,
)


def each(check: Check) -> Check:
    return Check(f"a list whose items are all {check.text}", lambda v: all(check.ok(x) for x in v))


# Why the lower bounds that are not obvious.
RESUMED_EPOCH = "the resume check stops after an epoch and continues"
RESUMED_ITERATION = "the resume check stops after an iteration and continues"
A_GROUP = "a group of one response has no baseline to compare with"


_REQUIRED = object()


def key(meaning: str, *checks: Check, absent: Any = _REQUIRED) -> Any:
    """A field: its one-line meaning and the checks its value must pass.

    `absent` makes the key optional: a profile may leave it out, and then reads as if it said
    `absent`. The value is not written into the profile, so adding an optional key leaves the
    config hash of every profile that does not use it unchanged."""
    metadata = {"meaning": meaning, "checks": checks}
    if absent is not _REQUIRED:
        metadata["absent"] = absent
    return dataclasses.field(metadata=metadata)


# Every integer setting must fit a 64-bit integer (torch and numpy hold them so; a bigger
# one overflows minutes into a run, in a worker); a seed also fits numpy's 32-bit range.
INT64 = (-(2**63), 2**63 - 1)
SEED = Check("in 0..4294967295 (numpy's seed range)", lambda v: 0 <= v <= 2**32 - 1)
