"""One declaration per setting: a settings dataclass becomes the flags, the YAML keys and the
help, and a bad flag or key is refused in one line naming it (core/settings_schema.py)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.core.schema_checks import NON_EMPTY, at_least, each, one_of
from verifiable_grpo.core.settings_schema import (
    add_flags,
    flag_fields,
    from_flags,
    from_yaml,
    given_flags,
    option,
)


@dataclass(frozen=True)
class Toy:
    steps: int = option("updates", at_least(1), default=3)
    rate: float | None = option("learning rate (null: the lab's)", default=None)
    names: tuple[str, ...] = option("parts", NON_EMPTY, each(one_of("a", "b")), default=("a",))
    quiet: bool = option("print nothing", default=False)


@dataclass(frozen=True)
class Other:
    quiet: bool = option("print nothing", default=False)
    width: int = option("columns", at_least(1), default=80)


def parser_of(owners):
    parser = argparse.ArgumentParser()
    add_flags(parser, owners)
    return parser


def test_a_settings_class_round_trips_through_its_flags():
    parser = parser_of({"toy": Toy})
    assert from_flags(Toy, parser.parse_args([])) == Toy()
    given = ["--steps", "7", "--rate", "0.5", "--names", "b, a", "--quiet"]
    assert from_flags(Toy, parser.parse_args(given)) == Toy(7, 0.5, ("b", "a"), True)
    helps = {a.dest: a.help for a in parser._actions}
    assert helps["steps"] == "toy: updates (default 3)" and helps["quiet"] == "toy: print nothing"


def test_a_flag_two_owners_declare_alike_is_one_flag_naming_both():
    parser = parser_of({"toy": Toy, "other": Other})
    quiet = [a for a in parser._actions if a.dest == "quiet"]
    assert len(quiet) == 1 and quiet[0].help == "toy, other: print nothing"
    args = parser.parse_args(["--width", "3"])
    assert given_flags(args, {"toy": Toy, "other": Other}, Toy) == ["--width"]
    assert given_flags(args, {"toy": Toy, "other": Other}, Other) == []
    assert given_flags(args, {"toy": Toy, "other": Other}) == ["--width"]


def test_a_name_two_owners_declare_differently_is_refused():
    @dataclass(frozen=True)
    class Clash:
        steps: int = option("something else", default=3)

    with pytest.raises(ValueError, match="--steps is declared differently by toy and clash"):
        flag_fields({"toy": Toy, "clash": Clash})


@pytest.mark.parametrize(
    "given, said",
    [
        (["--steps", "0"], "--steps: must be >= 1, got '0'"),
        (["--steps", "three"], "--steps: must be an integer, got 'three'"),
        (["--rate", "inf"], "--rate: must be a finite number, got 'inf'"),
        (["--names", "c"], "--names: must be a list whose items are all one of a, b, got 'c'"),
        (["--names", ","], "--names: must be non-empty"),
        (["--steps", str(2**64)], "--steps: must be a 64-bit integer"),
    ],
)
def test_a_bad_flag_is_one_line_naming_it(given, said):
    with pytest.raises(ConfigError) as refused:
        from_flags(Toy, parser_of({"toy": Toy}).parse_args(given))
    assert len(refused.value.problems) == 1 and refused.value.problems[0].startswith(said)


def test_the_yaml_keys_are_the_fields():
    given, settings = from_yaml(Toy, {"steps": 5, "rate": 1}, "toy.yaml")
    assert given == {"steps": 5, "rate": 1}  # as the file says: what a record hashes
    assert settings == Toy(steps=5, rate=1.0)
    assert from_yaml(Toy, None, "toy.yaml") == ({}, Toy())
    with pytest.raises(ConfigError) as refused:
        from_yaml(Toy, {"stepz": 5}, "toy.yaml")
    assert refused.value.problems == ["toy.yaml: stepz: unknown key; did you mean steps?"]
    with pytest.raises(ConfigError, match=r"toy.yaml: steps: must be >= 1, got 0"):
        from_yaml(Toy, {"steps": 0}, "toy.yaml")
