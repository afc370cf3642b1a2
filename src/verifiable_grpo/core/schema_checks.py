"""The checks a schema field carries (type ranges, choices) and the `key` that declares a
field: shared by the profile schema (core/config_schema.py) and every settings class
(core/settings_schema.py: the Part III labs, the TRL run configuration), so every settings
file is refused with the same words.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verifiable_grpo.core.argument_types import MAX_THREADS  # noqa: F401  (re-exported)


@dataclass(frozen=True)
class Check:
    """A range or choice; `text` completes "must be ..."."""

    text: str
    ok: Callable[[Any], bool]


def _why(text: str, why: str) -> str:
    return f"{text} ({why})" if why else text


def at_least(low, why: str = "") -> Check:
    return Check(_why(f">= {low}", why), lambda v: v >= low)


def at_most(high, why: str) -> Check:
    """An upper limit, with the reason it is there."""
    return Check(_why(f"<= {high:,}", why), lambda v: v <= high)


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
    "a plain name of at most 100 characters (letters, digits, '.', '_', '-'; it names "
    "runs/<profile>, and a filesystem takes names up to 255 bytes)",
    lambda v: re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", v) is not None,
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


# Upper limits grounded in the machine: a value past one cannot run to its end, so it is
# refused in the first second instead of hanging a plan or dying of MemoryError minutes
# into a run (after the warm start trained). Each says why next to it.
MAX_ITERATIONS = 100_000
ITERATIONS_WHY = (
    "each iteration samples, scores and writes a rollout file, a second or more even on "
    "the tiny model: 100,000 is days of compute and as many files"
)
MAX_GROUP = 1024
GROUP_WHY = "a group is sampled, scored and held in memory at once; the seed uses 2 to 8"
MAX_ROLLOUT_ROWS = 65_536  # prompts x group per iteration: the rows one update holds
MAX_TOKENS = 32_768  # the longest context of the models this project loads (Qwen2.5)
TOKENS_WHY = "the longest context of the models this project loads"
MAX_DRAWS = 10_000
DRAWS_WHY = "sampled responses per problem, each generated and kept in the scores file"
MAX_UPDATES = 10_000
UPDATES_WHY = "each is a full forward and backward pass over the rollout"
MAX_WIDTH = 65_536
WIDTH_WHY = "a micro model built in memory; wider than any model this project loads"
MAX_NAME = 100

# The limits as checks, for the schemas' fields.
ROUNDS = at_most(MAX_ITERATIONS, ITERATIONS_WHY)
LONGEST = at_most(MAX_TOKENS, TOKENS_WHY)
WIDEST = at_most(MAX_WIDTH, WIDTH_WHY)
BIGGEST_GROUP = at_most(MAX_GROUP, GROUP_WHY)
MOST_PROMPTS = at_most(MAX_ROLLOUT_ROWS, GROUP_WHY)
MOST_UPDATES = at_most(MAX_UPDATES, UPDATES_WHY)
MOST_DRAWS = at_most(MAX_DRAWS, DRAWS_WHY)
