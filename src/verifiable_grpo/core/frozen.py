"""Read-only dicts and lists: how a loaded profile holds the mapping it was read from.

A profile is read by every stage of a run and hashed into its records, so nothing may edit
it after loading: a setting that differs is a new profile (`Profile.replaced`), checked and
hashed again. These containers are plain `dict` and `list` subclasses, so JSON records,
`==` against plain values and `cfg["grpo"]["kl_coefficient"]` reads in a notebook keep
working; any edit raises TypeError naming the way to derive a new profile instead.
"""

from __future__ import annotations

from typing import Any

import yaml

READ_ONLY = "a loaded profile is read-only; derive a new one with profile.replaced(section={...})"


def _refuse(self, *args, **kwargs):
    raise TypeError(READ_ONLY)


class FrozenDict(dict):
    """A dict whose every edit raises TypeError (reads, JSON and pickling as a dict)."""

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (type(self), (dict(self),))


class FrozenList(list):
    """A list whose every edit raises TypeError."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self):
        return (type(self), (list(self),))


# YAML writes them as the mappings and sequences they are (a profile, or a section of one,
# dumped to a settings file), with yaml.safe_dump as with yaml.dump.
for _dumper in (yaml.SafeDumper, yaml.Dumper):
    _dumper.add_multi_representer(FrozenDict, yaml.SafeDumper.represent_dict)
    _dumper.add_multi_representer(FrozenList, yaml.SafeDumper.represent_list)


def frozen(value: Any) -> Any:
    """A deep read-only copy: dicts become FrozenDict, lists and tuples FrozenList."""
    if isinstance(value, dict):
        return FrozenDict({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList(frozen(v) for v in value)
    return value


def thawed(value: Any) -> Any:
    """A deep plain copy (dicts and lists a caller may edit, e.g. to write YAML)."""
    if isinstance(value, dict):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thawed(v) for v in value]
    return value
