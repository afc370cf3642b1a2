"""The family study's backends: one table (part2/backends.BACKENDS) that the CLI's
`--backend` choices and the dispatch of `family run|study` both read, and a module per
backend that defines the interface the table promises."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from verifiable_grpo import cli
from verifiable_grpo.part2 import backends, commands


def _defined_functions(module: str) -> set[str]:
    """Top-level functions of a module, read without importing it (TRL may be absent)."""
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("name", sorted(backends.BACKENDS))
def test_every_backend_module_defines_the_interface(name):
    missing = set(backends.INTERFACE) - _defined_functions(backends.BACKENDS[name])
    assert not missing, f"backend {name}: {backends.BACKENDS[name]} lacks {sorted(missing)}"


def _choices(argv: list[str]) -> tuple[str, ...]:
    parser = cli.build_parser()
    family = next(a for a in parser._subparsers._group_actions if "family" in a.choices)
    sub = family.choices["family"]._subparsers._group_actions[0].choices[argv[0]]
    return next(a for a in sub._actions if a.dest == "backend").choices


@pytest.mark.parametrize("command", ["run", "study"])
def test_the_cli_offers_exactly_the_registered_backends(command):
    assert tuple(_choices([command])) == backends.names()
    assert backends.names()[0] == backends.DEFAULT == "ours"


def test_a_registered_backend_receives_the_command(monkeypatch):
    calls = []

    class Fake:
        @staticmethod
        def run(args):
            calls.append(("run", args.arm))
            return 0

        @staticmethod
        def run_study(args, runs):
            calls.append(("study", runs))
            return 0

        @staticmethod
        def runs_of(args):
            return [("on_policy", "grpo", 11)]

    monkeypatch.setitem(backends.BACKENDS, "fake", "unused")
    monkeypatch.setattr(backends, "backend_module", lambda name: Fake)
    args = cli.build_parser().parse_args(
        ["family", "run", "--backend", "fake", "--arm", "grpo", "--seed", "11"]
    )
    assert commands._run(args) == 0
    args = cli.build_parser().parse_args(["family", "study", "--backend", "fake"])
    assert commands._study(args) == 0
    assert calls == [("run", "grpo"), ("study", [("on_policy", "grpo", 11)])]
