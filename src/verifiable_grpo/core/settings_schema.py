"""One declaration per setting: a frozen settings dataclass is the command line's flags, the
YAML keys a settings file may hold and the help, all at once.

Each field is declared with `option` (its meaning, its checks and its default), the same
metadata the profile schema's `key` reads (core/schema_checks.py), so a settings file and a
flag are refused with the profile's words: one line naming the key or the flag, ConfigError
(the CLI exits 2), before any compute. `add_flags` turns settings classes into argparse
flags (a field two classes declare alike is one flag whose help names both owners);
`from_flags` and `from_yaml` give the checked settings object. The help of a flag is its
field's meaning; a settings file's refusals quote the same meaning.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import typing
from typing import Any

from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.core.files import shorten
from verifiable_grpo.core.schema_checks import INT64
from verifiable_grpo.core.schema_validation import build, check_section, field_hints


def option(meaning: str, *checks, default: Any) -> Any:
    """A settings field: its one-line meaning, the checks its value must pass, and the value
    it has when neither a flag nor a key gives one (a tuple, never a list: it is shared)."""
    metadata = {"meaning": meaning, "checks": checks, "absent": default}
    return dataclasses.field(default=default, metadata=metadata)


def flag(name: str) -> str:
    """A field's command-line flag: `no_row_init` is `--no-row-init`."""
    return "--" + name.replace("_", "-")


def _plain(hint):
    """The annotation without its `| None` (a flag cannot say null: it is left out)."""
    if isinstance(hint, types.UnionType):
        return next(a for a in typing.get_args(hint) if a is not type(None))
    return hint


def _declared(f: dataclasses.Field) -> tuple:
    """What a field says: two owners may share a flag only if they say the same."""
    return f.metadata["meaning"], [c.text for c in f.metadata["checks"]], f.default


def flag_fields(owners: dict[str, type]) -> dict[str, tuple[dataclasses.Field, Any, list[str]]]:
    """Field name -> (field, annotation, owners declaring it), over settings classes keyed by
    their owner's name; ValueError when two owners declare one name differently."""
    found: dict[str, tuple[dataclasses.Field, Any, list[str]]] = {}
    for owner, cls in owners.items():
        hints = field_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name in found and _declared(found[f.name][0]) != _declared(f):
                first = found[f.name][2][0]
                raise ValueError(f"{flag(f.name)} is declared differently by {first} and {owner}")
            found.setdefault(f.name, (f, hints[f.name], []))[2].append(owner)
    return found


def _shown(value) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def add_flags(parser, owners: dict[str, type]) -> None:
    """One flag per field of the settings classes: a true/false field is a switch, any other
    takes its text (checked by `from_flags`, so a bad value is one line naming the flag)."""
    for name, (f, hint, names) in flag_fields(owners).items():
        text = f"{', '.join(names)}: {f.metadata['meaning']}"
        if _plain(hint) is bool:
            parser.add_argument(flag(name), action="store_true", help=text)
            continue
        if f.default is not None:
            text += f" (default {_shown(f.default)})"
        parser.add_argument(flag(name), default=None, metavar=name.upper(), help=text)


def _parsed(hint, text: str):
    """A flag's text as the annotation's value; ValueError when it is not one."""
    hint = _plain(hint)
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_parsed(item, part.strip()) for part in text.split(",") if part.strip())
    if hint is int:
        return int(text)
    if hint is float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(text)
        return value
    return text


def _kind(hint) -> str:
    hint = _plain(hint)
    if typing.get_origin(hint) is tuple:
        return f"a comma-separated list of {_kind(typing.get_args(hint)[0]).split(' ', 1)[1]}s"
    return {int: "an integer", float: "a finite number"}.get(hint, "a string")


def _problem(f: dataclasses.Field, hint, text: str) -> tuple[Any, str | None]:
    """(value, None) for a good flag text, else (None, '--flag: must be ..., got ...')."""
    shown = shorten(repr(text), 80)
    try:
        value = _parsed(hint, text)
    except ValueError:
        return None, f"{flag(f.name)}: must be {_kind(hint)}, got {shown}"
    items = value if isinstance(value, tuple) else (value,)
    if any(type(v) is int and not INT64[0] <= v <= INT64[1] for v in items):
        return None, f"{flag(f.name)}: must be a 64-bit integer, got {shown}"
    for check in f.metadata["checks"]:
        if not check.ok(value):
            return None, f"{flag(f.name)}: must be {check.text}, got {shown}"
    return value, None


def from_flags(cls: type, namespace) -> Any:
    """The settings the command line gave (a flag left out keeps its field's default);
    ConfigError with one line per bad flag, naming it."""
    hints, values, problems = field_hints(cls), {}, []
    for f in dataclasses.fields(cls):
        text = getattr(namespace, f.name, None)
        if text is None or text is False:
            continue
        if _plain(hints[f.name]) is bool:
            values[f.name] = True
            continue
        value, problem = _problem(f, hints[f.name], text)
        if problem:
            problems.append(problem)
        values[f.name] = value
    if problems:
        raise ConfigError(problems)
    return cls(**values)


def given_flags(namespace, owners: dict[str, type], taken: type | None = None) -> list[str]:
    """The owners' flags set on this command line that `taken` (the settings class this
    command runs on; None: one that takes no flags) does not declare."""
    own = {f.name for f in dataclasses.fields(taken)} if taken else set()
    return [
        flag(name)
        for name in flag_fields(owners)
        if name not in own and getattr(namespace, name, None) not in (None, False)
    ]


def from_yaml(cls: type, raw: Any, source: str) -> tuple[dict, Any]:
    """(the settings as the file gave them, the settings object with every default): checked
    with the profile's conventions, '<source>: <key>: <problem>' with a did-you-mean for an
    unknown key, every problem at once (ConfigError). An empty file gives no settings."""
    problems: list[str] = []
    given = check_section(cls, copy.deepcopy({} if raw is None else raw), "", "", problems)
    if problems:
        raise ConfigError([f"{source}: {p}" for p in problems])
    return given, build(cls, given)
