"""Checking a mapping of settings against a schema dataclass, and building the dataclass.

Each field of a schema class declares its type (the annotation), its range and meaning
(schema_checks.key); rules registered with `rule` relate several fields of one class.
`check_section` reports every problem at once as '<key path>: <problem>' (wrong type, out
of range, missing, unknown with a did-you-mean, a broken rule) and returns the values
coerced (YAML-1.1 float strings such as "2e-4" become floats); `build` turns checked
values into the frozen dataclasses. The profile's schema is core/config_schema.py.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from verifiable_grpo.core.files import shorten
from verifiable_grpo.core.schema_checks import INT64


@functools.cache
def field_hints(cls: type) -> dict:
    """A section's field annotations, resolved once per class (a profile is checked on every load, and
    resolving string annotations costs more than checking the values)."""
    return typing.get_type_hints(cls)


# A rule sees one section's values that passed their own checks and yields (key, problem);
# it runs only when every key it needs is valid, so one mistake is reported once.
RULES: dict[type, list[tuple[tuple[str, ...], Callable]]] = {}


def rule(cls: type, *needs: str):
    def register(function):
        RULES.setdefault(cls, []).append((needs, function))
        return function

    return register


_YAML11_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _describe(hint) -> str:
    """What a value of this annotation looks like, in words."""
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) and type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return f"{_describe(inner)} or null"
    if typing.get_origin(hint) is tuple:
        return f"a list of {_describe(args[0]).removeprefix('an ').removeprefix('a ')}s"
    return {
        int: "an integer",
        float: "a number",
        bool: "true or false",
        str: "a string",
        dict: "a mapping",
    }[hint]


def _coerce(hint, value) -> tuple[Any, bool]:
    """(value, whether it has the annotation's type); float strings become floats."""
    if isinstance(hint, types.UnionType):
        if value is None and type(None) in typing.get_args(hint):
            return None, True
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        return value, isinstance(value, list) and all(_coerce(item, v)[1] for v in value)
    if hint is float:
        # PyYAML follows YAML 1.1, where "2e-4" (no dot) is a string, not a number.
        if isinstance(value, str) and _YAML11_FLOAT.fullmatch(value.strip()):
            value = float(value)
        return value, type(value) is int or (type(value) is float and math.isfinite(value))
    if hint is int:  # bool is a subclass of int, but true is not a count
        return value, type(value) is int
    return value, type(value) is hint


def _show(value) -> str:
    """A value as an error quotes it: its repr cut short (a huge value, or one a YAML alias
    repeats, must not turn into a huge message)."""
    if value is None:
        return "null"
    return f"{shorten(repr(value))} ({type(value).__name__})"


def _range_problem(value, metadata) -> str | None:
    if type(value) is int and not INT64[0] <= value <= INT64[1]:
        return f"must be a 64-bit integer (|value| < 2**63), got {shorten(value)}"
    for check in metadata["checks"]:
        if not check.ok(value):
            return f"must be {check.text}, got {shorten(repr(value))}"
    return None


def _expected(hint, metadata) -> str:
    kind = "a section" if dataclasses.is_dataclass(hint) else _describe(hint)
    ranges = " and ".join(c.text for c in metadata["checks"])
    joint = ", " if ranges.startswith("one of") else " "
    return f"{metadata['meaning']}; {kind}{joint + ranges if ranges else ''}"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else str(name)


def check_section(cls, raw, path: str, section: str, problems: list[str]) -> Any:
    """A copy of `raw` with coerced values; appends '<key path>: <problem>' to problems."""
    if not isinstance(raw, dict):
        where = path or "the file"
        problems.append(f"{where}: must be a mapping of keys, got {_show(raw)}")
        return raw
    hints = field_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    out, valid, absent = dict(raw), set(), {}
    for f in dataclasses.fields(cls):
        hint, where = hints[f.name], _join(path, f.name)
        if f.name not in raw and "absent" in f.metadata:
            absent[f.name] = f.metadata["absent"]
            valid.add(f.name)
            continue
        if f.name not in raw:
            problems.append(f"{where}: missing ({_expected(hint, f.metadata)})")
            continue
        before = len(problems)
        if dataclasses.is_dataclass(hint):
            out[f.name] = check_section(hint, raw[f.name], where, f.name, problems)
        else:
            value, ok = _coerce(hint, raw[f.name])
            if not ok:
                problems.append(f"{where}: must be {_describe(hint)}, got {_show(raw[f.name])}")
            elif value is not None and (problem := _range_problem(value, f.metadata)):
                problems.append(f"{where}: {problem}")
            out[f.name] = value
        if len(problems) == before:
            valid.add(f.name)
    for name in raw:
        if name not in names:
            name = shorten(name, 80)
            close = difflib.get_close_matches(name, names, n=1)
            known = (
                f"did you mean {close[0]}?"
                if close
                else f"{path or 'the top level'} takes {', '.join(names)}"
            )
            problems.append(f"{_join(path, name)}: unknown key; {known}")
    seen = {**absent, **out}  # rules read an absent optional key as its stand-in value
    for needs, function in RULES.get(cls, []):
        if valid.issuperset(needs):
            problems += [f"{_join(path, k)}: {m}" for k, m in function(seen, section)]
    return out


def build(hint, value):
    """The frozen dataclass (or value) of checked values; an absent optional key reads as
    its stand-in value."""
    if dataclasses.is_dataclass(hint):
        nested = field_hints(hint)
        return hint(
            **{
                f.name: build(nested[f.name], value.get(f.name, f.metadata.get("absent")))
                for f in dataclasses.fields(hint)
            }
        )
    if typing.get_origin(hint) is tuple:
        return tuple(value)
    if hint is float:
        return float(value)
    return value
